package supervise_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// §9 await_event, §3.6 Questions: a question event await_event returns
// says what the question is now, as list_questions does. A worker that
// stopped waiting for its answer and settled left its question expired,
// yet await_event still handed the manager the question as "open" (its
// snapshot at the ask) — a manager answering it learned only then that
// nobody waits. The same for the root's own ask_parent that reached no
// parent: listed expired, awaited open.
func TestAwaitedQuestionCarriesItsCurrentStatus(t *testing.T) {
	o := baseOptions(t, supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		actx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, _ = w.Ask(actx, supervise.AskArgs{Level: "worker", Question: "which colour?", Reason: "the task does not say", Urgency: supervise.UrgencyBlocksRun})
		return supervise.WorkResult{Text: "went on without an answer DONE", Spent: ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}}, nil
	}), nil)
	type seen struct{ id, listed, awaited string }
	var got []seen
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.AskParent(ctx, supervise.AskArgs{Level: "driver", Question: "which API?", Reason: "two", Urgency: supervise.UrgencyBlocksRun}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "paint"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if r, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 10_000}); err != nil || r.Event == nil {
			t.Fatalf("await settled: %+v %v", r, err)
		}
		listed := map[string]string{}
		for _, q := range c.ListQuestions().Questions {
			listed[q.ID] = q.Status
		}
		for range 2 {
			r, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventQuestion}, TimeoutMS: 1_000})
			if err != nil || r.Event == nil || r.Event.Question == nil {
				t.Fatalf("await question: %+v %v", r, err)
			}
			got = append(got, seen{r.Event.Question.ID, listed[r.Event.Question.ID], r.Event.Question.Status})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("awaited %d questions, want 2", len(got))
	}
	for _, s := range got {
		if s.listed != "expired" || s.awaited != s.listed {
			t.Errorf("question %s: await_event says %q, list_questions %q; want both expired", s.id, s.awaited, s.listed)
		}
	}
}
