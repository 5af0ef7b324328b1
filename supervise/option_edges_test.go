package supervise_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 escalateQuestion, hostile values: what the hook answers is
// clipped to MaxReasonBytes before it reaches the manager's reply or the
// journal, and a hook answering not delivered names nobody as holding
// the question — its To is dropped, not replied nor journaled.
func TestEscalateQuestionHostileOutcomeClipped(t *testing.T) {
	huge := strings.Repeat("é", 3*supervise.MaxReasonBytes)
	cases := []struct {
		name      string
		outcome   supervise.EscalationOutcome
		delivered bool
		wantTo    bool
	}{
		{name: "delivered, huge To", outcome: supervise.EscalationOutcome{Delivered: true, To: huge, Reason: huge}, delivered: true, wantTo: true},
		{name: "refused, huge Reason and a To", outcome: supervise.EscalationOutcome{To: huge, Reason: huge}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, askingExecutor, nil)
			o.RunDir = t.TempDir()
			o.EscalateQuestion = func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
				return tc.outcome, nil
			}
			var reply map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				reply = tool(t, ctx, c, supervise.VerbAskParent, map[string]any{"level": "driver", "question": "which?", "reason": "r", "urgency": "blocks-run"})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			to, _ := reply["to"].(string)
			reason, _ := reply["reason"].(string)
			if tc.wantTo != (to != "") || len(to) > supervise.MaxReasonBytes+len("…") {
				t.Errorf("ask_parent's to has %d bytes, want to %v and at most %d", len(to), tc.wantTo, supervise.MaxReasonBytes+len("…"))
			}
			if len(reason) > supervise.MaxReasonBytes+len("the question is queued for …") {
				t.Errorf("ask_parent's reason has %d bytes, want it clipped", len(reason))
			}
			got := escalations(t, o.RunDir)
			if len(got) != 1 {
				t.Fatalf("escalations %d, want 1", len(got))
			}
			r := got[0]
			if r.Delivered != tc.delivered || tc.wantTo != (r.To != "") || len(r.To) > supervise.MaxReasonBytes+len("…") || len(r.Reason) > supervise.MaxReasonBytes+len("…") {
				t.Errorf("the escalation record: delivered %v, To %d bytes, Reason %d bytes; want delivered %v, To %v, each at most %d",
					r.Delivered, len(r.To), len(r.Reason), tc.delivered, tc.wantTo, supervise.MaxReasonBytes+len("…"))
			}
			if r.Delivered && r.Reason != "" {
				t.Errorf("a delivered escalation journaled reason %d bytes, want none", len(r.Reason))
			}
		})
	}
}

// §3.6, every wait bounded: an EscalateQuestion hook that ignores its
// context does not hold the root's ask_parent past the run's deadline —
// the run ends at its deadline (budget-exhausted), not at the hook's
// own bound.
func TestEscalateQuestionBlockingHookEndsAtDeadline(t *testing.T) {
	o := baseOptions(t, askingExecutor, nil)
	o.RunDir = t.TempDir()
	o.Deadline = time.Now().Add(500 * time.Millisecond)
	release := make(chan struct{})
	defer close(release)
	o.EscalateQuestion = func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
		<-release
		return supervise.EscalationOutcome{Delivered: true, To: "late"}, nil
	}
	var reply map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		reply = tool(t, ctx, c, supervise.VerbAskParent, map[string]any{"level": "driver", "question": "which?", "reason": "r", "urgency": "blocks-run"})
		<-ctx.Done()
		return supervise.BrainReport{}, ctx.Err()
	})
	start := time.Now()
	ctx := supervise.WithEscalateTimeout(context.Background(), time.Minute)
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	took := time.Since(start)
	if took > 15*time.Second {
		t.Errorf("the run took %v: the hook held the manager past the deadline", took)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "budget-exhausted" {
		t.Errorf("the run ended %q, want budget-exhausted (its deadline)", res.Reason)
	}
	if reply["status"] != "no-parent" {
		t.Errorf("ask_parent %v, want no-parent", reply)
	}
	t.Logf("ended after %v: %v", took, reply["reason"])
}

// §3.6 stopRule, "lifecycle causes outrank driver-failed" and the first
// end decides: once the root manager's result was accepted (journaled,
// the driver loop closed result-accepted in the reference, whose rule
// is read no more), a StopRule that panics on a later worker
// settlement does not turn the run driver-failed — the accepted result
// is the winner.
func TestStopRuleFailureAfterAcceptedResultKeepsTheWinner(t *testing.T) {
	release := make(chan struct{})
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return supervise.WorkResult{}, ctx.Err()
		}
		return supervise.WorkResult{Text: "worker: not it", Spent: ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}}, nil
	})
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	var calls atomic.Int64
	o.StopRule = func(supervise.ProgressView) supervise.StopDecision { calls.Add(1); panic("the caller's rule broke") }
	var submitted map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		submitted = tool(t, ctx, c, supervise.VerbSubmitResult, map[string]any{"result": "manager: DONE"})
		close(release)
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	ctx := supervise.WithStopRuleTimeout(context.Background(), 300*time.Millisecond)
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbSubmitResult), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if submitted["accepted"] != true {
		t.Fatalf("submit_result %v, want accepted", submitted)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Text != "manager: DONE" {
		t.Errorf("status %s reason %s error %+v winner %+v (rule read %d times); want the accepted result the winner",
			res.Status, res.Reason, res.Error, res.Winner, calls.Load())
	}
}

// §3.6 resolveSupervisorTools: a product tool's call is its manager's,
// so a call that arrives once its manager ended (here after stop; over
// the coordination MCP a harness may still send one) is refused without
// running the caller's tool and without journaling a call that never
// ran — not run with a context already ended, acting anyway if the tool
// does not look at it.
func TestResolvedToolCallAfterTheManagerStoppedDoesNotRun(t *testing.T) {
	var runs atomic.Int64
	o := baseOptions(t, askingExecutor, nil)
	o.RunDir = t.TempDir()
	o.ResolveSupervisorTools = func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		return []supervise.SupervisorTool{{Name: "kb_note", Run: func(context.Context, canonjson.Value, supervise.ToolCallContext) (canonjson.Value, error) {
			runs.Add(1) // acts whatever its context says
			return canonjson.StringValue("noted"), nil
		}}}, nil
	}
	var callErr error
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		tools, err := c.NodeTools(ctx, task)
		if err != nil || len(tools) != 1 {
			t.Fatalf("NodeTools: %v, %v", tools, err)
		}
		tool(t, ctx, c, supervise.VerbStop, map[string]any{"reason": "done"})
		// The call's own transport goes on (an MCP request's context).
		_, callErr = tools[0].Run(context.Background(), canonjson.ObjectValue(nil))
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 0 || callErr == nil {
		t.Errorf("the tool ran %d times, the call answered err %v; want it refused, not run", runs.Load(), callErr)
	}
	if j := string(readJournal(t, o.RunDir)); strings.Contains(j, supervise.KindExtraToolCalled) {
		t.Errorf("the journal holds a call that was refused:\n%s", j)
	}
}

// §3.6 stopRule, every wait bounded by the run: a StopRule that blocks
// as the run's deadline passes (read before a router turn) is not
// waited for past the deadline — the run ends at it, budget-exhausted
// (a lifecycle cause outranks the rule's failure), not at the rule's
// own bound.
func TestStopRuleBlockingAtTheDeadlineEndsTheRunAtIt(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbListQuestions, map[string]any{}), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("unreached"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, askingExecutor, manager)
	o.RunDir = t.TempDir()
	o.Deadline = time.Now().Add(400 * time.Millisecond)
	o.StopRule = func(supervise.ProgressView) supervise.StopDecision { <-release; return supervise.StopDecision{} }
	ctx := supervise.WithStopRuleTimeout(context.Background(), 10*time.Second)
	start := time.Now()
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbListQuestions), "t", o)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != supervise.ReasonBudgetExhausted || res.Error != nil {
		t.Errorf("status %s reason %s error %+v, want budget-exhausted (the deadline)", res.Status, res.Reason, res.Error)
	}
	if took > 5*time.Second {
		t.Errorf("the run took %v: the blocked rule held it past its deadline", took)
	}
}

// §3.6 escalateQuestion: the hook is the caller's code, given the
// question, not the run's record of it — a hook that writes into the
// question's options changes nothing the run lists (or races with it).
func TestEscalateQuestionHookCannotChangeTheRecordedQuestion(t *testing.T) {
	o := baseOptions(t, askingExecutor, nil)
	o.RunDir = t.TempDir()
	o.EscalateQuestion = func(_ context.Context, q supervise.Question) (supervise.EscalationOutcome, error) {
		for i := range q.Options {
			q.Options[i].Label = "rewritten by the hook"
		}
		return supervise.EscalationOutcome{Delivered: true, To: "the operator"}, nil
	}
	var listed []supervise.Question
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbAskParent, map[string]any{"level": "driver", "question": "which?", "reason": "r", "urgency": "blocks-run",
			"options": []map[string]any{{"label": "red"}, {"label": "blue"}}})
		listed = c.ListQuestions().Questions
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || len(listed[0].Options) != 2 || listed[0].Options[0].Label != "red" || listed[0].Options[1].Label != "blue" {
		t.Errorf("list_questions %+v, want the question as asked (red, blue)", listed)
	}
}

// §3.6 stopRule is read only while the manager drives: once the root
// manager returned on its own, a worker that settles within
// ChildSettleGrace does not read the rule — a rule that would panic does
// not turn the run driver-failed, and the worker's delivery wins.
func TestStopRuleNotReadInChildSettleGrace(t *testing.T) {
	returned := make(chan struct{})
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		select {
		case <-returned:
		case <-ctx.Done():
			return supervise.WorkResult{}, ctx.Err()
		}
		time.Sleep(50 * time.Millisecond) // the brain has returned
		return supervise.WorkResult{Text: "alpha: DONE", Spent: ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}}, nil
	})
	o := baseOptions(t, exec, nil)
	o.RunDir, o.ChildSettleGrace = t.TempDir(), 10*time.Second
	var reads atomic.Int64
	o.StopRule = func(supervise.ProgressView) supervise.StopDecision { reads.Add(1); panic("the caller's rule broke") }
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
		close(returned)
		return supervise.BrainReport{Text: "left it running"}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Text != "alpha: DONE" || reads.Load() != 0 {
		t.Errorf("status %s reason %s error %+v winner %+v, rule read %d times; want alpha the winner, the rule not read",
			res.Status, res.Reason, res.Error, res.Winner, reads.Load())
	}
}

// The first end decides, the other way round: once a failed StopRule
// ended the run (driver-failed), a submit_result that comes after — a
// harness's request outliving its manager — is refused, not answered
// accepted for a result the run then does not deliver.
func TestSubmitAfterTheStopRuleFailedIsRefused(t *testing.T) {
	o := baseOptions(t, progressExecutor{runs: new(atomic.Int64)}, nil)
	o.RunDir = t.TempDir()
	o.StopRule = func(supervise.ProgressView) supervise.StopDecision { panic("the caller's rule broke") }
	var submitted map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("half 1"))
		<-ctx.Done() // the rule failed on the settlement
		submitted = tool(t, context.Background(), c, supervise.VerbSubmitResult, map[string]any{"result": "manager: DONE"})
		return supervise.BrainReport{}, nil
	})
	ctx := supervise.WithStopRuleTimeout(context.Background(), 300*time.Millisecond)
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbSubmitResult), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != supervise.ReasonDriverFailed || res.Winner != nil {
		t.Errorf("status %s reason %s winner %+v, want driver-failed", res.Status, res.Reason, res.Winner)
	}
	if submitted["accepted"] == true {
		t.Errorf("submit_result %v after the run ended driver-failed, want it refused", submitted)
	}
}

// The same after the run's deadline ended the manager: a late
// submit_result is refused and the run ends budget-exhausted, no winner.
func TestSubmitAfterTheDeadlineIsRefused(t *testing.T) {
	o := baseOptions(t, progressExecutor{runs: new(atomic.Int64)}, nil)
	o.RunDir = t.TempDir()
	o.Deadline = time.Now().Add(300 * time.Millisecond)
	var submitted map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		<-ctx.Done()
		submitted = tool(t, context.Background(), c, supervise.VerbSubmitResult, map[string]any{"result": "manager: DONE"})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbSubmitResult), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != supervise.ReasonBudgetExhausted || res.Winner != nil {
		t.Errorf("status %s reason %s winner %+v, want budget-exhausted", res.Status, res.Reason, res.Winner)
	}
	if submitted["accepted"] == true || submitted["error"] != string(supervise.CodeScopeSettled) {
		t.Errorf("submit_result %v after the deadline, want it refused scope-settled", submitted)
	}
}
