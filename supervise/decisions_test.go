package supervise_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// §9 answer_question's other decisions: an escalation from this root
// (it has no parent) answers no-parent and leaves the question open —
// stop is still refused (behaviour 54); a deferral is delivered to the
// asker, which goes on with it; a decision is given exactly once, as
// exactly one of answer, deferReason and escalateTo; the manager's own
// ask_parent answers no-parent. The asking worker is waiting until its
// question is decided.
func TestQuestionDecisionsEscalateDeferAndRefusals(t *testing.T) {
	o := baseOptions(t, askingExecutor, nil)
	o.RunDir = t.TempDir()
	got := map[string]map[string]any{}
	guided := map[string]bool{}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		call := func(name, verb string, args map[string]any) {
			r := tool(t, ctx, c, verb, args)
			delete(r, "reason")
			if g, _ := r["guidance"].(string); g != "" {
				guided[name] = true
			}
			delete(r, "guidance")
			got[name] = r
		}
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		if o, err := c.Observe("run1:s1"); err != nil || o.Status != supervise.StateWaiting {
			t.Errorf("the asking worker is %s (%v), want waiting", o.Status, err)
		}
		call("escalated", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "escalateTo": "parent", "escalateReason": "not mine to say"})
		call("stop while open", supervise.VerbStop, map[string]any{"reason": "enough"})
		call("two decisions", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "red", "deferReason": "later"})
		call("escalate to a boss", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "escalateTo": "boss"})
		call("unknown question", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q9", "answer": "red"})
		call("deferred", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "deferReason": "pick any colour"})
		call("decided again", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "red"})
		call("settled", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		call("bad level", supervise.VerbAskParent, map[string]any{"level": "manager", "question": "ship it?", "reason": "r", "urgency": "blocks-step"})
		call("own question", supervise.VerbAskParent, map[string]any{"level": "driver", "question": "ship it?", "reason": "the task is vague", "urgency": "blocks-step"})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	settled, _ := got["settled"]["event"].(map[string]any)
	own := got["own question"]
	delete(own, "questionId")
	for name, want := range map[string]map[string]any{
		"escalated":          {"questionId": "q1", "delivered": false, "status": "no-parent"},
		"stop while open":    {"error": "unresolved-blocking-questions"},
		"two decisions":      {"error": "invalid-decision"},
		"escalate to a boss": {"error": "invalid-decision"},
		"unknown question":   {"error": "unknown-question"},
		"deferred":           {"questionId": "q1", "delivered": true, "status": "deferred"},
		"decided again":      {"error": "already-decided"},
		"own question":       {"status": "no-parent"},
		"bad level":          {"error": "invalid-question"},
	} {
		if diff := cmp.Diff(want, got[name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	// A question that reached no parent tells the manager it is the
	// last decider (§3.6 escalateQuestion).
	if want := map[string]bool{"escalated": true, "own question": true}; !cmp.Equal(want, guided) {
		t.Errorf("guided replies %v, want %v", guided, want)
	}
	if settled["output"] != "defer:  DONE" {
		t.Errorf("the worker did not go on with the deferral: %v", got["settled"])
	}
}
