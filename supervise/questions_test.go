package supervise_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// askingExecutor's workers ask a blocks-run question and answer with
// the decision they received.
var askingExecutor = supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	spent := ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}
	d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which colour?", Reason: "the task does not say",
		Urgency: supervise.UrgencyBlocksRun, Options: []supervise.QuestionOption{{Label: "red"}, {Label: "blue"}}})
	if err != nil {
		return supervise.WorkResult{Spent: spent}, err
	}
	return supervise.WorkResult{Text: d.Kind + ": " + d.Answer + " DONE", Spent: spent}, nil
})

// Behaviour 54: stop is refused while a blocks-run question is
// undecided; once answer_question delivered the decision, stop
// succeeds, and the worker used the answer.
func TestStopRefusedWhileBlockingQuestionBehaviour54(t *testing.T) {
	o := baseOptions(t, askingExecutor, nil)
	o.RunDir = t.TempDir()
	var asked, refused, listed, answered, stopped, settled map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		asked = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		refused = tool(t, ctx, c, supervise.VerbStop, map[string]any{"reason": "enough"})
		listed = tool(t, ctx, c, supervise.VerbListQuestions, map[string]any{})
		answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "blue"})
		settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		stopped = tool(t, ctx, c, supervise.VerbStop, map[string]any{"reason": "enough"})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	askedEvent, _ := asked["event"].(map[string]any)
	q, _ := askedEvent["question"].(map[string]any)
	if q["id"] != "q1" || q["urgency"] != "blocks-run" || q["from"] != "run1:s1" {
		t.Errorf("question event %v", asked)
	}
	if refused["error"] != "unresolved-blocking-questions" {
		t.Errorf("stop with an open blocking question: %v", refused)
	}
	qs, _ := listed["questions"].([]any)
	var first map[string]any
	if len(qs) == 1 {
		first, _ = qs[0].(map[string]any)
	}
	if first["status"] != "open" {
		t.Errorf("list_questions %v", listed)
	}
	if answered["delivered"] != true || answered["status"] != "answered" {
		t.Errorf("answer_question %v", answered)
	}
	if stopped["stopped"] != true {
		t.Errorf("stop after the answer: %v", stopped)
	}
	if ev, _ := settled["event"].(map[string]any); ev["output"] != "answer: blue DONE" {
		t.Errorf("settled %v", settled)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("status %s reason %s", res.Status, res.Reason)
	}
	log, err := os.ReadFile(filepath.Join(o.RunDir, supervise.CoordinationLogFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"kind":"question"`) || !strings.Contains(lines[1], `"answer":"blue"`) {
		t.Errorf("coordination log:\n%s", log)
	}
}

// The stop verb through the router brain ends the manager's loop
// without a driver failure: the turn after stop is never asked for.
func TestRouterStopEndsLoop(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	close(gate.release)
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, spawnArgs("one"))),
		turn(call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})),
		turn(call("c3", supervise.VerbStop, map[string]any{"reason": "have a result"})),
		turn(scripted.Text("never asked")),
	}})
	o := baseOptions(t, gate, router)
	res, err := supervise.Supervise(context.Background(),
		managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbStop), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Error != nil || router.Calls() != 3 {
		t.Errorf("status %s reason %s error %+v, %d model turns", res.Status, res.Reason, res.Error, router.Calls())
	}
	// The manager's model reported no usage: its spend is unknown.
	if res.Spent.TokensKnown || len(res.SpendGaps) != 1 || res.SpendGaps[0].Label != "manager" {
		t.Errorf("spent %+v gaps %+v", res.Spent, res.SpendGaps)
	}
}

// A decision made the moment the question is seen — before the asker's
// question has even been journaled — still reaches the asker: the
// asker takes its reply channel under the lock that publishes the
// question. Each of the worker's questions is answered at once.
func TestImmediateAnswerReachesTheAsker(t *testing.T) {
	const n = 20
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		spent := ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}
		var got []string
		for range n {
			d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "next?", Reason: "r", Urgency: supervise.UrgencyBlocksStep})
			if err != nil {
				return supervise.WorkResult{Spent: spent}, err
			}
			got = append(got, d.Answer)
		}
		return supervise.WorkResult{Text: strings.Join(got, ",") + " DONE", Spent: spent}, nil
	})
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir() // questions are journaled (fsync) before Ask waits
	var settled map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("ask"))
		for i := range n {
			ev := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
			e, _ := ev["event"].(map[string]any)
			q, _ := e["question"].(map[string]any)
			id, _ := q["id"].(string)
			if r := tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": id, "answer": "a" + strconv.Itoa(i)}); r["delivered"] != true {
				t.Errorf("answer %d: %v", i, r)
			}
		}
		settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	ev, _ := settled["event"].(map[string]any)
	out, _ := ev["output"].(string)
	if !strings.HasSuffix(out, "a19 DONE") {
		t.Errorf("settled %v; the worker did not get every answer", settled)
	}
}

// §3.6 "Blocking undecided questions make stop refuse": blocking is
// blocks-step as well as blocks-run (the reference's stop refuses both
// urgencies while undecided), and a continue-without question never
// holds stop. Each worker asks one question of the given urgency; stop
// is refused for the blocking two until answer_question decides them.
func TestStopRefusedWhileAnyBlockingQuestionIsOpen(t *testing.T) {
	for _, tc := range []struct {
		urgency supervise.Urgency
		refused bool
	}{
		{supervise.UrgencyBlocksStep, true},
		{supervise.UrgencyBlocksRun, true},
		{supervise.UrgencyContinueWithout, false},
	} {
		t.Run(string(tc.urgency), func(t *testing.T) {
			exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
				spent := ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}
				d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which colour?", Reason: "the task does not say", Urgency: tc.urgency})
				if err != nil {
					return supervise.WorkResult{Spent: spent}, err
				}
				return supervise.WorkResult{Text: d.Answer + " DONE", Spent: spent}, nil
			})
			o := baseOptions(t, exec, nil)
			var first, after map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
				first = tool(t, ctx, c, supervise.VerbStop, map[string]any{"reason": "enough"})
				if first["stopped"] == true {
					return supervise.BrainReport{}, nil
				}
				tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "blue"})
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
				after = tool(t, ctx, c, supervise.VerbStop, map[string]any{"reason": "enough"})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if got := first["error"] == "unresolved-blocking-questions"; got != tc.refused {
				t.Errorf("stop with an open %s question: %v, want refused %v", tc.urgency, first, tc.refused)
			}
			if tc.refused && after["stopped"] != true {
				t.Errorf("stop after the answer: %v", after)
			}
		})
	}
}
