package supervise_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// askingScript is a worker whose "paint" turn asks which colour (a
// question interaction with a required select field), then paints what
// it was told; its "hurry" turn asks with a 300ms timeout and a default
// it applies when nobody answers in time.
const askingScript = `{"turns": [
  {"match": "paint", "repeat": true, "steps": [
    {"text": "asking; "},
    {"interaction": {"request": {"id": "colour", "kind": "question", "title": "Which colour?", "body": "The brief names none.",
      "answerSpec": {"fields": [{"type": "select", "name": "colour", "label": "Colour", "required": true,
        "options": [{"value": "red", "label": "Red"}, {"value": "blue", "label": "Blue"}]}]}}}},
    {"text": "painted {{answer:colour.colour}} ({{outcome:colour}}) DONE"},
    {"usage": {"inputTokens": 10, "outputTokens": 5, "cost": 0.0001}, "mode": "delta"}]},
  {"match": "hurry", "repeat": true, "steps": [
    {"interaction": {"request": {"id": "size", "kind": "question", "title": "How big?", "timeoutMs": 300, "onTimeout": "default",
      "default": {"outcome": "declined"},
      "answerSpec": {"fields": [{"type": "text", "name": "size", "label": "Size"}]}}}},
    {"text": "sized by default DONE"},
    {"usage": {"inputTokens": 10, "outputTokens": 5, "cost": 0.0001}, "mode": "delta"}]},
  {"match": "rush", "repeat": true, "steps": [
    {"interaction": {"request": {"id": "size", "kind": "question", "title": "How big?", "timeoutMs": 300, "onTimeout": "fail",
      "answerSpec": {"fields": [{"type": "text", "name": "size", "label": "Size"}]}}}},
    {"text": "never DONE"}]}
]}`

func askingKernelExecutor(t *testing.T) *supervise.KernelExecutor {
	t.Helper()
	s, err := scripted.ParseScript([]byte(askingScript))
	if err != nil {
		t.Fatal(err)
	}
	return &supervise.KernelExecutor{Provider: scripted.New(s, scripted.Options{}), Store: newStore(t)}
}

// §3.6 "Questions" (worker ask-user creates a question {id, from, level:
// worker, …}; decisions answer | defer | escalate), through a real
// kernel run on the scripted provider: the worker's turn raises a
// question interaction, the manager sees it (await_event, observe_agent
// waiting, list_questions), decides it with answer_question, and the
// same turn goes on with the decision — an answer fills the request's
// field (matched by option label too), a deferral declines it.
// Behaviour 54's machinery (an undecided question, then a delivered
// decision) on the kernel executor.
func TestKernelWorkerAsksItsManager(t *testing.T) {
	cases := []struct {
		name       string
		decide     map[string]any
		wantStatus string
		wantOutput string
	}{
		{"answer", map[string]any{"questionId": "q1", "answer": "Blue"}, "answered", "asking; painted blue (accepted) DONE"},
		{"defer", map[string]any{"questionId": "q1", "deferReason": "pick one yourself"}, "deferred", "asking; painted  (declined) DONE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, askingKernelExecutor(t), nil)
			o.RunDir = t.TempDir()
			var (
				waiting        supervise.State
				listed, answer map[string]any
				settled        map[string]any
			)
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the door"))
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
				obs, err := c.Observe("run1:s1")
				if err != nil {
					t.Error(err)
				}
				waiting = obs.Status
				listed = tool(t, ctx, c, supervise.VerbListQuestions, map[string]any{})
				answer = tool(t, ctx, c, supervise.VerbAnswerQuestion, tc.decide)
				settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
				return supervise.BrainReport{}, nil
			})
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if waiting != supervise.StateWaiting {
				t.Errorf("the asking worker is %s, want waiting", waiting)
			}
			wantListed := map[string]any{"more": false, "questions": []any{map[string]any{"id": "q1", "from": "run1:s1", "level": "worker",
				"question": "Which colour?\n\nThe brief names none.", "reason": "the worker's turn waits for an answer (interaction colour)",
				"urgency": "blocks-step", "options": []any{map[string]any{"label": "red", "tradeoff": ""}, map[string]any{"label": "blue", "tradeoff": ""}}, "status": "open"}}}
			if diff := cmp.Diff(wantListed, listed); diff != "" {
				t.Errorf("list_questions (-want +got):\n%s", diff)
			}
			if answer["delivered"] != true || answer["status"] != tc.wantStatus {
				t.Errorf("answer_question: %v", answer)
			}
			ev, _ := settled["event"].(map[string]any)
			if ev["state"] != "done" || ev["output"] != tc.wantOutput {
				t.Errorf("settled %v, want output %q", settled, tc.wantOutput)
			}
			if res.Status != supervise.StatusWinner {
				t.Errorf("status %s reason %s", res.Status, res.Reason)
			}
		})
	}
}

// A worker whose question is never decided ends at the run's deadline:
// its turn is cancelled (the provider withdraws the interaction), the
// worker settles cancelled rather than hanging, and its question is
// expired, not open.
func TestKernelWorkerUnansweredQuestionEndsAtDeadline(t *testing.T) {
	o := baseOptions(t, askingKernelExecutor(t), nil)
	o.RunDir = t.TempDir()
	o.Deadline = time.Now().Add(2 * time.Second)
	o.SettleGrace = 20 * time.Second
	var coord *supervise.Coordinator
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		coord = c
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the fence"))
		// The run's deadline ends this wait too.
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		return supervise.BrainReport{}, err
	})
	start := time.Now()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the run took %s past a 2s deadline", took)
	}
	if res.Status != supervise.StatusNoWinner || len(res.Tree) != 1 || !res.Tree[0].State.Terminal() || res.Tree[0].State == supervise.StateDone {
		t.Fatalf("result %+v", res)
	}
	if len(res.TeardownUnconfirmed) != 0 {
		t.Errorf("the worker did not end: %+v", res.TeardownUnconfirmed)
	}
	qs := coord.ListQuestions().Questions
	if len(qs) != 1 || qs[0].Status != "expired" {
		t.Errorf("questions %+v, want one expired", qs)
	}
}

// A question whose request times out is withdrawn from the manager:
// with a default the provider applies (which makes the question
// continue-without) the turn goes on without the answer; without one
// the provider withdraws the request and the turn fails. Either way the
// question expired, and the manager's late answer reaches nobody.
func TestKernelWorkerQuestionWithdrawnOnTimeout(t *testing.T) {
	cases := []struct {
		task, urgency, state, output string
	}{
		{"hurry up", "continue-without", "done", "sized by default DONE"},
		{"rush it", "blocks-step", "failed", ""},
	}
	for _, tc := range cases {
		t.Run(tc.task, func(t *testing.T) {
			o := baseOptions(t, askingKernelExecutor(t), nil)
			var asked, settled, late map[string]any
			var coord *supervise.Coordinator
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				coord = c
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs(tc.task))
				asked = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
				settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
				late = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "big"})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			ev, _ := asked["event"].(map[string]any)
			if q, _ := ev["question"].(map[string]any); q["urgency"] != tc.urgency {
				t.Errorf("question %v, want urgency %s", asked, tc.urgency)
			}
			if ev, _ := settled["event"].(map[string]any); ev["state"] != tc.state || tc.output != "" && ev["output"] != tc.output {
				t.Errorf("settled %v, want %s %q", settled, tc.state, tc.output)
			}
			if late["delivered"] == true {
				t.Errorf("a late answer was delivered: %v", late)
			}
			if qs := coord.ListQuestions().Questions; len(qs) != 1 || qs[0].Status != "expired" {
				t.Errorf("questions %+v, want one expired", qs)
			}
		})
	}
}

// The same exchange driven by the cli-base router brain: the manager's
// model calls spawn_worker, await_event (the question), list_questions
// and answer_question as tools, and the kernel worker's turn goes on with
// the answer; the winner is the painted result (INT-03: a question keeps
// its meaning from the scripted provider's turn to the manager's tools).
func TestRouterManagerAnswersKernelWorker(t *testing.T) {
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "paint the gate"}), managerUsage(10, 5, 0.0001)),
		turn(call("c2", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000}), managerUsage(10, 5, 0.0001)),
		turn(call("c3", supervise.VerbListQuestions, map[string]any{}), managerUsage(10, 5, 0.0001)),
		turn(call("c4", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "red"}), managerUsage(10, 5, 0.0001)),
		turn(call("c5", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000}), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("painted"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, askingKernelExecutor(t), manager)
	o.RunDir = t.TempDir()
	verbs := []string{supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbListQuestions, supervise.VerbAnswerQuestion}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, verbs...), "paint", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Text != "asking; painted red (accepted) DONE" {
		t.Fatalf("result %s %s %+v", res.Status, res.Reason, res.Winner)
	}
	log, _, err := supervise.ReadCoordinationLog(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range log {
		kinds = append(kinds, r.Kind)
	}
	if !slices.Equal(kinds, []string{supervise.CoordQuestion, supervise.CoordDecision}) || log[1].Decision.Answer != "red" || !log[1].Delivered {
		t.Errorf("coordination log %+v", log)
	}
}
