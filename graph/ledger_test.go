package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

const workerScript = `{"turns": [
  {"match": "Fix the failing test", "steps": [{"text": "patch: login fixed."}, {"usage": {"inputTokens": 100, "outputTokens": 20, "cost": 0.002}, "mode": "delta"}]},
  {"match": "say what is risky", "steps": [{"text": "patch is safe."}, {"usage": {"inputTokens": 50, "outputTokens": 10, "cost": 0.001}, "mode": "delta"}]},
  {"match": "unsafe changes", "steps": [{"text": "finding: the patch skips a nil check"}, {"usage": {"inputTokens": 30, "outputTokens": 10, "cost": 0.001}, "mode": "delta"}]}
]}`

// Behaviour 53, first clause (checklist FD-07): two delegated spawns
// through a scripted root produce two delivered rows, continuity fresh,
// bytes = directive + task > 0, each naming its destination worker; the
// same rows are journaled as edge records in the run's one journal.
func TestTwoSpawnsLedgerDeliveredBehaviour53(t *testing.T) {
	dir := t.TempDir()
	model := router(
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix test_login."}),
			call("c2", supervise.VerbSpawnWorker, map[string]any{"profile": "reviewer", "task": "Review the login patch."})),
		turn(call("c3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000}), call("c4", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30001})),
		turn(final("Both nodes reported.")),
	)
	o := options(t, kernelWorkers(t, workerScript), model)
	o.Supervise.RunDir = dir
	res, err := graph.RunGraph(context.Background(), starGraph(t), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []graph.LedgerRow{
		{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuityFresh, Bytes: len(coderDirective) + len("Fix test_login."), WorkerID: "g:s1"},
		{Edge: "delegates:driver->reviewer", Kind: graph.Delegates, From: "driver", To: "reviewer", Directive: "delegate/reviewer/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuityFresh, Bytes: len(reviewDirective) + len("Review the login patch."), WorkerID: "g:s2"},
	}
	if diff := cmp.Diff(want, res.Ledger); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, journaledEdgeRows(t, dir)); diff != "" {
		t.Errorf("journaled edges (-want +got):\n%s", diff)
	}
	if res.Result.Status != supervise.StatusWinner || res.Result.Winner.Node != "g:s1" || res.RunID != "g" {
		t.Errorf("result = %s winner %+v run %q, want coder g:s1 winning run g", res.Result.Status, res.Result.Winner, res.RunID)
	}
	if len(res.ExhaustedEdges) != 0 {
		t.Errorf("exhausted = %v, want none", res.ExhaustedEdges)
	}
}

// Behaviour 53, second clause: a steer the product's AuthorizeMessage
// narrows is ledgered stripped — continuity steer, the bytes that
// actually crossed, the destination worker — and the worker received
// only the narrowed text.
func TestNarrowedSteerIsStrippedBehaviour53(t *testing.T) {
	const secret = "Use the staging token sk-123 to reproduce."
	const narrowed = "Use the staging token [redacted] to reproduce."
	model := router(
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix test_login."})),
		turn(call("c2", supervise.VerbSteerAgent, map[string]any{"workerId": "g:s1", "instruction": secret})),
		turn(call("c3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000})),
		turn(final("done")),
	)
	o := options(t, &inboxWorkers{}, model)
	var seen []graph.Message
	o.AuthorizeMessage = func(_ context.Context, m graph.Message) (string, error) {
		seen = append(seen, m)
		return strings.ReplaceAll(m.Instruction, "sk-123", "[redacted]"), nil
	}
	res, err := graph.RunGraph(context.Background(), starGraph(t), o)
	if err != nil {
		t.Fatal(err)
	}
	want := []graph.LedgerRow{
		{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuityFresh, Bytes: len(coderDirective) + len("Fix test_login."), WorkerID: "g:s1"},
		{Edge: "delegates:driver->coder", Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 2,
			Outcome: graph.OutcomeStripped, Continuity: graph.ContinuitySteer, Bytes: len(narrowed),
			Reason: "authorization narrowed 42 composed bytes", WorkerID: "g:s1"},
	}
	if diff := cmp.Diff(want, res.Ledger); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
	wantSeen := []graph.Message{{WorkerID: "g:s1", Node: "coder", Edge: "delegates:driver->coder", Instruction: secret}}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("AuthorizeMessage saw (-want +got):\n%s", diff)
	}
	if w := res.Result.Winner; w == nil || w.Text != "patch per: "+narrowed {
		t.Errorf("winner = %+v, want the worker's answer to the narrowed instruction", w)
	}
}

// Behaviour 53, third clause: a delegates cap spent — here by a spawn
// and a steer, since steers consume future spawns — refuses the next
// spawn (ledgered unpropagated, the tool result an edge-cap-exhausted
// refusal), and a run that then ends with no winner fails loud with a
// *GraphEdgeCapError carrying the ledger and the supervised result.
func TestCapExhaustedWithoutWinnerBehaviour53(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(2)
	g.Deliverable = supervise.Deliverable{Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: false, Reason: "the test still fails"}, nil
	}}
	model := router(
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix test_login."})),
		turn(call("c2", supervise.VerbSteerAgent, map[string]any{"workerId": "g:s1", "instruction": "Try again."})),
		turn(call("c3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000})),
		turn(call("c4", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix test_login, third try."})),
		turn(final("gave up")),
	)
	res, err := graph.RunGraph(context.Background(), g, options(t, &inboxWorkers{}, model))
	var capErr *graph.GraphEdgeCapError
	if !errors.As(err, &capErr) {
		t.Fatalf("err = %v, want *GraphEdgeCapError", err)
	}
	const edge = "delegates:driver->coder"
	want := []graph.LedgerRow{
		{Edge: edge, Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 1,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuityFresh, Bytes: len(coderDirective) + len("Fix test_login."), WorkerID: "g:s1"},
		{Edge: edge, Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 2,
			Outcome: graph.OutcomeDelivered, Continuity: graph.ContinuitySteer, Bytes: len("Try again."), WorkerID: "g:s1"},
		{Edge: edge, Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1", Traversal: 3,
			Outcome: graph.OutcomeUnpropagated, Continuity: graph.ContinuityFresh, Reason: "traversal-cap-exhausted (max 2)"},
	}
	if diff := cmp.Diff(want, capErr.Ledger); diff != "" {
		t.Errorf("error's ledger (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{edge}, capErr.ExhaustedEdges); diff != "" {
		t.Errorf("exhausted (-want +got):\n%s", diff)
	}
	if capErr.Result.Status != supervise.StatusNoWinner || capErr.Result.Reason != supervise.ReasonAllChildrenDown {
		t.Errorf("error's result = %s/%s, want no-winner/all-children-down", capErr.Result.Status, capErr.Result.Reason)
	}
	if diff := cmp.Diff(want, res.Ledger); diff != "" {
		t.Errorf("returned ledger (-want +got):\n%s", diff)
	}
	if len(res.Result.Tree) != 1 {
		t.Errorf("tree has %d workers, want 1: the refused spawn reserved nothing", len(res.Result.Tree))
	}
}

// A lifecycle ending (the caller cancelled) is its own explanation: an
// exhausted cap stays visible in ExhaustedEdges and nothing is thrown.
func TestCapExhaustedButCancelledReturnsNormally(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(1)
	ctx, cancel := context.WithCancel(context.Background())
	o := options(t, &inboxWorkers{}, nil)
	o.Supervise.Router = nil
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "again"})
		var vr *supervise.VerbRefusal
		if !errors.As(err, &vr) || vr.Code != "edge-cap-exhausted" {
			t.Errorf("second spawn: err = %v, want edge-cap-exhausted", err)
		}
		cancel()
		return supervise.BrainReport{}, ctx.Err()
	})
	res, err := graph.RunGraph(ctx, g, o)
	if err != nil {
		t.Fatalf("err = %v, want a normal return", err)
	}
	if res.Result.Reason != supervise.ReasonAborted || !cmp.Equal(res.ExhaustedEdges, []string{"delegates:driver->coder"}) {
		t.Errorf("reason %s, exhausted %v", res.Result.Reason, res.ExhaustedEdges)
	}
}

// §3.7 "a lifecycle no-winner (aborted/budget) returns normally": a
// graph run its caller aborted through the forwarded RootHandle
// (supervise.Options.Root) ends no-winner aborted, its exhausted cap
// visible and nothing thrown.
func TestCapExhaustedButAbortedReturnsNormally(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(1)
	h := supervise.NewRootHandle()
	o := options(t, &inboxWorkers{}, nil)
	o.Supervise.Router, o.Supervise.Root = nil, h
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "again"})
		var vr *supervise.VerbRefusal
		if !errors.As(err, &vr) || vr.Code != "edge-cap-exhausted" {
			t.Errorf("second spawn: err = %v, want edge-cap-exhausted", err)
		}
		if err := h.Abort("the operator stopped the graph"); err != nil {
			t.Errorf("abort: %v", err)
		}
		return supervise.BrainReport{}, ctx.Err()
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatalf("err = %v, want a normal return", err)
	}
	if res.Result.Reason != supervise.ReasonAborted || !cmp.Equal(res.ExhaustedEdges, []string{"delegates:driver->coder"}) {
		t.Errorf("reason %s, exhausted %v", res.Result.Reason, res.ExhaustedEdges)
	}
}

// §3.7 "a lifecycle no-winner (aborted/budget) returns normally", and
// the reference's docs: result.exhaustedEdges is read always, since
// GraphEdgeCapError throws only on a no-winner, non-lifecycle ending — a
// budget-exhausted run returns normally with its exhausted caps listed.
// Here the coder edge's cap is spent and refuses a re-spawn, then the
// pool refuses the reviewer: the budget, not the cap, ended the run.
func TestCapExhaustedButBudgetExhaustedReturnsNormally(t *testing.T) {
	g := starGraph(t)
	g.Edges[0].MaxTraversals = new(1)
	g.Budget.Iterations = i64(1) // one worker's reservation
	g.Deliverable = supervise.Deliverable{Check: failing}
	o := options(t, kernelWorkers(t, workerScript), nil)
	o.Supervise.Router = nil
	var codes []string
	o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "Fix test_login."}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30000}); err != nil {
			return supervise.BrainReport{}, err
		}
		for _, node := range []string{"coder", "reviewer"} {
			_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: node, Task: "Fix test_login, again."})
			var vr *supervise.VerbRefusal
			if errors.As(err, &vr) {
				codes = append(codes, vr.Code)
			} else {
				code, _ := supervise.CodeOf(err)
				codes = append(codes, string(code))
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatalf("err = %v, want a normal return: the budget ended the run", err)
	}
	if diff := cmp.Diff([]string{"edge-cap-exhausted", string(supervise.CodeBudgetExhausted)}, codes); diff != "" {
		t.Errorf("refusals (-want +got):\n%s", diff)
	}
	if res.Result.Status != supervise.StatusNoWinner || res.Result.Reason != supervise.ReasonBudgetExhausted {
		t.Errorf("result %s/%s, want no-winner/budget-exhausted", res.Result.Status, res.Result.Reason)
	}
	if diff := cmp.Diff([]string{"delegates:driver->coder"}, res.ExhaustedEdges); diff != "" {
		t.Errorf("exhausted (-want +got):\n%s", diff)
	}
	want := []string{"1 delivered fresh g:s1", "2 unpropagated fresh ", "1 unpropagated fresh "}
	if diff := cmp.Diff(want, rowsOf(res.Ledger)); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
}
