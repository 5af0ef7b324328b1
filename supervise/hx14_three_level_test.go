package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// hx14ThreeEnv makes the test binary the child of
// TestHX14ThreeLevelEscalationAcrossKill.
const hx14ThreeEnv = "AGENTRT_HX14_THREE_LEVEL_CHILD"

// hx14Gate is one process's view of the three-level tree: the root
// closes answered once its answer_question returned (or it gave up
// waiting for a question); the sub-lead records the decisions its
// inbox brought.
type hx14Gate struct {
	answeredOnce, escalatedOnce sync.Once
	answered, escalated         chan struct{}
	mu                          sync.Mutex
	subSaw                      []string
	rootEarlier                 []supervise.Question
	rootGot                     string // the question the resumed root's await returned, "" when none
	rootAnswer                  supervise.AnswerResult
	rootFinal                   []supervise.Question
	rootStop                    string
}

func (g *hx14Gate) closeAnswered() { g.answeredOnce.Do(func() { close(g.answered) }) }

// hx14LeadModel is the middle manager: it spawns the sub-lead, awaits
// its question, escalates it to the root, and awaits the sub-lead's
// settlement. Its turn after the escalation (whose result is journaled
// by then) closes g.escalated.
type hx14LeadModel struct{ g *hx14Gate }

func (l hx14LeadModel) Turn(ctx context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	name, result := lastCall(msgs)
	return func(yield func(contract.ChatEvent, error) bool) {
		var ev contract.ChatEvent
		switch name {
		case "":
			ev = call("l1", supervise.VerbSpawnWorker, map[string]any{"profile": "sub", "task": "pick a colour", "label": "sub",
				"budget": map[string]any{"maxTokens": 2000, "maxIterations": 2}})
		case supervise.VerbSpawnWorker:
			ev = call("l2", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		case supervise.VerbAwaitEvent:
			m := questionIDPattern.FindStringSubmatch(result)
			switch {
			case strings.Contains(result, `"kind":"settled"`):
				ev = scripted.Text("lead: the sub-lead settled DONE")
			case m != nil:
				ev = call("l3", supervise.VerbAnswerQuestion, map[string]any{"questionId": m[1], "escalateTo": "parent", "escalateReason": "not mine"})
			default:
				ev = scripted.Text("lead: no question came")
			}
		case supervise.VerbAnswerQuestion:
			l.g.escalatedOnce.Do(func() { close(l.g.escalated) })
			ev = call("l4", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		default:
			ev = scripted.Text("lead: done")
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 0, 0.0001), nil)
		}
	}
}

// hx14SubModel is the sub-lead, a nested manager two levels down: it
// asks its parent (the lead) which colour, waits until the root
// answered, and ends with the answer its inbox brought.
type hx14SubModel struct{ g *hx14Gate }

func (s hx14SubModel) Turn(ctx context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	var answer string
	for _, m := range msgs {
		if m.Role == contract.ChatUser && m.Content != nil && strings.HasPrefix(*m.Content, "Answer to your question") {
			answer = *m.Content
		}
	}
	if answer != "" {
		s.g.mu.Lock()
		s.g.subSaw = append(s.g.subSaw, answer)
		s.g.mu.Unlock()
	}
	name, _ := lastCall(msgs)
	return func(yield func(contract.ChatEvent, error) bool) {
		var ev contract.ChatEvent
		switch {
		case answer != "":
			ev = scripted.Text("sub: " + answer + " DONE")
		case name == "":
			ev = call("s1", supervise.VerbAskParent, map[string]any{"level": "driver", "question": "which colour?", "reason": "the task does not say",
				"urgency": "blocks-step"})
		case name == supervise.VerbAskParent:
			if err := wait(ctx, s.g.answered); err != nil {
				yield(contract.ChatEvent{}, err)
				return
			}
			ev = call("s2", supervise.VerbListQuestions, map[string]any{})
		case name == supervise.VerbListQuestions && listed(msgs) < 6:
			// The decision joins the inbox just after the root's answer
			// returned (askUp's delivery): up to 1.5 s in all, for a
			// loaded machine under -race.
			time.Sleep(250 * time.Millisecond)
			ev = call(fmt.Sprintf("s%d", 2+listed(msgs)), supervise.VerbListQuestions, map[string]any{})
		default:
			ev = scripted.Text("sub: no answer came")
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 0, 0.0001), nil)
		}
	}
}

// hx14ThreeOptions are the options of every process of the three-level
// test: root (a Go brain) → lead (router brain, hx14LeadModel) → sub
// (router brain, hx14SubModel). kill, when set, is called by the root
// once the lead's escalation is journaled in its conversation and the
// root holds the escalated question unanswered.
func hx14ThreeOptions(dir, phase string, st store.Store, g *hx14Gate, kill func()) (supervise.Options, *profile.Profile, error) {
	ex := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{}, errors.New("no plain worker runs in this tree")
	})
	o, err := processOptions(ex, dir)
	if err != nil {
		return o, nil, err
	}
	tools := `"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
	  "agent_runtime_coordination_answer_question": true, "agent_runtime_coordination_list_questions": true,
	  "agent_runtime_coordination_ask_parent": true`
	var manager *profile.Profile
	for _, name := range []string{"lead", "sub", "manager"} {
		p, err := profile.Parse([]byte(`{"name": "` + name + `", "harness": "cli-base", "tools": {` + tools + `}}`))
		if err != nil {
			return o, nil, err
		}
		o.Profiles[name] = p
		manager = p
	}
	delete(o.Profiles, "manager")
	if st != nil {
		// A lease a loaded machine under -race renews in time; the
		// resume after the kill waits it out.
		o.SpawnStore, o.SpawnLeaseTTL = st, storeKillLease
	}
	o.ManagerBrain = func(p *profile.Profile) supervise.Brain {
		var m contract.ChatModel = hx14LeadModel{g}
		if p.Name != nil && *p.Name == "sub" {
			m = hx14SubModel{g}
		}
		b, err := supervise.NewRouterBrain(p, m, 0)
		if err != nil {
			return nil
		}
		return b
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		defer g.closeAnswered()
		tokens, iterations := int64(6_000), int64(6)
		lead, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Key: "lead-1", Budget: &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations}})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if kill != nil {
			ev, err := awaitKind(ctx, c, supervise.EventQuestion)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if err := wait(ctx, g.escalated); err != nil {
				return supervise.BrainReport{}, err
			}
			if phase == "after" {
				// Journaled (delivered) before AnswerQuestion returns;
				// the sub-lead's turn has not taken it from its inbox.
				if res, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: ev.Question.ID, Answer: "red"}); err != nil || !res.Delivered {
					return supervise.BrainReport{}, fmt.Errorf("the first answer: %+v %w", res, err)
				}
			}
			kill()
		}
		earlier := c.ListQuestions().Questions
		g.mu.Lock()
		g.rootEarlier = earlier
		g.mu.Unlock()
		res, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventQuestion}, TimeoutMS: 10_000})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if res.Event != nil && res.Event.Question != nil {
			ans, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: res.Event.Question.ID, Answer: "red"})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			g.mu.Lock()
			g.rootGot, g.rootAnswer = res.Event.Question.ID, ans
			g.mu.Unlock()
		}
		g.closeAnswered()
		if err := awaitSettlementOf(ctx, c, lead.WorkerID); err != nil {
			return supervise.BrainReport{}, err
		}
		final := c.ListQuestions().Questions
		_, serr := c.Stop(supervise.StopArgs{Reason: "done"})
		g.mu.Lock()
		g.rootFinal, g.rootStop = final, codeOf(serr)
		g.mu.Unlock()
		return supervise.BrainReport{}, nil
	})
	return o, manager, nil
}

// hx14ThreeChildFromEnv runs the child when hx14ThreeEnv is set.
func hx14ThreeChildFromEnv() (bool, error) {
	phase := os.Getenv(hx14ThreeEnv)
	if phase == "" {
		return false, nil
	}
	kill := func() {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	g := &hx14Gate{answered: make(chan struct{}), escalated: make(chan struct{})}
	st, closeStore, err := openJournalStore(context.Background(), os.Getenv(finishedJournal))
	if err != nil {
		return true, err
	}
	defer closeStore()
	o, manager, err := hx14ThreeOptions(os.Getenv(childDir), phase, st, g, kill)
	if err != nil {
		return true, err
	}
	_, err = supervise.Supervise(context.Background(), manager, "t", o)
	return true, fmt.Errorf("the hx14 three-level child was not killed: %v", err)
}

// Three levels: a sub-lead (a nested manager) asks its parent, the
// lead, a question (ask_parent); the lead takes it and escalates it to
// the root (answer_question escalateTo parent, its result journaled in
// its conversation); the supervisor process is SIGKILLed with the
// escalated question unanswered at the root. The resumed run, on the
// same run dir, drives the lead and the sub-lead again: the sub-lead
// still waits on its question (its ask_parent said queued-for-parent)
// and the lead's conversation has escalated it already, so only the
// root can decide it now — the root's await_event must offer it (the
// escalated copy, or a fresh one linked to the waiting sub-lead), and
// the root's answer must reach the sub-lead exactly once (§3.6
// "Questions", "Persistence & resume").
func TestHX14ThreeLevelEscalationAcrossKill(t *testing.T) {
	for _, j := range killJournals {
		for _, phase := range []string{"before", "after"} {
			t.Run(j.name+"/"+phase, func(t *testing.T) { hx14ThreeLevel(t, phase, j.spec(t)) })
		}
	}
}

func hx14ThreeLevel(t *testing.T, phase, spec string) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runChildUntilKilled(t, ctx, "", hx14ThreeEnv+"="+phase, childDir+"="+dir, finishedJournal+"="+spec)
	g := &hx14Gate{answered: make(chan struct{}), escalated: make(chan struct{})}
	st, closeStore, err := openJournalStore(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	o, manager, err := hx14ThreeOptions(dir, phase, st, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := superviseWhileHeld(ctx, time.Time{}, manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	t.Logf("result %s %s; root earlier %+v; root got %q answer %+v; sub saw %q; root final %+v stop %q", res.Status, res.Reason, g.rootEarlier, g.rootGot, g.rootAnswer, g.subSaw, g.rootFinal, g.rootStop)
	switch phase {
	case "before":
		if g.rootGot == "" {
			t.Fatalf("the resumed root's await_event offered no question; earlier questions %+v: the sub-lead waits on a question only the root can decide now", g.rootEarlier)
		}
		if !g.rootAnswer.Delivered {
			t.Errorf("the root's answer to %s: %+v, want delivered to the sub-lead", g.rootGot, g.rootAnswer)
		}
	case "after":
		if g.rootGot != "" {
			t.Errorf("the resumed root was offered %s again; its answer was delivered and journaled", g.rootGot)
		}
	}
	if len(g.subSaw) != 1 || !strings.HasPrefix(g.subSaw[0], "Answer to your question q1: red") {
		t.Errorf("the sub-lead's inbox brought %q, want the root's answer to q1 once", g.subSaw)
	}
	for _, q := range g.rootFinal {
		if q.Status == "open" || q.Status == "escalated" {
			t.Errorf("the root's question %s is %s at the end", q.ID, q.Status)
		}
	}
	if g.rootStop == "unresolved-blocking-questions" {
		t.Errorf("the root's stop was held: %+v", g.rootFinal)
	}
	delivered := 0
	for _, r := range checkQuestionIDsOnce(t, dir) {
		if r.Kind == supervise.CoordDecision && r.Delivered {
			delivered++
		}
	}
	if delivered != 1 {
		t.Errorf("%d delivered decisions journaled, want the root's one answer", delivered)
	}
}
