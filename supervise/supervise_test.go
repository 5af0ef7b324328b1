package supervise_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

func mustProfile(t *testing.T, doc string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// managerProfile declares the given coordination verbs.
func managerProfile(t *testing.T, verbs ...string) *profile.Profile {
	t.Helper()
	tools := map[string]bool{}
	for _, v := range verbs {
		tools[supervise.ToolPrefix+v] = true
	}
	doc, _ := json.Marshal(map[string]any{"name": "manager", "harness": "cli-base", "model": map[string]any{"default": "scripted/manager"},
		"prompt": map[string]any{"systemPrompt": "You manage workers. Use spawn_worker, then await_event."}, "tools": tools})
	return mustProfile(t, string(doc))
}

const writerProfile = `{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`

// workerScript answers "alpha" tasks with a passing note and "beta"
// tasks with a failing one, each with exact usage and cost.
const workerScript = `{"turns": [
  {"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"}, {"usage": {"inputTokens": 100, "outputTokens": 20, "cost": 0.002}, "mode": "delta"}]},
  {"match": "beta", "repeat": true, "steps": [{"text": "beta: half"}, {"usage": {"inputTokens": 50, "outputTokens": 10, "cost": 0.001}, "mode": "delta"}]},
  {"match": "slow", "repeat": true, "steps": [{"text": "slow: DONE"}, {"usage": {"inputTokens": 1, "outputTokens": 1, "cost": 0.000001}, "mode": "delta"}]}
]}`

func workerProvider(t *testing.T) contract.Provider {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &s); err != nil {
		t.Fatal(err)
	}
	return scripted.New(&s, scripted.Options{})
}

// countingExecutor counts executions per task word around a real
// kernel executor on the scripted provider.
type countingExecutor struct {
	inner supervise.Executor
	calls map[string]*atomic.Int64
}

func newCounting(t *testing.T, p contract.Provider) *countingExecutor {
	return &countingExecutor{inner: &supervise.KernelExecutor{Provider: p, Store: newStore(t)},
		calls: map[string]*atomic.Int64{"alpha": {}, "beta": {}, "slow": {}}}
}

func (e *countingExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	for word, n := range e.calls {
		if strings.Contains(w.Task, word) {
			n.Add(1)
		}
	}
	return e.inner.Execute(ctx, w)
}

func (e *countingExecutor) count(word string) int64 { return e.calls[word].Load() }

// doneCheck delivers a result only when it says DONE.
var doneCheck = supervise.Deliverable{
	Describe: "the result must say DONE",
	Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		if strings.Contains(out.Text, "DONE") {
			return kernel.Verdict{Passed: true}, nil
		}
		return kernel.Verdict{Passed: false, Reason: "no DONE"}, nil
	},
}

func call(id, verb string, args any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, supervise.ToolPrefix+verb, string(b))
}

func managerUsage(in, out int64, cost float64) contract.ChatEvent {
	return contract.ChatEvent{Kind: contract.ChatUsage, Usage: &contract.TokenUsage{InputTokens: in, OutputTokens: out, Cost: &cost}, UsageMode: contract.UsageDelta}
}

func turn(events ...contract.ChatEvent) scripted.ChatTurn { return scripted.ChatTurn{Events: events} }

func baseOptions(t *testing.T, exec supervise.Executor, router contract.ChatModel) supervise.Options {
	return supervise.Options{
		Budget:      ledger.Budget{Tokens: i64(10_000), Iterations: i64(10), MicroUSD: i64(1_000_000)},
		PerWorker:   ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(100_000)},
		Profiles:    map[string]*profile.Profile{"writer": mustProfile(t, writerProfile)},
		Deliverable: doneCheck, Executor: exec, Router: router, RunID: "run1",
	}
}

// twoWorkerManager spawns an alpha and a beta worker, awaits both and
// answers.
func twoWorkerManager() *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha", "label": "a"}),
			call("c2", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write beta", "label": "b"}),
			managerUsage(10, 5, 0.0001)),
		turn(call("c3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
			call("c4", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60001}),
			managerUsage(20, 5, 0.0002)),
		turn(scripted.Text("alpha delivered"), managerUsage(30, 5, 0.0003)),
	}})
}

// FD-06, RTP-02, behaviour 41: a scripted manager spawns two workers on
// the scripted provider through the kernel; beta fails the check and is
// settled (its spend committed) but not delivered; alpha wins; the
// totals are exact: workers' and the manager's spend, all known.
func TestSuperviseTwoWorkersOneFailsCheck(t *testing.T) {
	exec := newCounting(t, workerProvider(t))
	o := baseOptions(t, exec, twoWorkerManager())
	o.RunDir = t.TempDir()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil {
		t.Fatalf("status %s reason %s error %+v, want a winner", res.Status, res.Reason, res.Error)
	}
	if got, want := res.Winner.Node, supervise.NodeID("run1:s1"); got != want {
		t.Errorf("winner %s, want %s", got, want)
	}
	if res.Winner.Text != "alpha: DONE" || !strings.HasPrefix(res.Winner.OutRef, "sha256:") {
		t.Errorf("winner text %q outRef %q", res.Winner.Text, res.Winner.OutRef)
	}
	type row struct {
		ID        supervise.NodeID
		State     supervise.State
		Delivered bool
	}
	var tree []row
	for _, n := range res.Tree {
		tree = append(tree, row{n.ID, n.State, n.Delivered})
	}
	if diff := cmp.Diff([]row{{"run1:s1", supervise.StateDone, true}, {"run1:s2", supervise.StateDone, false}}, tree); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	// Workers: 120 + 60 tokens, 2 iterations, 2000 + 1000 µ$; manager:
	// 75 tokens, 600 µ$ in 3 model turns, which count no iteration.
	want := supervise.SpentTotal{Tokens: 255, Iterations: 2, MicroUSD: 3600, Resources: map[string]int64{},
		TokensKnown: true, IterationsKnown: true, USDKnown: true}
	if diff := cmp.Diff(want, res.Spent); diff != "" {
		t.Errorf("spent (-want +got):\n%s", diff)
	}
	if res.Breakdown.ChildWork.Tokens != 180 || res.Breakdown.DriverInference.Tokens != 75 {
		t.Errorf("breakdown %+v", res.Breakdown)
	}
	if len(res.SpendGaps) != 0 || res.DownCount != 0 || len(res.TeardownUnconfirmed) != 0 {
		t.Errorf("gaps %v down %d teardown %v", res.SpendGaps, res.DownCount, res.TeardownUnconfirmed)
	}
	if exec.count("alpha") != 1 || exec.count("beta") != 1 {
		t.Errorf("executions alpha %d beta %d", exec.count("alpha"), exec.count("beta"))
	}
}

func newStore(t *testing.T) store.Store {
	t.Helper()
	return memory.New(nil)
}

// A worker whose provider turn fails in-band settles failed: it is down,
// never delivered, and the usage it reported before failing is only a
// floor, so its tokens are charged at its ceiling and named unreported.
func TestFailedWorkerChargedTruthfully(t *testing.T) {
	var s scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"steps": [{"text": "partial"}, {"usage": {"inputTokens": 7, "outputTokens": 3}, "mode": "delta"}], "end": "failed", "error": "tool crashed"}]}`), &s); err != nil {
		t.Fatal(err)
	}
	o := baseOptions(t, &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: newStore(t)}, nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "anything"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 10_000})
		return supervise.BrainReport{}, err
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAllChildrenDown || res.DownCount != 1 ||
		res.Tree[0].State != supervise.StateFailed || res.Tree[0].Delivered {
		t.Fatalf("result %+v", res)
	}
	if res.Spent.TokensKnown || res.Spent.Tokens != 1000 || len(res.SpendGaps) != 1 || res.SpendGaps[0].Kind != supervise.GapUnreported {
		t.Errorf("spent %+v gaps %+v", res.Spent, res.SpendGaps)
	}
}
