package supervise_test

// Second-pass outside scenario: steer_agent to a worker while it waits
// on its own question (§9 steer_agent, ask_parent; §3.6 "Steering",
// "Questions").

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// askingInboxExecutor's workers read their inbox between turns
// (InboxReader): each asks its manager a blocks-run question, and its
// next turn takes what its inbox holds; its result reports both.
type askingInboxExecutor struct{}

func (askingInboxExecutor) ReadsInbox() bool { return true }

func (askingInboxExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which database?", Reason: "two are installed", Urgency: supervise.UrgencyBlocksRun})
	if err != nil {
		return supervise.WorkResult{Spent: outsideSpent(10)}, err
	}
	text := "answer:" + d.Answer
	if w.Inbox != nil {
		for _, m := range w.Inbox.TakeOrSeal(ctx) {
			text += " steer:" + m.Message
		}
	}
	return supervise.WorkResult{Text: text + " PASS", Spent: outsideSpent(100)}, nil
}

// A manager steering a worker that waits on the manager's own
// blocks-run question must get its answer back without waiting for the
// worker's next turn — that turn comes only once this manager answers,
// so a steer_agent that waits for it holds the manager until the steer's
// wait ends (a deadlock bounded by MaxSteerWait). The manager can then
// answer, and the run completes.
func TestOutside2SteerWorkerWaitingOnItsQuestion(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.Executor = askingInboxExecutor{}
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "ask"})
		if err != nil {
			return err
		}
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return err
		}
		start := time.Now()
		st, err := c.Steer(ctx, supervise.SteerArgs{WorkerID: sp.WorkerID, Instruction: "prefer postgres"})
		took := time.Since(start)
		if err != nil {
			return err
		}
		if took > outsideWait/2 {
			t.Errorf("steer_agent to a worker waiting on this manager's question took %v (outcome %s: %s); it waits for a turn only this manager's answer allows", took, st.Outcome, st.Reason)
		}
		if st.Outcome == "" || st.Reason == "" && !st.Delivered {
			t.Errorf("steer_agent = %+v, want an outcome with its reason", st)
		}
		ans, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "postgres"})
		if err != nil || !ans.Delivered {
			t.Errorf("answer_question after the steer = %+v, %v; want delivered", ans, err)
		}
		_, err = awaitKind(ctx, c, supervise.EventSettled)
		return err
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Winner == nil || !strings.HasPrefix(res.Winner.Text, "answer:postgres") {
		t.Errorf("result %s %s winner %+v; want the worker's answer", res.Status, res.Reason, res.Winner)
	}
}

// The same through a nested manager: a worker two levels down whose
// blocks-run question its manager escalated to the root waits for the
// root's decision, so the root's steer_agent to it is refused at once
// rather than held; the root's answer then reaches it.
func TestOutside2SteerGrandchildWaitingOnEscalatedQuestion(t *testing.T) {
	r := newOutsideRun(t)
	r.opts.Executor = askingInboxExecutor{}
	nestedEscalator{awaitAsker: true}.install(t, r)
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "m", Task: "manage"}); err != nil {
			return err
		}
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return err
		}
		start := time.Now()
		st, err := c.Steer(ctx, supervise.SteerArgs{WorkerID: ev.Question.From, Instruction: "prefer postgres"})
		if err != nil {
			return err
		}
		if took := time.Since(start); took > outsideWait/2 || st.Delivered {
			t.Errorf("root steer_agent to a grandchild waiting on the root's decision = %+v after %v; want refused at once", st, took)
		}
		ans, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "postgres"})
		if err != nil || !ans.Delivered {
			t.Errorf("answer_question = %+v, %v; want delivered", ans, err)
		}
		_, err = awaitKind(ctx, c, supervise.EventSettled)
		return err
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("result %s %s, want a winner", res.Status, res.Reason)
	}
}
