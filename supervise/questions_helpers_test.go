package supervise_test

// Shared scaffolding of the question scenarios (§3.6 "Questions", §9
// ask_parent / answer_question / list_questions, §15 behaviour 54): askers
// that give up or hand out their cancel, the nested manager that escalates
// its worker's question to its parent, bounded polls of a manager's view,
// and the checks a resumed run's questions share.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

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

// cancellableAsk is a worker that sends the cancel of its question's wait
// on cancels before it asks "which?" with urgency u, and then whether Ask
// returned a decision on got: the scenario ends its wait when it chooses.
func cancellableAsk(cancels chan<- context.CancelFunc, got chan<- bool, u supervise.Urgency) func(ctx context.Context, w supervise.Work) string {
	return func(ctx context.Context, w supervise.Work) string {
		qctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cancels <- cancel
		_, err := w.Ask(qctx, supervise.AskArgs{Level: "worker", Question: "which?", Reason: "r", Urgency: u})
		got <- err == nil
		return ""
	}
}

// nestedEscalator is the brain of the nested manager "m" of the scenarios
// of a question escalated through a nested manager: it spawns worker
// "deep-ask", takes that worker's question and escalates it to its parent
// (with reason).
type nestedEscalator struct {
	reason string
	// then, when set, runs right after the escalation.
	then func(ctx context.Context, c *supervise.Coordinator)
	// awaitAsker makes it await the asking worker's settlement next.
	awaitAsker bool
	// until, when set, keeps it alive until closed (or its context
	// ends): the outer manager looks at the escalated question meanwhile.
	until <-chan struct{}
}

// install makes e the brain of r's nested manager "m".
func (e nestedEscalator) install(t *testing.T, r *outsideRun) {
	t.Helper()
	r.opts.Profiles["m"] = outsideProfile(t, outside2NestedManagerDoc)
	r.opts.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "w", Task: "deep-ask", Parent: c.Self()}); err != nil {
				return supervise.BrainReport{}, err
			}
			ev, err := awaitKind(ctx, c, supervise.EventQuestion)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, EscalateTo: "parent", EscalateReason: e.reason}); err != nil {
				return supervise.BrainReport{}, err
			}
			if e.then != nil {
				e.then(ctx, c)
			}
			if e.awaitAsker {
				if err := awaitSettlementOf(ctx, c, ev.Question.From); err != nil {
					return supervise.BrainReport{}, err
				}
			}
			if e.until != nil {
				select {
				case <-e.until:
				case <-ctx.Done():
				}
			}
			return supervise.BrainReport{Text: "PASS nested"}, nil
		})
	}
}

// spawnDeepAsk spawns the nested manager "m" (see nestedEscalator) and
// releases its worker "deep-ask" with out once it started.
func (r *outsideRun) spawnDeepAsk(ctx context.Context, t *testing.T, c *supervise.Coordinator, out outsideOutcome) error {
	t.Helper()
	if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "m", Task: "manage"}); err != nil {
		return err
	}
	r.workers.waitStarted(t, "deep-ask")
	r.workers.finishWith("deep-ask", out)
	return nil
}

// pollWithin polls cond every interval until it holds (true) or
// outsideWait has passed (false): a scenario's bounded wait for a state
// it cannot await as an event.
func pollWithin(interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(outsideWait)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
	return true
}

// waitAnswered waits, failing the test after outsideWait, until the
// question list_questions shows at index at (of the list's length) is
// answered: the decision is taken though it still waits to be journaled.
func waitAnswered(t *testing.T, c *supervise.Coordinator, at func(n int) int, what string) {
	t.Helper()
	if !pollWithin(time.Millisecond, func() bool {
		l := c.ListQuestions()
		return l.Questions[at(len(l.Questions))].Status == "answered"
	}) {
		t.Fatalf("%sthe answer was not taken within %v", what, outsideWait)
	}
}

// askingRunOn returns a runner of flat supervised runs of askingExecutor's
// workers on dir: each runs brain (resumed when resume) and fails the
// test when Supervise fails.
func askingRunOn(t *testing.T, dir string) func(resume bool, brain supervise.BrainFunc) {
	return func(resume bool, brain supervise.BrainFunc) {
		t.Helper()
		o := baseOptions(t, askingExecutor, nil)
		o.RunDir, o.Resume, o.Brain = dir, resume, brain
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
			t.Fatal(err)
		}
	}
}

// answerQ1LeaveQ2 is the first process of the resumed-questions tests:
// the worker painting the door asks q1, answered red, and settles; the
// one painting the wall asks q2, left undecided when the brain returns.
func answerQ1LeaveQ2(t *testing.T) supervise.BrainFunc {
	return func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the door"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "red"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the wall"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	}
}

// questionStatuses is each listed question's id and status, in order.
func questionStatuses(listed []supervise.Question) [][2]string {
	var got [][2]string
	for _, q := range listed {
		got = append(got, [2]string{q.ID, q.Status})
	}
	return got
}

// checkQuestionIDsOnce fails the test when a question id is journaled
// twice in dir's coordination log (RES-03: ids never repeat across
// processes); it returns the log for the caller's further checks.
func checkQuestionIDsOnce(t *testing.T, dir string) []supervise.CoordRecord {
	t.Helper()
	log, _, err := supervise.ReadCoordinationLog(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range log {
		if r.Kind == supervise.CoordQuestion {
			if seen[r.QuestionID] {
				t.Errorf("question id %s journaled twice in the coordination log", r.QuestionID)
			}
			seen[r.QuestionID] = true
		}
	}
	return log
}

// checkRootAnswerReachedLead checks a resumed run of the asking lead
// (askingRoot/askingLead): the root's answer_question of q1 was delivered
// (fatal otherwise), the lead's inbox brought it, and the run ended with
// a winner.
func checkRootAnswerReachedLead(t *testing.T, g *askGate, res supervise.SupervisedResult) {
	t.Helper()
	g.mu.Lock()
	saw, answered := slices.Clone(g.leadSaw), g.rootAnswered
	g.mu.Unlock()
	if !strings.Contains(answered, `"delivered":true`) {
		t.Fatalf("the resumed root's answer_question: %q, want q1 delivered", answered)
	}
	if len(saw) == 0 || !strings.HasPrefix(saw[0], "Answer to your question q1: red") {
		t.Errorf("the resumed lead's inbox brought %q, want the root's answer to q1", saw)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("the resumed run: %s %s", res.Status, res.Reason)
	}
}
