package supervise_test

// Second-pass outside scenarios for questions across a nested manager
// (§3.6 "Questions", "escalateQuestion … forwarded to nested managers";
// §9 answer_question "answers are routed down and resolve only when
// delivered", stop "refused while blocking questions are undecided";
// §15 behaviour 54).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

const outside2NestedManagerDoc = `{"name": "m", "harness": "cli-base", "model": {"default": "scripted/m"},
  "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
    "agent_runtime_coordination_answer_question": true, "agent_runtime_coordination_list_questions": true,
    "agent_runtime_coordination_ask_parent": true, "agent_runtime_coordination_stop": true}}`

// Behaviour 54 through a nested manager: a worker two levels down asks a
// blocks-run question; its manager (nested) escalates it to its parent.
// The outer manager then holds an undecided blocking question: its stop
// is refused; its answer is routed down to the asking worker, and once
// delivered the outer stop succeeds. The nested manager's own stop is
// refused while the question it escalated is undecided (escalate is no
// decision that unblocks the asker).
func TestOutside2NestedEscalatedBlockingQuestionHoldsOuterStop(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.Profiles["m"] = outsideProfile(t, outside2NestedManagerDoc)
	nestedStop := make(chan error, 1)
	r.opts.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "deep-ask", Parent: c.Self()}); err != nil {
				return supervise.BrainReport{}, err
			}
			ev, err := awaitKind(ctx, c, supervise.EventQuestion)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, EscalateTo: "parent", EscalateReason: "not mine to decide"}); err != nil {
				return supervise.BrainReport{}, err
			}
			st, err := c.Stop(supervise.StopArgs{Reason: "nested done?"})
			if err == nil && st.Stopped {
				nestedStop <- errors.New("the nested manager's stop was accepted with its escalated blocks-run question undecided")
			} else {
				nestedStop <- nil
			}
			if err := awaitSettlementOf(ctx, c, ev.Question.From); err != nil {
				return supervise.BrainReport{}, err
			}
			return supervise.BrainReport{Text: "PASS nested"}, nil
		})
	}
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "m", Task: "manage"}); err != nil {
			return err
		}
		r.workers.waitStarted(t, "deep-ask")
		r.workers.finishWith("deep-ask", outsideOutcome{res: supervise.WorkResult{Text: "deep", Spent: outsideSpent(100)}, ask: askAndReport(supervise.UrgencyBlocksRun)})
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return err
		}
		if ev.Question == nil || ev.Question.Urgency != supervise.UrgencyBlocksRun {
			t.Errorf("the escalated question at the outer manager = %+v, want blocks-run", ev.Question)
			return errors.New("bad question")
		}
		select {
		case e := <-nestedStop:
			if e != nil {
				t.Error(e)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
		st, err := c.Stop(supervise.StopArgs{Reason: "outer done?"})
		if codeOf(err) != "unresolved-blocking-questions" || st.Stopped {
			t.Errorf("outer stop with an escalated, undecided blocks-run question = %+v, %v; want unresolved-blocking-questions", st, err)
		}
		ans, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "postgres"})
		if err != nil {
			t.Errorf("answering the escalated question: %v", err)
			return nil
		}
		if !ans.Delivered {
			t.Errorf("answer_question of the escalated question = %+v, want delivered to the asking worker", ans)
		}
		if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
			return err
		}
		st, err = c.Stop(supervise.StopArgs{Reason: "answered"})
		if err != nil || !st.Stopped {
			t.Errorf("outer stop after the answer was delivered = %+v, %v; want stopped", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("result %s %s, want a winner", res.Status, res.Reason)
	}
	if n := r.workers.Calls("deep-ask"); n != 1 {
		t.Errorf("the asking worker ran %d times, want once", n)
	}
}

// A blocks-run question escalated through a nested manager whose asking
// worker then gave up (settled without a decision) no longer holds the
// outer manager's stop: nobody waits for it, as for a question outlived
// by its worker at the manager it was asked of. The outer manager lists
// it expired, and answering it delivers nothing.
func TestOutside2EscalatedQuestionOutlivedByItsWorker(t *testing.T) {
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
			// The nested manager lives on until the outer one has
			// looked at the escalated question.
			select {
			case <-outerDone:
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
		r.workers.finishWith("deep-ask", outsideOutcome{res: supervise.WorkResult{Text: "gave up PASS", Spent: outsideSpent(100)},
			ask: func(ctx context.Context, w supervise.Work) string {
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
			}})
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return err
		}
		close(giveUp)
		// The worker settles at its manager; poll the outer manager's
		// view of the question, bounded.
		deadline := time.Now().Add(outsideWait)
		for {
			l := c.ListQuestions()
			if len(l.Questions) == 1 && l.Questions[0].Status == "expired" {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("outer list_questions after the asking worker gave up = %+v, want the escalated question expired", l)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		st, err := c.Stop(supervise.StopArgs{})
		if err != nil || !st.Stopped {
			t.Errorf("outer stop with only an escalated question whose asker gave up = %+v, %v; want stopped", st, err)
		}
		ans, _ := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "yes"})
		if ans.Delivered {
			t.Errorf("answering it = %+v, want nothing delivered", ans)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}
