package supervise_test

// QR13: questions across nested managers (§3.6 "Questions", §9
// ask_parent / answer_question / list_questions / stop, §15 behaviour 54).

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// askUpWaiters counts the goroutines waiting, for a nested manager, on a
// decision made upstream (askUp's).
func askUpWaiters() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "supervise.(*Coordinator).askUp.func")
}

// giveUpAsk is a worker that asks a blocks-run question and gives up
// waiting once giveUp is closed.
func giveUpAsk(giveUp <-chan struct{}) func(ctx context.Context, w supervise.Work) string {
	return func(ctx context.Context, w supervise.Work) string {
		qctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-giveUp:
			case <-qctx.Done():
			}
			cancel()
		}()
		if _, err := w.Ask(qctx, supervise.AskArgs{Level: "worker", Question: "may I?", Reason: "r", Urgency: supervise.UrgencyBlocksRun}); err == nil {
			return " (answered)"
		}
		return ""
	}
}

// checklist: behaviour 54 through a nested manager. A question a nested
// manager escalated whose asking worker gave up holds nothing at the
// nested manager any more: the wait for the parent's decision ends with
// the question, not with the nested manager (a long-lived nested manager
// with many abandoned questions would otherwise keep one goroutine each).
func TestQR13AbandonedEscalationEndsItsUpstreamWait(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.Profiles["m"] = outsideProfile(t, outside2NestedManagerDoc)
	giveUp := make(chan struct{})
	outerDone := make(chan struct{})
	r.opts.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "deep-ask", Parent: c.Self()}); err != nil {
				return supervise.BrainReport{}, err
			}
			ev, err := awaitKind(ctx, c, supervise.EventQuestion)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, EscalateTo: "parent"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if err := awaitSettlementOf(ctx, c, ev.Question.From); err != nil {
				return supervise.BrainReport{}, err
			}
			select {
			case <-outerDone: // the nested manager lives on meanwhile
			case <-ctx.Done():
			}
			return supervise.BrainReport{Text: "PASS nested"}, nil
		})
	}
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		defer close(outerDone)
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "m", Task: "manage"}); err != nil {
			return err
		}
		r.workers.waitStarted(t, "deep-ask")
		r.workers.finishWith("deep-ask", outsideOutcome{res: supervise.WorkResult{Text: "gave up PASS", Spent: outsideSpent(100)}, ask: giveUpAsk(giveUp)})
		if _, err := awaitKind(ctx, c, supervise.EventQuestion); err != nil {
			return err
		}
		// The wait starts once the escalated question is journaled at
		// the outer manager: poll for it, bounded.
		deadline := time.Now().Add(outsideWait)
		for askUpWaiters() != 1 {
			if time.Now().After(deadline) {
				t.Errorf("%d goroutines wait on the escalated question's decision, want 1", askUpWaiters())
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		close(giveUp)
		deadline = time.Now().Add(outsideWait)
		for askUpWaiters() != 0 {
			if time.Now().After(deadline) {
				t.Errorf("the nested manager still waits for the decision on a question whose asker gave up: %d askUp goroutines after %v", askUpWaiters(), outsideWait)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}
