package supervise_test

// Outside scenarios for questions (§3.6 "Questions", §9 ask_parent,
// list_questions, answer_question, stop; §15 behaviour 54), written from
// the spec before reading the package's own tests.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// askAndReport is a worker that asks its manager one question of urgency u
// and reports the decision it received as its result.
func askAndReport(u supervise.Urgency) func(ctx context.Context, w supervise.Work) string {
	return func(ctx context.Context, w supervise.Work) string {
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which database?", Reason: "two are installed", Urgency: u,
			Options: []supervise.QuestionOption{{Label: "postgres"}, {Label: "sqlite"}}})
		if err != nil {
			return fmt.Sprintf(" ask failed: %v", err)
		}
		return fmt.Sprintf(" got %s:%s%s%s PASS", d.Kind, d.Answer, d.DeferReason, d.EscalateTo)
	}
}

// Behaviour 54: stop is refused while a blocks-run question is undecided
// and accepted once answer_question delivered the decision; the worker
// sees the answer; answering again is refused, and so is an unknown id.
func TestOutsideStopRefusedUntilBlockingQuestionAnswered(t *testing.T) {
	r := newOutsideRun(t)
	var workerID supervise.NodeID
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "ask", Label: "asker"})
		if err != nil {
			return err
		}
		workerID = sp.WorkerID
		r.workers.waitStarted(t, "ask")
		r.workers.finishWith("ask", outsideOutcome{res: supervise.WorkResult{Text: "worker", Spent: outsideSpent(100)}, ask: askAndReport(supervise.UrgencyBlocksRun)})
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return err
		}
		q := ev.Question
		if q == nil || q.From != sp.WorkerID || q.Urgency != supervise.UrgencyBlocksRun || q.Question != "which database?" || q.Status != "open" {
			t.Errorf("question event = %+v, want an open blocks-run question from %s", q, sp.WorkerID)
			return errors.New("bad question")
		}
		if l := c.ListQuestions(); len(l.Questions) != 1 || l.Questions[0].ID != q.ID || l.Questions[0].Status != "open" {
			t.Errorf("list_questions = %+v, want the one open question", l)
		}
		st, err := c.Stop(supervise.StopArgs{Reason: "done?"})
		if codeOf(err) != "unresolved-blocking-questions" || st.Stopped {
			t.Errorf("stop with an undecided blocks-run question = %+v, %v; want refused unresolved-blocking-questions", st, err)
		}
		ans, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, Answer: "postgres"})
		if err != nil || !ans.Delivered {
			t.Errorf("answer_question = %+v, %v; want delivered", ans, err)
		}
		settled, err := awaitKind(ctx, c, supervise.EventSettled)
		if err != nil {
			return err
		}
		if settled.Delivered == nil || !*settled.Delivered {
			t.Errorf("the worker's settlement = %+v, want delivered", settled)
		}
		if l := c.ListQuestions(); len(l.Questions) != 1 || l.Questions[0].Status != "answered" {
			t.Errorf("list_questions after delivery = %+v, want the question answered", l)
		}
		again, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, Answer: "sqlite"})
		if err == nil || again.Delivered {
			t.Errorf("answering twice = %+v, %v; want refused", again, err)
		}
		if code := codeOf(err); code != "already-decided" {
			t.Errorf("answering twice refused %q (%v), want already-decided", code, err)
		}
		unknown, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: "no-such-question", Answer: "x"})
		if err == nil || unknown.Delivered || codeOf(err) == "" {
			t.Errorf("answering an unknown id = %+v, %v; want a refusal with a code", unknown, err)
		}
		st, err = c.Stop(supervise.StopArgs{Reason: "answered"})
		if err != nil || !st.Stopped {
			t.Errorf("stop after the answer was delivered = %+v, %v; want stopped", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != workerID {
		t.Fatalf("result = %s %s (winner %+v), want the asking worker's winner", res.Status, res.Reason, res.Winner)
	}
	if want := "worker got answer:postgres PASS"; res.Winner.Text != want {
		t.Errorf("what the worker saw of the answer: %q, want %q", res.Winner.Text, want)
	}
}

// §3.6 "Blocking undecided questions make stop refuse": both blocking
// urgencies hold stop; continue-without does not.
func TestOutsideStopAndUrgency(t *testing.T) {
	for _, tc := range []struct {
		urgency supervise.Urgency
		refused bool
	}{
		{supervise.UrgencyBlocksRun, true},
		{supervise.UrgencyBlocksStep, true},
		{supervise.UrgencyContinueWithout, false},
	} {
		t.Run(string(tc.urgency), func(t *testing.T) {
			r := newOutsideRun(t)
			_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "ask"}); err != nil {
					return err
				}
				r.workers.waitStarted(t, "ask")
				r.workers.finishWith("ask", outsideOutcome{res: supervise.WorkResult{Spent: outsideSpent(100)}, ask: askAndReport(tc.urgency)})
				ev, err := awaitKind(ctx, c, supervise.EventQuestion)
				if err != nil {
					return err
				}
				st, err := c.Stop(supervise.StopArgs{})
				if tc.refused && (st.Stopped || codeOf(err) != "unresolved-blocking-questions") {
					t.Errorf("stop with an undecided %s question = %+v, %v; want refused", tc.urgency, st, err)
				}
				if !tc.refused && (err != nil || !st.Stopped) {
					t.Errorf("stop with an undecided %s question = %+v, %v; want stopped", tc.urgency, st, err)
				}
				if tc.refused {
					if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "postgres"}); err != nil {
						return err
					}
					if _, err := c.Stop(supervise.StopArgs{}); err != nil {
						t.Errorf("stop after the answer: %v", err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Supervise: %v", err)
			}
		})
	}
}

// A deferral and an escalation are decisions too (§3.6 "decisions
// answer|defer|escalate(parent|user)"): what the worker sees of each, and
// whether stop is then accepted. A root manager's escalation to its parent
// goes to EscalateQuestion; the question stays undecided (it holds stop)
// until the manager answers it.
func TestOutsideDeferAndEscalate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		decision supervise.AnswerArgs
		hook     bool
		// seen is what the worker reports, "" when the decision does not
		// reach it (the question stays undecided).
		seen       string
		status     string
		stopAfter  bool
		wantListed string
	}{
		{name: "defer", decision: supervise.AnswerArgs{DeferReason: "decide later"}, seen: " got defer:decide later PASS", stopAfter: true, wantListed: "deferred"},
		{name: "escalate-parent-no-hook", decision: supervise.AnswerArgs{EscalateTo: "parent"}, status: supervise.StatusNoParent, stopAfter: false, wantListed: "open"},
		{name: "escalate-parent-hook", decision: supervise.AnswerArgs{EscalateTo: "parent"}, hook: true, status: supervise.StatusQueuedForParent, stopAfter: false, wantListed: "escalated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newOutsideRun(t)
			var escalated []string
			if tc.hook {
				r.opts.EscalateQuestion = func(_ context.Context, q supervise.Question) (supervise.EscalationOutcome, error) {
					escalated = append(escalated, q.ID)
					return supervise.EscalationOutcome{Delivered: true, To: "operator"}, nil
				}
			}
			res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
				ev, err := r.askBlocking(ctx, t, c)
				if err != nil {
					return err
				}
				d := tc.decision
				d.QuestionID = ev.Question.ID
				ans, err := c.AnswerQuestion(ctx, d)
				if err != nil {
					t.Errorf("answer_question %+v: %v", d, err)
					return err
				}
				if tc.status != "" && ans.Status != tc.status {
					t.Errorf("answer_question %+v = %+v, want status %s", d, ans, tc.status)
				}
				if l := c.ListQuestions(); len(l.Questions) != 1 || l.Questions[0].Status != tc.wantListed {
					t.Errorf("list_questions after %s = %+v, want status %s", tc.name, l, tc.wantListed)
				}
				if tc.seen != "" {
					if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
						return err
					}
				}
				st, err := c.Stop(supervise.StopArgs{})
				if tc.stopAfter != st.Stopped {
					t.Errorf("stop after %s = %+v, %v; want stopped=%v", tc.name, st, err, tc.stopAfter)
				}
				if !st.Stopped {
					if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "postgres"}); err != nil {
						t.Errorf("answering the escalated question: %v", err)
					}
					if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
						return err
					}
					if st, err := c.Stop(supervise.StopArgs{}); err != nil || !st.Stopped {
						t.Errorf("stop after the manager answered = %+v, %v", st, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Supervise: %v", err)
			}
			want := tc.seen
			if want == "" {
				want = " got answer:postgres PASS"
			}
			if res.Winner == nil || res.Winner.Text != "w"+want {
				t.Errorf("winner = %+v, want the worker's text %q", res.Winner, "w"+want)
			}
			if tc.hook && len(escalated) != 1 {
				t.Errorf("EscalateQuestion called %d times, want once", len(escalated))
			}
		})
	}
}

// A blocks-run question whose worker settled before any decision reached
// it no longer holds stop: nobody is waiting for it. Answering it does not
// report a delivery.
func TestOutsideQuestionOutlivedByItsWorker(t *testing.T) {
	r := newOutsideRun(t)
	giveUp := make(chan struct{})
	res, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "ask"}); err != nil {
			return err
		}
		r.workers.waitStarted(t, "ask")
		r.workers.finishWith("ask", outsideOutcome{res: supervise.WorkResult{Text: "gave up PASS", Spent: outsideSpent(100)}, ask: giveUpAsk(giveUp)})
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return err
		}
		close(giveUp)
		if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
			return err
		}
		if l := c.ListQuestions(); len(l.Questions) != 1 || l.Questions[0].Status != "expired" {
			t.Errorf("list_questions after its worker settled = %+v, want expired", l)
		}
		ans, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "yes"})
		if ans.Delivered {
			t.Errorf("answering a question whose worker settled = %+v, %v; want not delivered", ans, err)
		}
		st, err := c.Stop(supervise.StopArgs{})
		if err != nil || !st.Stopped {
			t.Errorf("stop with only an expired blocks-run question = %+v, %v; want stopped", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
	if res.Winner == nil || res.Winner.Text != "gave up PASS" {
		t.Errorf("winner = %+v, want the worker's own result", res.Winner)
	}
}

// An answer_question call names exactly one decision (§9 answer|deferReason|
// escalateTo): none, two, or an escalation target other than parent|user
// is refused, and the question stays open.
func TestOutsideAnswerArgumentsRefused(t *testing.T) {
	r := newOutsideRun(t)
	_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		ev, err := r.askBlocking(ctx, t, c)
		if err != nil {
			return err
		}
		for _, a := range []supervise.AnswerArgs{
			{},
			{Answer: "a", DeferReason: "b"},
			{Answer: "a", EscalateTo: "parent"},
			{EscalateTo: "nobody"},
		} {
			a.QuestionID = ev.Question.ID
			got, err := c.AnswerQuestion(ctx, a)
			if err == nil || got.Delivered {
				t.Errorf("answer_question %+v = %+v, %v; want refused", a, got, err)
			}
		}
		if l := c.ListQuestions(); len(l.Questions) != 1 || l.Questions[0].Status != "open" {
			t.Errorf("list_questions after refused answers = %+v, want open", l)
		}
		if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "postgres"}); err != nil {
			return err
		}
		_, err = awaitKind(ctx, c, supervise.EventSettled)
		return err
	})
	if err != nil {
		t.Fatalf("Supervise: %v", err)
	}
}

// The root manager's own ask_parent (§3.6 escalateQuestion): without the
// hook it reaches no parent (no default operator queue); with it,
// queued-for-parent naming who holds it. A question over MaxQuestionBytes
// is refused.
func TestOutsideRootAskParent(t *testing.T) {
	for _, hook := range []bool{false, true} {
		t.Run(fmt.Sprintf("hook=%v", hook), func(t *testing.T) {
			r := newOutsideRun(t)
			if hook {
				r.opts.EscalateQuestion = func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
					return supervise.EscalationOutcome{Delivered: true, To: "operator"}, nil
				}
			}
			_, err := r.drive(func(ctx context.Context, c *supervise.Coordinator) error {
				got, err := c.AskParent(ctx, supervise.AskArgs{Level: "driver", Question: "ship?", Reason: "r", Urgency: supervise.UrgencyContinueWithout})
				if err != nil {
					return err
				}
				want := supervise.StatusNoParent
				if hook {
					want = supervise.StatusQueuedForParent
				}
				if got.Status != want || got.QuestionID == "" {
					t.Errorf("ask_parent = %+v, want status %s with an id", got, want)
				}
				if hook && got.To != "operator" {
					t.Errorf("ask_parent = %+v, want to: operator", got)
				}
				huge, err := c.AskParent(ctx, supervise.AskArgs{Level: "driver", Question: strings.Repeat("q", supervise.MaxQuestionBytes+1), Reason: "r", Urgency: supervise.UrgencyContinueWithout})
				if err == nil {
					t.Errorf("ask_parent over MaxQuestionBytes = %+v, want refused", huge)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Supervise: %v", err)
			}
		})
	}
}

// A run cut (its caller's context cancelled) while a worker's blocks-run
// question is open, then resumed on the same run dir: the question's asker
// is gone, so the resumed manager lists it expired, and it does not hold
// stop; the worker's key is retried (behaviour 44), not in doubt.
func TestOutsideResumeWithOpenQuestion(t *testing.T) {
	r := newOutsideRun(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var asker supervise.NodeID
	res1, err := r.driveCtx(ctx, func(ctx context.Context, c *supervise.Coordinator) error {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "ask", Key: "k"})
		if err != nil {
			return err
		}
		asker = sp.WorkerID
		r.workers.waitStarted(t, "ask")
		r.workers.finishWith("ask", outsideOutcome{res: supervise.WorkResult{Spent: outsideSpent(100)}, ask: askAndReport(supervise.UrgencyBlocksRun)})
		if _, err := awaitKind(ctx, c, supervise.EventQuestion); err != nil {
			return err
		}
		cancel() // the host goes away with the question open
		<-ctx.Done()
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("first Supervise: %v", err)
	}
	if res1.Reason != supervise.ReasonAborted {
		t.Fatalf("first run = %s %s, want aborted", res1.Status, res1.Reason)
	}

	r2 := newOutsideRun(t)
	r2.opts.RunDir, r2.opts.Resume = r.opts.RunDir, true
	_, err = r2.drive(func(ctx context.Context, c *supervise.Coordinator) error {
		l := c.ListQuestions()
		if len(l.Questions) != 1 || l.Questions[0].From != asker || l.Questions[0].Status != "expired" {
			t.Errorf("resumed list_questions = %+v, want the question from %s expired", l, asker)
		}
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "ask", Key: "k"})
		if err != nil || sp.Resumed != supervise.ResumedRetried || sp.PriorWorker != asker {
			t.Errorf("resumed spawn of the asker's key = %+v, %v; want retried from %s", sp, err, asker)
		}
		if err == nil {
			r2.workers.waitStarted(t, "ask")
			r2.workers.finish("ask", "PASS again")
			if _, err := awaitKind(ctx, c, supervise.EventSettled); err != nil {
				return err
			}
		}
		st, err := c.Stop(supervise.StopArgs{})
		if err != nil || !st.Stopped {
			t.Errorf("resumed stop with only an expired question = %+v, %v; want stopped", st, err)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("resumed Supervise: %v", err)
	}
}

// askBlocking spawns worker "ask", has it ask a blocks-run question and
// returns the question's event as the manager awaits it.
func (r *outsideRun) askBlocking(ctx context.Context, t *testing.T, c *supervise.Coordinator) (*supervise.Event, error) {
	t.Helper()
	if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "ask"}); err != nil {
		return nil, err
	}
	r.workers.waitStarted(t, "ask")
	r.workers.finishWith("ask", outsideOutcome{res: supervise.WorkResult{Text: "w", Spent: outsideSpent(100)}, ask: askAndReport(supervise.UrgencyBlocksRun)})
	return awaitKind(ctx, c, supervise.EventQuestion)
}
