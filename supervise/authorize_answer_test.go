package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 authorizeMessage over answer_question: an answer the hook refuses
// — by its error, or by narrowing it to nothing (the reference: the hook
// "must return an instruction") — is refused message-not-authorized and
// decides nothing: the question stays open and a later authorized answer
// reaches the asker.
func TestAuthorizeMessageRefusedAnswerLeavesTheQuestionOpen(t *testing.T) {
	o := baseOptions(t, askingExecutor, nil)
	o.RunDir = t.TempDir()
	o.AuthorizeMessage = func(_ context.Context, m supervise.DownMessage) (string, error) {
		switch {
		case strings.Contains(m.Instruction, "secret"):
			return "", errors.New("the answer names a secret")
		case strings.HasPrefix(m.Instruction, "empty:"):
			return "", nil
		}
		return m.Instruction, nil
	}
	var refused, emptied, listed, answered, settled map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		refused = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "red, the secret one"})
		emptied = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "empty: red"})
		listed = tool(t, ctx, c, supervise.VerbListQuestions, map[string]any{})
		answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "blue"})
		settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if refused["error"] != "message-not-authorized" || !strings.Contains(refused["reason"].(string), "the answer names a secret") {
		t.Errorf("a refused answer: %v, want message-not-authorized with the hook's reason", refused)
	}
	if emptied["error"] != "message-not-authorized" {
		t.Errorf("an answer the hook narrowed to nothing: %v, want message-not-authorized", emptied)
	}
	qs, _ := listed["questions"].([]any)
	if len(qs) != 1 || qs[0].(map[string]any)["status"] != "open" {
		t.Errorf("list_questions after the refusals %v, want q1 open", listed)
	}
	if answered["delivered"] != true || answered["status"] != "answered" {
		t.Errorf("the authorized answer: %v", answered)
	}
	if ev, _ := settled["event"].(map[string]any); ev["output"] != "answer: blue DONE" {
		t.Errorf("settled %v, want the worker to have used the authorized answer only", settled)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("%s %s", res.Status, res.Reason)
	}
}

// §3.6 authorizeMessage with resume: a resumed manager that calls
// answer_question again with the answer it gave before (a replay-safe
// manager re-runs its calls) is told it was delivered (replayed) — the
// answer the hook narrowed is the same decision, not already-decided.
func TestAuthorizeMessageNarrowedAnswerReplaysOnResume(t *testing.T) {
	dir := t.TempDir()
	narrow := func(_ context.Context, m supervise.DownMessage) (string, error) {
		return strings.TrimPrefix(m.Instruction, "narrow: "), nil
	}
	var replies []map[string]any
	brain := func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the door"))
		if len(replies) == 0 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		}
		replies = append(replies, tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "narrow: red"}))
		return supervise.BrainReport{}, nil
	}
	for i := range 2 {
		o := baseOptions(t, askingExecutor, nil)
		o.RunDir, o.Resume, o.Brain, o.AuthorizeMessage = dir, i == 1, supervise.BrainFunc(brain), narrow
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
			t.Fatal(err)
		}
	}
	if len(replies) != 2 || replies[0]["delivered"] != true {
		t.Fatalf("replies %v", replies)
	}
	if replies[1]["delivered"] != true || replies[1]["replayed"] != true {
		t.Errorf("the resumed manager's same answer: %v, want delivered and replayed", replies[1])
	}
}
