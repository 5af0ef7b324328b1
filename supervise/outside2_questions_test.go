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
	nestedStop := make(chan error, 1)
	nestedEscalator{reason: "not mine to decide", awaitAsker: true, then: func(_ context.Context, c *supervise.Coordinator) {
		st, err := c.Stop(supervise.StopArgs{Reason: "nested done?"})
		if err == nil && st.Stopped {
			nestedStop <- errors.New("the nested manager's stop was accepted with its escalated blocks-run question undecided")
		} else {
			nestedStop <- nil
		}
	}}.install(t, r)
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		if err := r.spawnDeepAsk(ctx, t, c, outsideOutcome{res: supervise.WorkResult{Text: "deep", Spent: outsideSpent(100)}, ask: askAndReport(supervise.UrgencyBlocksRun)}); err != nil {
			return err
		}
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
	giveUp := make(chan struct{})
	outerDone := make(chan struct{})
	// The nested manager lives on until the outer one has looked at the
	// escalated question.
	nestedEscalator{awaitAsker: true, until: outerDone}.install(t, r)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		defer close(outerDone)
		if err := r.spawnDeepAsk(ctx, t, c, outsideOutcome{res: supervise.WorkResult{Text: "gave up PASS", Spent: outsideSpent(100)}, ask: giveUpAsk(giveUp)}); err != nil {
			return err
		}
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return err
		}
		close(giveUp)
		// The worker settles at its manager; poll the outer manager's
		// view of the question, bounded.
		var l supervise.QuestionList
		if !pollWithin(10*time.Millisecond, func() bool {
			l = c.ListQuestions()
			return len(l.Questions) == 1 && l.Questions[0].Status == "expired"
		}) {
			t.Errorf("outer list_questions after the asking worker gave up = %+v, want the escalated question expired", l)
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
