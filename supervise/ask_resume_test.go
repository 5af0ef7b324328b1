package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// askGate pairs a root and a lead model of one process: the lead closes
// asked once its ask_parent's result is journaled (its next turn
// starts), the root closes answered once its answer_question returned.
type askGate struct {
	askedOnce, answeredOnce sync.Once
	asked, answered         chan struct{}
	mu                      sync.Mutex
	leadSaw                 []string // the inbox messages the lead's turns saw
	rootAnswered            string   // answer_question's result, as the root read it
}

func newAskGate() *askGate {
	return &askGate{asked: make(chan struct{}), answered: make(chan struct{})}
}

// wait blocks until ch is closed or ctx ends (at most waitLimit).
func wait(ctx context.Context, ch <-chan struct{}) error {
	t := time.NewTimer(waitLimit)
	defer t.Stop()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return context.DeadlineExceeded
	}
}

// lastCall is the name (without ToolPrefix) of the last tool call in
// msgs and the content of the tool message answering it ("" when none).
func lastCall(msgs []contract.ChatMessage) (string, string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == contract.ChatAssistant && len(m.ToolCalls) > 0 {
			name := strings.TrimPrefix(m.ToolCalls[len(m.ToolCalls)-1].Name, supervise.ToolPrefix)
			if i+1 < len(msgs) && msgs[i+1].Role == contract.ChatTool && msgs[i+1].Content != nil {
				return name, *msgs[i+1].Content
			}
			return name, ""
		}
	}
	return "", ""
}

// askingRoot spawns a lead, awaits a question once the lead asked,
// answers it "red", and awaits the lead's settlement.
type askingRoot struct{ g *askGate }

var questionIDPattern = regexp.MustCompile(`"id":"(q[0-9]+)"`)

func (r askingRoot) Turn(ctx context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	name, result := lastCall(msgs)
	return func(yield func(contract.ChatEvent, error) bool) {
		var ev contract.ChatEvent
		switch name {
		case "":
			ev = call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
				"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10}})
		case supervise.VerbSpawnWorker:
			if err := wait(ctx, r.g.asked); err != nil {
				yield(contract.ChatEvent{}, err)
				return
			}
			ev = call("r2", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 3000})
		case supervise.VerbAwaitEvent:
			m := questionIDPattern.FindStringSubmatch(result)
			switch {
			case strings.Contains(result, `"kind":"settled"`):
				ev = scripted.Text("root: the lead settled")
			case m != nil:
				ev = call("r3", supervise.VerbAnswerQuestion, map[string]any{"questionId": m[1], "answer": "red"})
			default:
				ev = scripted.Text("root: no question came")
			}
		case supervise.VerbAnswerQuestion:
			r.g.mu.Lock()
			r.g.rootAnswered = result
			r.g.mu.Unlock()
			r.g.answeredOnce.Do(func() { close(r.g.answered) })
			ev = call("r4", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		default:
			ev = scripted.Text("root: done")
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 0, 0.0001), nil)
		}
	}
}

// askingLead asks its parent which colour, then waits (its next model
// turn blocks until the root answered) and ends with the answer its
// inbox brought.
type askingLead struct{ g *askGate }

func (l askingLead) Turn(ctx context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	var answer string
	for _, m := range msgs {
		if m.Role == contract.ChatUser && m.Content != nil && strings.HasPrefix(*m.Content, "Answer to your question") {
			answer = *m.Content
			l.g.mu.Lock()
			l.g.leadSaw = append(l.g.leadSaw, answer)
			l.g.mu.Unlock()
		}
	}
	name, _ := lastCall(msgs)
	return func(yield func(contract.ChatEvent, error) bool) {
		var ev contract.ChatEvent
		switch {
		case answer != "":
			ev = scripted.Text("lead: " + answer + " DONE")
		case name == "":
			ev = call("l1", supervise.VerbAskParent, map[string]any{"level": "driver", "question": "which colour?", "reason": "the task does not say",
				"urgency": "blocks-step"})
		case name == supervise.VerbAskParent:
			l.g.askedOnce.Do(func() { close(l.g.asked) })
			if err := wait(ctx, l.g.answered); err != nil {
				yield(contract.ChatEvent{}, err)
				return
			}
			ev = call("l2", supervise.VerbListQuestions, map[string]any{})
		case name == supervise.VerbListQuestions && listed(msgs) < 6:
			// The decision joins the lead's inbox when the root's
			// answer_question made it, which may be just after that call
			// returned: the lead looks again (a turn drains its inbox)
			// before it gives up.
			time.Sleep(20 * time.Millisecond)
			ev = call(fmt.Sprintf("l%d", 2+listed(msgs)), supervise.VerbListQuestions, map[string]any{})
		default:
			ev = scripted.Text("lead: no answer came")
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 0, 0.0001), nil)
		}
	}
}

// listed counts the lead's list_questions calls in msgs.
func listed(msgs []contract.ChatMessage) int {
	n := 0
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.Name == supervise.ToolPrefix+supervise.VerbListQuestions {
				n++
			}
		}
	}
	return n
}

// keepOnlyQuestions rewrites dir's coordination log without its
// decision records: the process died before any was written.
func keepOnlyQuestions(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, supervise.CoordinationLogFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		var r supervise.CoordRecord
		if json.Unmarshal(line, &r) == nil && r.Kind == supervise.CoordDecision {
			continue
		}
		kept = append(kept, line)
	}
	if err := os.WriteFile(path, bytes.Join(kept, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A nested manager's question to its parent outlives a crash that took
// the process between the root's await_event taking it and that call's
// result being journaled: the lead, driven again on resume (§3.6
// "Persistence & resume", nested managers), still waits on it — its
// journaled ask_parent said queued-for-parent, so it does not ask again
// — and the root's await_event run again (its call was journaled without
// a result) returns the very question, whose answer reaches the lead's
// inbox (§3.6 "Questions": answer routed to the asker; behaviour 54's
// delivery). Before the fix the question was listed expired: the root's
// await saw nothing, and the lead was never answered.
func TestResumedRunReoffersTheQuestionALiveNestedManagerWaitsOn(t *testing.T) {
	dir := t.TempDir()
	run := crashAfterRootTookTheLeadsQuestion(t, dir, 3, false)
	second := newAskGate()
	res := run(true, second)
	checkRootAnswerReachedLead(t, second, res)
	checkAskedAndDecidedOnce(t, dir)
}

// A decision delivered and journaled before the crash stays the answer:
// the question is not offered again (the resumed root's await_event
// returns no question and the root decides nothing), and the lead, whose
// journaled conversation never saw the decision (its inbox died with its
// process), gets that same decision in its inbox again (§3.6
// "Questions"; never decided twice).
func TestResumedRunRedeliversADecisionTheLeadNeverSaw(t *testing.T) {
	dir := t.TempDir()
	run := crashAfterRootTookTheLeadsQuestion(t, dir, 3, true)
	second := newAskGate()
	second.answeredOnce.Do(func() { close(second.answered) }) // nobody answers again: the lead goes on
	run(true, second)
	second.mu.Lock()
	saw, answered := slices.Clone(second.leadSaw), second.rootAnswered
	second.mu.Unlock()
	if answered != "" {
		t.Errorf("the resumed root answered again: %q", answered)
	}
	if len(saw) == 0 || !strings.HasPrefix(saw[0], "Answer to your question q1: red") {
		t.Errorf("the resumed lead's inbox brought %q, want the first process's answer to q1", saw)
	}
	checkAskedAndDecidedOnce(t, dir)
}

// crashAfterRootTookTheLeadsQuestion runs the root and lead of askGate to
// their end in dir, then cuts the journal as a crash would have once the
// root's await_event call (the root's third record) was journaled and
// before its result was: the lead's ask_parent (q1, queued-for-parent)
// is journaled; the decision on q1 is kept in the coordination log when
// keepDecision, else dropped (the process died before it was written).
// It returns the run function for the resumed process.
func crashAfterRootTookTheLeadsQuestion(t *testing.T, dir string, rootRecords int, keepDecision bool) func(bool, *askGate) supervise.SupervisedResult {
	t.Helper()
	run := askingRun(t, dir, nil)
	first := newAskGate()
	if res := run(false, first); res.Status != supervise.StatusWinner || len(first.leadSaw) == 0 {
		t.Fatalf("the uninterrupted run: %s, the lead saw %q", res.Status, first.leadSaw)
	}
	// The process died once the root's await_event call was journaled
	// (the root's third record), before its result was: the lead's
	// ask_parent (q1, queued-for-parent) is journaled, no decision is.
	keepThroughNode(t, dir, "run1", rootRecords)
	if !keepDecision {
		keepOnlyQuestions(t, dir)
	}
	last := lastTranscriptMessage(t, dir, "run1")
	switch rootRecords {
	case 3:
		if len(last.ToolCalls) != 1 || last.ToolCalls[0].Name != supervise.ToolPrefix+supervise.VerbAwaitEvent {
			t.Fatalf("the root's journaled conversation ends on %+v, want its await_event call without a result", last)
		}
	case 4:
		if len(last.Took) != 1 || last.Took[0].QuestionID != "q1" {
			t.Fatalf("the root's journaled conversation ends on %+v, want its await_event result that took q1", last)
		}
	}
	if last := lastTranscriptMessage(t, dir, "run1:s1"); last.Asked != "q1" {
		t.Fatalf("the lead's journaled conversation ends on %+v, want its ask_parent result naming q1", last)
	}
	return run
}

// askingRun returns the function that runs askingRoot and askingLead
// in dir, the journal in st when set (o.SpawnStore; the run dir then
// keeps the coordination log), and fails the test on its error.
func askingRun(t *testing.T, dir string, st store.Store) func(bool, *askGate) supervise.SupervisedResult {
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbAnswerQuestion)
	return func(resume bool, g *askGate) supervise.SupervisedResult {
		t.Helper()
		o := nestedOptions(t, askingExecutor, askingRoot{g}, func() contract.ChatModel { return askingLead{g} })
		o.RunDir, o.Resume = dir, resume
		if st != nil {
			o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
		}
		res, err := supervise.Supervise(context.Background(), mgr, "ship", o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}

// checkAskedAndDecidedOnce checks dir's coordination log: q1 asked once
// and decided once, across both processes.
func checkAskedAndDecidedOnce(t *testing.T, dir string) {
	t.Helper()
	log, _, err := supervise.ReadCoordinationLog(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var questions, decisions []string
	for _, r := range log {
		switch r.Kind {
		case supervise.CoordQuestion:
			questions = append(questions, r.QuestionID)
		case supervise.CoordDecision:
			decisions = append(decisions, r.QuestionID)
		}
	}
	if !slices.Equal(questions, []string{"q1"}) || !slices.Equal(decisions, []string{"q1"}) {
		t.Errorf("coordination log questions %v decisions %v; want q1 asked once and decided once", questions, decisions)
	}
}

// lastTranscriptMessage is the last message of node's journaled
// conversation in dir.
func lastTranscriptMessage(t *testing.T, dir string, node supervise.NodeID) supervise.TranscriptMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var last supervise.TranscriptMessage
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		var r supervise.Record
		if json.Unmarshal(line, &r) == nil && r.Kind == supervise.KindTranscript && r.Node == node && len(r.Messages) > 0 {
			last = r.Messages[len(r.Messages)-1]
		}
	}
	return last
}

// The root's await_event result that took the lead's question was
// journaled (TakenEvent.QuestionID), its decision was not: the resumed
// root goes on from its conversation, which holds the question, and its
// answer_question is delivered to the lead driven again — the question
// is open again at the root but not queued a second time (§3.6
// "Questions"). Before the fix it was expired: the answer reached
// nobody.
func TestResumedRootAnswersTheQuestionItsConversationTook(t *testing.T) {
	dir := t.TempDir()
	run := crashAfterRootTookTheLeadsQuestion(t, dir, 4, false)
	second := newAskGate()
	res := run(true, second)
	checkRootAnswerReachedLead(t, second, res)
	checkAskedAndDecidedOnce(t, dir)
}

// The re-offer with the spawn journal in a store (SQLite and
// PostgreSQL), the coordination log in the run dir: the store took
// nothing after the root's await_event call (the fifth transcript
// record: the root's spawn call and result, the lead's ask_parent call
// and result, the root's await call), so the process died with the
// question taken and its result unjournaled, before any decision. The
// resumed root's await returns q1 and its answer reaches the lead.
func TestResumedRunReoffersTheLeadsQuestionFromStoreJournal(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			var st store.Store
			switch name {
			case "sqlite":
				s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				st = s
			default:
				s, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				st = s
			}
			dir := t.TempDir()
			mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbAnswerQuestion)
			first := newAskGate()
			o := nestedOptions(t, askingExecutor, askingRoot{first}, func() contract.ChatModel { return askingLead{first} })
			o.RunDir = dir
			o.SpawnStore, o.SpawnLeaseTTL = &cutStore{Store: st, kind: supervise.KindTranscript, after: 5}, kernel.MinLeaseTTL
			if _, err := supervise.Supervise(context.Background(), mgr, "ship", o); !errors.Is(err, errCut) {
				t.Fatalf("the cut run: %v, want its journal's failure", err)
			}
			if log, _, err := supervise.ReadCoordinationLog(context.Background(), dir); err != nil || len(log) != 1 || log[0].Kind != supervise.CoordQuestion {
				t.Fatalf("the cut run's coordination log %+v (%v), want q1 asked and nothing decided", log, err)
			}
			second := newAskGate()
			res := askingRun(t, dir, st)(true, second)
			checkRootAnswerReachedLead(t, second, res)
			checkAskedAndDecidedOnce(t, dir)
		})
	}
}
