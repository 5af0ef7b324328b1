package supervise_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

func fullSpend(tokens int64) ledger.Spend {
	return ledger.Spend{Tokens: i64(tokens), Iterations: i64(1), MicroUSD: i64(tokens * 10)}
}

// Behaviour 44: a completed key replays with zero new spend; a down prior
// is retried with priorWorkerId.
func TestKeyedSpawnReplaysAndRetries(t *testing.T) {
	f := newFixture(t, rootBudget(), supervise.ScopeOptions{PerWorker: worker})
	req := supervise.SpawnRequest{Profile: "p", Key: "k1", Task: "t"}
	first := f.spawn(t, req)
	if first.Assignment != "key:k1" || first.Resumed != supervise.ResumedNone {
		t.Fatalf("first %+v", first)
	}
	if _, err := f.scope.Settle(first.Node, supervise.Result{State: supervise.StateDone, Spent: fullSpend(40)}); err != nil {
		t.Fatal(err)
	}
	before := f.pool.Readout()
	replay := f.spawn(t, req)
	if replay.Resumed != supervise.ResumedCompleted || replay.Node != first.Node || replay.Settlement == nil ||
		replay.Settlement.State != supervise.StateDone || *replay.Settlement.Spent.Tokens != 40 {
		t.Errorf("replay %+v", replay)
	}
	if after := f.pool.Readout(); !reflect.DeepEqual(before, after) || len(f.scope.Nodes()) != 1 {
		t.Errorf("a replay spent or spawned: %+v -> %+v", before, after)
	}

	down := f.spawn(t, supervise.SpawnRequest{Profile: "p", Key: "k2"})
	if _, err := f.scope.Settle(down.Node, supervise.Result{State: supervise.StateFailed, Spent: fullSpend(5), Reason: "crashed"}); err != nil {
		t.Fatal(err)
	}
	retry := f.spawn(t, supervise.SpawnRequest{Profile: "p", Key: "k2"})
	if retry.Resumed != supervise.ResumedRetried || retry.PriorWorker != down.Node || retry.PriorReason != "crashed" || retry.Node == down.Node {
		t.Errorf("retry %+v", retry)
	}
}

// Behaviour 45: with maxLiveWorkers 2 the third spawn is refused
// max-live-workers before any reservation, even when the budget is also
// exhausted, and every reply carries freeSlots.
func TestMaxLiveWorkersBeforeBudgetBehaviour45(t *testing.T) {
	f := newFixture(t, ledger.Budget{Tokens: i64(200), Iterations: i64(10), MicroUSD: i64(1_000_000)},
		supervise.ScopeOptions{PerWorker: worker, MaxLiveWorkers: 2})
	for i, wantFree := range []int{1, 0} {
		r := f.spawn(t, supervise.SpawnRequest{Profile: "p"})
		if r.Live != i+1 || r.FreeSlots == nil || *r.FreeSlots != wantFree {
			t.Errorf("reply %d: live %d free %v", i, r.Live, r.FreeSlots)
		}
	}
	_, err := f.scope.Spawn(supervise.SpawnRequest{Profile: "p"}) // tokens are exhausted too
	var ref *supervise.Refusal
	if !errors.As(err, &ref) || ref.Code != supervise.CodeMaxLiveWorkers || ref.FreeSlots == nil || *ref.FreeSlots != 0 {
		t.Fatalf("third spawn: %v", err)
	}
	if _, err := f.scope.Settle("root:s1", supervise.Result{State: supervise.StateDone, Spent: fullSpend(100)}); err != nil {
		t.Fatal(err)
	}
	_, err = f.scope.Spawn(supervise.SpawnRequest{Profile: "p"})
	if code, _ := supervise.CodeOf(err); code != supervise.CodeBudgetExhausted {
		t.Errorf("with a free slot the budget decides: %v", err)
	}
	f2 := newFixture(t, rootBudget(), supervise.ScopeOptions{PerWorker: worker})
	if r := f2.spawn(t, supervise.SpawnRequest{Profile: "p"}); r.FreeSlots != nil || r.Live != 1 {
		t.Errorf("uncapped reply: %+v", r)
	}
}

// RTP-02, RG-04: a spawn reserves its merged ceiling; settling commits the
// observed spend and returns the rest to free.
func TestSettleCommitsSpendAndFreesTheRest(t *testing.T) {
	f := newFixture(t, ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000_000), Resources: map[string]int64{"gpu": 50}},
		supervise.ScopeOptions{PerWorker: ledger.Budget{Tokens: i64(300), Iterations: i64(2), Resources: map[string]int64{"gpu": 10}}})
	r := f.spawn(t, supervise.SpawnRequest{Profile: "p", Budget: ledger.Budget{MicroUSD: i64(5000), Resources: map[string]int64{"gpu": 20}}})
	if *r.Reserved.Tokens != 300 || *r.Reserved.Iterations != 2 || *r.Reserved.MicroUSD != 5000 || r.Reserved.Resources["gpu"] != 20 {
		t.Fatalf("merged reservation %+v", r.Reserved)
	}
	ch := f.pool.Readout().Channels
	if ch[ledger.ChannelTokens].Reserved != 300 || ch[ledger.ChannelUSD].Reserved != 5000 || ch["resource:gpu"].Reserved != 20 {
		t.Errorf("reserved %+v", ch)
	}
	spent := ledger.Spend{Tokens: i64(120), Iterations: i64(1), MicroUSD: i64(2000), Resources: map[string]*int64{"gpu": i64(7)}}
	st, err := f.scope.Settle(r.Node, supervise.Result{State: supervise.StateDone, Spent: spent})
	if err != nil || st.Order != 1 || st.Seq != 1 {
		t.Fatalf("Settle = %+v, %v", st, err)
	}
	ch = f.pool.Readout().Channels
	for name, want := range map[string]ledger.Balance{
		ledger.ChannelTokens:     {Total: 1000, Free: 880, Committed: 120, Capped: true, Known: true},
		ledger.ChannelIterations: {Total: 10, Free: 9, Committed: 1, Capped: true, Known: true},
		ledger.ChannelUSD:        {Total: 1_000_000, Free: 998_000, Committed: 2000, Capped: true, Known: true},
		"resource:gpu":           {Total: 50, Free: 43, Committed: 7, Capped: true, Known: true},
	} {
		if ch[name] != want {
			t.Errorf("%s = %+v, want %+v", name, ch[name], want)
		}
	}
	tot := f.scope.Totals()
	if tot.Spent.Tokens != 120 || tot.Spent.MicroUSD != 2000 || tot.Spent.Resources["gpu"] != 7 || len(tot.Gaps) != 0 ||
		!tot.Spent.TokensKnown || !tot.Spent.USDKnown {
		t.Errorf("totals %+v", tot)
	}
	if live, _ := f.scope.Live(); live != 0 {
		t.Errorf("live %d after settle", live)
	}
}

// Behaviour 43 and accounting rule 10: spendGaps names every
// never-settled node (charged at its ceiling on all channels) and every
// unreported channel; known flags are false exactly for named channels.
func TestSpendGapsBehaviour43(t *testing.T) {
	f := newFixture(t, rootBudget(), supervise.ScopeOptions{PerWorker: worker})
	full := f.spawn(t, supervise.SpawnRequest{Profile: "p", Label: "full"}).Node
	unrep := f.spawn(t, supervise.SpawnRequest{Profile: "p", Label: "unreported"}).Node
	never := f.spawn(t, supervise.SpawnRequest{Profile: "p", Label: "never"}).Node
	if _, err := f.scope.Settle(full, supervise.Result{State: supervise.StateDone, Spent: fullSpend(10)}); err != nil {
		t.Fatal(err)
	}
	if got := f.scope.Totals(); len(got.Gaps) != 2 || !reflectGap(got.Gaps[1], never, supervise.GapNeverSettled) {
		t.Errorf("while live: %+v", got.Gaps)
	}
	if _, err := f.scope.Settle(unrep, supervise.Result{State: supervise.StateDone, Spent: ledger.Spend{Iterations: i64(1), MicroUSD: i64(50)}}); err != nil {
		t.Fatal(err)
	}
	tot := f.scope.Close()
	want := []supervise.SpendGap{
		{ID: unrep, Label: "unreported", Kind: supervise.GapUnreported, Channels: []string{"tokens"}},
		{ID: never, Label: "never", Kind: supervise.GapNeverSettled, Channels: []string{"tokens", "iterations", "usd"}},
	}
	if !reflect.DeepEqual(tot.Gaps, want) {
		t.Errorf("gaps %+v\nwant %+v", tot.Gaps, want)
	}
	// full 10 + unreported charged 100 + never-settled charged 100.
	if tot.Spent.Tokens != 210 || tot.Spent.TokensKnown || tot.Spent.USDKnown || tot.Spent.MicroUSD != 100+50+10_000 {
		t.Errorf("spent %+v", tot.Spent)
	}
	r := f.pool.Readout()
	if r.OpenTickets != 0 || r.Channels[ledger.ChannelTokens].Committed != 210 {
		t.Errorf("close must charge never-settled nodes at their ceiling: %+v", r)
	}
	if info, _ := f.scope.Node(never); !info.NeverSettled {
		t.Errorf("node %+v", info)
	}
	if _, err := f.scope.Settle(never, supervise.Result{State: supervise.StateDone}); !errors.Is(err, supervise.ErrScopeClosed) {
		t.Errorf("settle after close: %v", err)
	}
}

func reflectGap(g supervise.SpendGap, id supervise.NodeID, kind supervise.GapKind) bool {
	return g.ID == id && g.Kind == kind
}

// Two attempts of one keyed assignment (the first went down, the second
// is its retry) are distinct workers under the same assignment id
// key:<k> (the reference's "gives two attempts of one keyed assignment
// distinct worker and event identities").
func TestRetriedKeyKeepsItsAssignment(t *testing.T) {
	f := newFixture(t, rootBudget(), supervise.ScopeOptions{PerWorker: worker})
	first := f.spawn(t, supervise.SpawnRequest{Profile: "p", Key: "same", Task: "go"})
	if _, err := f.scope.Settle(first.Node, supervise.Result{State: supervise.StateFailed, Spent: fullSpend(5), Reason: "first attempt failed"}); err != nil {
		t.Fatal(err)
	}
	second := f.spawn(t, supervise.SpawnRequest{Profile: "p", Key: "same", Task: "go"})
	if first.Assignment != "key:same" || second.Assignment != "key:same" || second.Node == first.Node || second.Resumed != supervise.ResumedRetried {
		t.Errorf("attempts %+v and %+v: want two workers under assignment key:same, the second retried", first, second)
	}
}
