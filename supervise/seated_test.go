package supervise_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
	"github.com/google/go-cmp/cmp"
)

// seatedWriter continues one writer from account team-a to team-b.
const seatedWriter = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}}]}`

// RG-07, RG-08, RG-11 (PRF-11) in a supervised tree: a worker whose
// profile has seats runs its seat chain through the executor's account
// manager. Its first stage is refused for quota; the worker goes on at
// the next stage as the same logical node — one spawn, one node id, one
// settlement, delivered on the second stage's output — and its spend is
// both stages': exact when the refusal came before anything ran (at
// create), charged at the worker's ceiling and named unreported when it
// broke a turn off part way (what that turn spent is only a floor).
func TestSeatedWorkerKeepsItsNodeAcrossAQuotaRefusal(t *testing.T) {
	const second = `{"match":"write alpha","servedModel":"scripted/second","steps":[{"text":"alpha: DONE"},{"usage":{"inputTokens":6,"outputTokens":3,"cost":0.002},"mode":"delta"}]}`
	tests := []struct {
		name   string
		script string
		// known: the worker's spend is exact, 9 tokens and 2,000 µ$.
		known bool
	}{
		{name: "refused at create", known: true,
			script: `{"accounts":{"team-a":{"exhausted":true},"team-b":{}},"turns":[` + second + `]}`},
		{name: "refused mid-turn",
			script: `{"accounts":{"team-a":{},"team-b":{}},"turns":[
 {"match":"write alpha","servedModel":"scripted/first","steps":[{"text":"a draft"},{"usage":{"inputTokens":4,"outputTokens":2,"cost":0.001},"mode":"delta"}],"end":"quota","error":"the five-hour window is used up"},` + second + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { testSeatedWorker(t, tt.script, tt.known) })
	}
}

func testSeatedWorker(t *testing.T, script string, known bool) {
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	p := scripted.New(&s, scripted.Options{})
	st := newStore(t)
	var asked []int
	exec := &supervise.KernelExecutor{Store: st, Accounts: kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		asked = append(asked, k)
		return p, nil
	})}
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}), managerUsage(10, 5, 0.0001)),
		turn(call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("alpha delivered"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, exec, manager)
	o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, seatedWriter)}
	res, err := supervise.Supervise(t.Context(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Node != "run1:s1" || res.Winner.Text != "alpha: DONE" {
		t.Fatalf("status %s reason %s winner %+v; want run1:s1 delivering the second stage's note", res.Status, res.Reason, res.Winner)
	}
	if len(res.Tree) != 1 {
		t.Fatalf("tree %+v; want the one node the quota refusal did not multiply", res.Tree)
	}
	n := res.Tree[0]
	switch spent := n.Settlement.Spent; {
	case known && (spent.Tokens == nil || *spent.Tokens != 9 || spent.MicroUSD == nil || *spent.MicroUSD != 2000 || !res.Spent.TokensKnown || !res.Spent.USDKnown || len(res.SpendGaps) != 0):
		t.Errorf("the worker's spend %+v, run %+v, gaps %v; want 9 tokens and 2000 µ$, known", spent, res.Spent, res.SpendGaps)
	case !known && (spent.Tokens != nil || spent.MicroUSD != nil || res.Spent.TokensKnown || res.Spent.USDKnown || len(res.SpendGaps) != 1 || res.SpendGaps[0].ID != "run1:s1"):
		t.Errorf("the worker's spend %+v, run %+v, gaps %v; want tokens and dollars unknown, the node named unreported", spent, res.Spent, res.SpendGaps)
	}
	if len(asked) != 2 || asked[0] != 0 || asked[1] != 1 {
		t.Errorf("stages resolved %v; want 0 then 1", asked)
	}
	// The store holds one seated run naming both stages.
	var seated []*kernel.RunRecord
	runs, err := st.ListRuns(t.Context(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Kind == kernel.KindSeated {
			rec, err := kernel.ReadRun(t.Context(), st, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			seated = append(seated, rec)
		}
	}
	if len(seated) != 1 || seated[0].Status != store.StatusCompleted || len(seated[0].Seated.Stages) != 2 ||
		seated[0].Seated.Stages[0].Outcome != kernel.StageQuotaRefused || seated[0].Seated.Stages[1].Outcome != kernel.StageCompleted {
		t.Fatalf("seated runs %+v; want one, completed, its first stage quota-refused", seated)
	}
	// RG-11: the seated run, and each stage it tried, is the worker's
	// logical node.
	if got := seated[0].Seated.Node; got != "run1:s1" {
		t.Errorf("the seated run is node %q; want the worker's, run1:s1", got)
	}
	for _, at := range seated[0].Seated.Stages {
		if at.Node != "run1:s1" {
			t.Errorf("stage %d ran as node %q; want run1:s1", at.Stage, at.Node)
		}
	}
}

// RG-11 across a crash: a supervisor killed after its seated worker's
// execution was bound — the seat chain went on to complete on its
// second stage — is resumed. The worker is recovered from its seated
// run (never executed again): done, delivered on the last stage's note,
// its spend both stages'.
func TestSeatedWorkerRecoveredAfterCrash(t *testing.T) {
	var s scripted.Script
	if err := json.Unmarshal([]byte(`{"accounts":{"team-a":{"exhausted":true},"team-b":{}},"turns":[
 {"match":"write alpha","servedModel":"scripted/second","steps":[{"text":"alpha: DONE"},{"usage":{"inputTokens":6,"outputTokens":3,"cost":0.002},"mode":"delta"}]}]}`), &s); err != nil {
		t.Fatal(err)
	}
	p := scripted.New(&s, scripted.Options{})
	st := newStore(t)
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
	dir := t.TempDir()
	first := &recoveringExecutor{KernelExecutor: &supervise.KernelExecutor{Store: st, Accounts: accounts}}
	var ref keyedOutcome
	o := baseOptions(t, first, nil)
	o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, seatedWriter)}
	o.RunDir, o.Brain = dir, keyedBrain(t, &ref)
	want, err := supervise.Supervise(t.Context(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("the uninterrupted run: %v %+v", err, want)
	}
	journaltest.KeepThrough(t, dir, supervise.KindExecutionBound, 1)

	second := &recoveringExecutor{KernelExecutor: &supervise.KernelExecutor{Store: st, Accounts: accounts}}
	var got keyedOutcome
	o = baseOptions(t, second, nil)
	o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, seatedWriter)}
	o.RunDir, o.Resume, o.Brain = dir, true, keyedBrain(t, &got)
	res, err := supervise.Supervise(t.Context(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := second.executed.Load(); n != 0 {
		t.Errorf("the resumed run executed %d workers, want 0", n)
	}
	if res.Status != supervise.StatusWinner || res.Winner.OutRef != want.Winner.OutRef || res.Winner.Text != "alpha: DONE" {
		t.Fatalf("resumed result %+v, want the winner %+v", res.Winner, want.Winner)
	}
	if diff := cmp.Diff(want.Breakdown.ChildWork, res.Breakdown.ChildWork); diff != "" || len(res.SpendGaps) != 0 {
		t.Errorf("child spend (-uninterrupted +recovered):\n%s\ngaps %v", diff, res.SpendGaps)
	}
}
