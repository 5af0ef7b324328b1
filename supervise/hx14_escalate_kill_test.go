package supervise_test

// HX14: a question a worker asks its nested manager, escalated to the
// outer manager, across a real SIGKILL of the supervisor process and a
// resume from the same run dir (§3.6 "Questions", "Persistence &
// resume"; §9 answer_question "answers are routed down and resolve only
// when delivered", stop "refused while blocking questions are
// undecided"; checklist: questions across nested managers and resume).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// hx14KillEnv makes the test binary the child of
// TestHX14EscalatedQuestionAcrossKill: it runs the tree in the dir
// childDir names and SIGKILLs itself at the point the variable's value
// names ("before": the escalated question is journaled at the outer
// manager and not answered; "after": the outer answer is journaled and
// reached the asker).
const hx14KillEnv = "AGENTRT_HX14_ESCALATE_KILL_CHILD"

// hx14Record is what one process's brains and worker saw.
type hx14Record struct {
	mu            sync.Mutex
	workerGot     []string // decisions the asking workers received
	rootEarlier   []supervise.Question
	rootFinal     []supervise.Question
	rootOldAnswer string // answering the earlier escalated question again
	rootNewAnswer supervise.AnswerResult
	rootStop      string
	leadEscalate  []string // answer_question escalateTo parent, per question: status or refusal
	leadEarlier   []supervise.Question
}

func (r *hx14Record) add(f func(r *hx14Record)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r)
}

// hx14Options are the options of every process: the root spawns a lead
// (a nested manager, keyed, so the resumed root re-attaches), the lead
// spawns a worker that asks it a blocks-run question, and the lead
// escalates it to the root. kill, when set, is called by the root at
// the child's kill point; rec gathers what was seen.
func hx14Options(t testing.TB, dir, phase string, kill func(), rec *hx14Record) (supervise.Options, *profile.Profile, error) {
	ex := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which colour?", Reason: "the task does not say", Urgency: supervise.UrgencyBlocksRun})
		if err != nil {
			return supervise.WorkResult{}, fmt.Errorf("the ask: %w", err)
		}
		rec.add(func(r *hx14Record) { r.workerGot = append(r.workerGot, d.Kind+":"+d.Answer) })
		if kill != nil {
			if err := os.WriteFile(filepath.Join(dir, "asker-got"), []byte(d.Answer), 0o600); err != nil {
				return supervise.WorkResult{}, err
			}
			<-ctx.Done() // killed before it settles
			return supervise.WorkResult{}, context.Cause(ctx)
		}
		return supervise.WorkResult{Text: "colour " + d.Answer + " DONE", Spent: outsideSpent(100)}, nil
	})
	o, err := processOptions(ex, dir)
	if err != nil {
		return o, nil, err
	}
	tools := `"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
	  "agent_runtime_coordination_answer_question": true, "agent_runtime_coordination_list_questions": true,
	  "agent_runtime_coordination_ask_parent": true, "agent_runtime_coordination_stop": true`
	leadP, err := profile.Parse([]byte(`{"name": "lead", "harness": "cli-base", "tools": {` + tools + `}}`))
	if err != nil {
		return o, nil, err
	}
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {` + tools + `}}`))
	if err != nil {
		return o, nil, err
	}
	o.Profiles["lead"] = leadP
	resumed := kill == nil
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if resumed {
				earlier := c.ListQuestions().Questions
				rec.add(func(r *hx14Record) { r.leadEarlier = earlier })
				// §3.6: a nested manager's escalateTo parent goes to its
				// parent manager; one whose asker ended is no longer
				// anybody's question — but the lead has a parent.
				for _, q := range earlier {
					res, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, EscalateTo: "parent"})
					s := res.Status
					if err != nil {
						s = "refused " + codeOf(err)
					}
					rec.add(func(r *hx14Record) { r.leadEscalate = append(r.leadEscalate, q.ID+"="+s) })
				}
			}
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "ask colour", Parent: c.Self()})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			ev, err := awaitKind(ctx, c, supervise.EventQuestion)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			res, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, EscalateTo: "parent", EscalateReason: "not mine"})
			if err != nil || res.Status != "queued-for-parent" {
				return supervise.BrainReport{}, fmt.Errorf("the lead's escalation of %s: %+v %w", ev.Question.ID, res, err)
			}
			if err := awaitSettlementOf(ctx, c, sp.WorkerID); err != nil {
				return supervise.BrainReport{}, err
			}
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tokens, iterations := int64(5_000), int64(5)
		lead, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Key: "lead-1", Budget: &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations}})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if resumed {
			earlier := c.ListQuestions().Questions
			rec.add(func(r *hx14Record) { r.rootEarlier = earlier })
			for _, q := range earlier {
				res, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: q.ID, Answer: "green"})
				s := fmt.Sprintf("%s delivered=%v", res.Status, res.Delivered)
				if err != nil {
					s = "refused " + codeOf(err)
				}
				rec.add(func(r *hx14Record) { r.rootOldAnswer += q.ID + ":" + s + ";" })
			}
		}
		ev, err := awaitKind(ctx, c, supervise.EventQuestion)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		switch {
		case kill != nil && phase == "before":
			// The escalated question's record is journaled (its event
			// goes out just before), and nothing answered it.
			if err := pollFile(ctx, filepath.Join(dir, supervise.CoordinationLogFile), `"questionId":"`+ev.Question.ID+`"`); err != nil {
				return supervise.BrainReport{}, err
			}
			kill()
		case kill != nil:
			if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "red"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if err := pollFile(ctx, filepath.Join(dir, "asker-got"), "red"); err != nil {
				return supervise.BrainReport{}, err
			}
			kill()
		}
		res, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "blue"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		rec.add(func(r *hx14Record) { r.rootNewAnswer = res })
		if err := awaitSettlementOf(ctx, c, lead.WorkerID); err != nil {
			return supervise.BrainReport{}, err
		}
		final := c.ListQuestions().Questions
		_, serr := c.Stop(supervise.StopArgs{Reason: "done"})
		rec.add(func(r *hx14Record) { r.rootFinal, r.rootStop = final, codeOf(serr) })
		return supervise.BrainReport{}, nil
	})
	return o, manager, nil
}

// pollFile waits (bounded) until the file at path holds want.
func pollFile(ctx context.Context, path, want string) error {
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s never held %q", path, want)
}

// hx14ChildFromEnv runs the child when hx14KillEnv is set.
func hx14ChildFromEnv() (bool, error) {
	phase := os.Getenv(hx14KillEnv)
	if phase == "" {
		return false, nil
	}
	kill := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	o, manager, err := hx14Options(nil, os.Getenv(childDir), phase, kill, &hx14Record{})
	if err != nil {
		return true, err
	}
	_, err = supervise.Supervise(context.Background(), manager, "t", o)
	return true, fmt.Errorf("the hx14 child was not killed: %v", err)
}

// A worker asks its nested manager a blocks-run question; the manager
// escalates it to the outer manager; the supervisor process is SIGKILLed
// before the outer answer (the escalated question journaled) or after
// it (the answer journaled and received by the asker, which had not
// settled). The resumed run, on the same run dir: lists the earlier
// escalated question expired (before) or answered with the delivered
// decision (after), never open; answering it again delivers nothing;
// the lead driven again re-runs its asker, whose new question, escalated
// again, gets a fresh id and the outer answer reaches it exactly once;
// the outer stop is not held by a question whose asker ended. The
// resumed lead escalating an earlier question of its own (its asker
// ended) is not told no-parent: it has a parent manager.
func TestHX14EscalatedQuestionAcrossKill(t *testing.T) {
	for _, phase := range []string{"before", "after"} {
		t.Run(phase, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			runChildUntilKilled(t, ctx, "", hx14KillEnv+"="+phase, childDir+"="+dir)
			rec := &hx14Record{}
			o, manager, err := hx14Options(t, dir, phase, nil, rec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := superviseWhileHeld(ctx, time.Time{}, manager, "t", o)
			if err != nil {
				t.Fatal(err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			t.Logf("result %s %s; root earlier %+v; root old answer %s; root new %+v; final %+v; lead earlier %+v; lead escalate %v; worker got %v; stop %q",
				res.Status, res.Reason, rec.rootEarlier, rec.rootOldAnswer, rec.rootNewAnswer, rec.rootFinal, rec.leadEarlier, rec.leadEscalate, rec.workerGot, rec.rootStop)
			wantEarlier := map[string]string{"before": "expired", "after": "answered"}[phase]
			if len(rec.rootEarlier) != 1 || rec.rootEarlier[0].Status != wantEarlier {
				t.Errorf("the resumed root lists its earlier questions %+v, want the escalated one %s", rec.rootEarlier, wantEarlier)
			}
			// The lead's question, escalated: expired when nothing
			// decided it upstream (its asker ended), escalated — as the
			// killed process listed it — once the root's answer reached
			// the asker.
			wantLead := map[string]string{"before": "expired", "after": "escalated"}[phase]
			if len(rec.leadEarlier) != 1 || rec.leadEarlier[0].Status != wantLead {
				t.Errorf("the resumed lead lists its earlier questions %+v, want the escalated one %s", rec.leadEarlier, wantLead)
			}
			if strings.Contains(rec.rootOldAnswer, "delivered=true") {
				t.Errorf("answering the earlier escalated question again: %s, want nothing delivered (its asker ended)", rec.rootOldAnswer)
			}
			if !rec.rootNewAnswer.Delivered {
				t.Errorf("the root's answer to the re-run asker's question: %+v, want delivered", rec.rootNewAnswer)
			}
			if len(rec.workerGot) != 1 || rec.workerGot[0] != "answer:blue" {
				t.Errorf("the resumed askers received %v, want the root's answer once", rec.workerGot)
			}
			for _, q := range rec.rootFinal {
				if q.Status == "open" || q.Status == "escalated" {
					t.Errorf("the root's question %s is %s at the end", q.ID, q.Status)
				}
			}
			if rec.rootStop == "unresolved-blocking-questions" {
				t.Errorf("the root's stop was held by a question nobody waits on: %+v", rec.rootFinal)
			}
			for _, s := range rec.leadEscalate {
				if strings.HasSuffix(s, "=no-parent") {
					t.Errorf("the resumed lead's escalateTo parent of an earlier question: %s; it has a parent manager", s)
				}
			}
			checkQuestionIDsOnce(t, dir)
		})
	}
}
