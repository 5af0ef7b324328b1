package supervise_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

var allStates = []supervise.State{supervise.StatePending, supervise.StateAcquiring, supervise.StateRunning,
	supervise.StateWaiting, supervise.StateDone, supervise.StateFailed, supervise.StateCancelled}

// TestLifecycleTransitions: §3.6 "Node lifecycle" — every pair of states,
// legal or not; terminal states never move.
func TestLifecycleTransitions(t *testing.T) {
	legal := map[[2]supervise.State]bool{}
	for _, p := range [][2]supervise.State{
		{supervise.StatePending, supervise.StateAcquiring}, {supervise.StatePending, supervise.StateRunning},
		{supervise.StatePending, supervise.StateWaiting}, {supervise.StatePending, supervise.StateDone},
		{supervise.StatePending, supervise.StateFailed}, {supervise.StatePending, supervise.StateCancelled},
		{supervise.StateAcquiring, supervise.StateRunning}, {supervise.StateAcquiring, supervise.StateFailed},
		{supervise.StateAcquiring, supervise.StateCancelled},
		{supervise.StateRunning, supervise.StateWaiting}, {supervise.StateRunning, supervise.StateDone},
		{supervise.StateRunning, supervise.StateFailed}, {supervise.StateRunning, supervise.StateCancelled},
		{supervise.StateWaiting, supervise.StateRunning}, {supervise.StateWaiting, supervise.StateDone},
		{supervise.StateWaiting, supervise.StateFailed}, {supervise.StateWaiting, supervise.StateCancelled},
	} {
		legal[p] = true
	}
	for _, from := range allStates {
		for _, to := range allStates {
			if got := from.CanTransition(to); got != legal[[2]supervise.State{from, to}] {
				t.Errorf("%s -> %s: CanTransition = %v", from, to, got)
			}
		}
		if from.Terminal() == from.Live() {
			t.Errorf("%s: terminal %v, live %v", from, from.Terminal(), from.Live())
		}
	}
}

// TestScopeEnforcesTransitions: Transition reaches only non-terminal
// states by legal moves; Settle reaches terminal ones once.
func TestScopeEnforcesTransitions(t *testing.T) {
	f := newFixture(t, rootBudget(), supervise.ScopeOptions{PerWorker: worker})
	n := f.spawn(t, supervise.SpawnRequest{Profile: "p"}).Node
	steps := []struct {
		to      supervise.State
		settle  bool
		wantErr bool
	}{
		{supervise.StateAcquiring, false, false},
		{supervise.StateWaiting, false, true}, // acquiring cannot wait
		{supervise.StateRunning, false, false},
		{supervise.StateWaiting, false, false},
		{supervise.StateRunning, false, false},
		{supervise.StateDone, false, true}, // terminal only through Settle
		{supervise.StateDone, true, false},
		{supervise.StateFailed, true, true}, // settles once
		{supervise.StateRunning, false, true},
	}
	for i, st := range steps {
		var err error
		if st.settle {
			_, err = f.scope.Settle(n, supervise.Result{State: st.to, Spent: ledger.Spend{Tokens: i64(1), Iterations: i64(1), MicroUSD: i64(1)}})
		} else {
			err = f.scope.Transition(n, st.to)
		}
		var te *supervise.TransitionError
		if st.wantErr != errors.As(err, &te) {
			t.Fatalf("step %d -> %s: err = %v", i, st.to, err)
		}
	}
	if info, _ := f.scope.Node(n); info.State != supervise.StateDone {
		t.Errorf("final state %s", info.State)
	}
	if err := f.scope.Transition("root:s42", supervise.StateRunning); !errors.Is(err, supervise.ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
}

// TestNodeIDsAreDeterministic: §3.6 ids are "<parent>:s<seq>" in
// admission order; refusals consume no sequence number; two scopes fed
// the same requests name their nodes identically.
func TestNodeIDsAreDeterministic(t *testing.T) {
	run := func() []supervise.NodeID {
		f := newFixture(t, rootBudget(), supervise.ScopeOptions{RootID: "run-7", PerWorker: worker, MaxDepth: 2})
		var ids []supervise.NodeID
		a := f.spawn(t, supervise.SpawnRequest{Profile: "p"}).Node
		b := f.spawn(t, supervise.SpawnRequest{Profile: "p"}).Node
		if _, err := f.scope.Spawn(supervise.SpawnRequest{Profile: ""}); err == nil {
			t.Fatal("a spawn without a profile was admitted")
		}
		c := f.spawn(t, supervise.SpawnRequest{Parent: a, Profile: "p"}).Node
		d := f.spawn(t, supervise.SpawnRequest{Parent: b, Profile: "p"}).Node
		ids = append(ids, a, b, c, d)
		for _, n := range f.scope.Nodes() {
			if n.ID != supervise.ChildID(n.Parent, n.Seq) {
				t.Errorf("node %s: parent %s seq %d", n.ID, n.Parent, n.Seq)
			}
		}
		return ids
	}
	want := []supervise.NodeID{"run-7:s1", "run-7:s2", "run-7:s1:s3", "run-7:s2:s4"}
	first, second := run(), run()
	if !slices.Equal(first, want) || !slices.Equal(second, want) {
		t.Errorf("ids %v then %v, want %v", first, second, want)
	}
	for _, tc := range []struct {
		id     supervise.NodeID
		parent supervise.NodeID
		ok     bool
	}{
		{"run-7:s1:s3", "run-7:s1", true},
		{"run-7:s1", "run-7", true},
		{"run-7", "", false},
		{"a:sx", "", false},
	} {
		if p, ok := tc.id.Parent(); p != tc.parent || ok != tc.ok {
			t.Errorf("%s.Parent() = %q, %v", tc.id, p, ok)
		}
	}
}
