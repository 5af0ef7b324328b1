package supervise_test

import (
	"bufio"
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// stepper is a manager model that makes the call of its plan the
// transcript has reached (one per tool turn) and then answers, and
// records every request.
type stepper struct {
	plan     []contract.ChatEvent
	mu       sync.Mutex
	requests [][]contract.ChatMessage
}

func (s *stepper) Turn(_ context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	s.mu.Lock()
	s.requests = append(s.requests, slices.Clone(msgs))
	s.mu.Unlock()
	step := 0
	for _, m := range msgs {
		if m.Role == contract.ChatAssistant && len(m.ToolCalls) > 0 {
			step++
		}
	}
	return func(yield func(contract.ChatEvent, error) bool) {
		ev := scripted.Text("the worker is DONE")
		if step < len(s.plan) {
			ev = s.plan[step]
		}
		if yield(ev, nil) {
			yield(managerUsage(10, 5, 0.0001), nil)
		}
	}
}

// resultOf is the tool message that answered call id in the model's
// last request ("" when none did).
func (s *stepper) resultOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return ""
	}
	for _, m := range s.requests[len(s.requests)-1] {
		if m.Role == contract.ChatTool && m.ToolCallID == id && m.Content != nil {
			return *m.Content
		}
	}
	return ""
}

// talkingExec runs "wait" workers until a steer reaches them and "ask"
// workers until their question is decided, counting what each worker
// was told.
type talkingExec struct {
	mu        sync.Mutex
	inbox     map[supervise.NodeID]chan string
	steered   int
	decisions int
}

func (e *talkingExec) box(id supervise.NodeID) chan string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inbox == nil {
		e.inbox = map[supervise.NodeID]chan string{}
	}
	if e.inbox[id] == nil {
		e.inbox[id] = make(chan string, 4)
	}
	return e.inbox[id]
}

func (e *talkingExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	switch w.Task {
	case "wait":
		select {
		case msg := <-e.box(w.Node):
			e.mu.Lock()
			e.steered++
			e.mu.Unlock()
			return supervise.WorkResult{Text: "steered: " + msg + " DONE", Spent: zeroSpent()}, nil
		case <-ctx.Done():
			return supervise.WorkResult{Spent: zeroSpent()}, context.Cause(ctx)
		}
	case "ask":
		d, err := w.Ask(ctx, supervise.AskArgs{Level: "worker", Question: "which colour?", Reason: "the brief names none", Urgency: supervise.UrgencyBlocksStep})
		if err != nil {
			return supervise.WorkResult{Spent: zeroSpent()}, err
		}
		e.mu.Lock()
		e.decisions++
		e.mu.Unlock()
		return supervise.WorkResult{Text: "painted " + d.Answer + " DONE", Spent: zeroSpent()}, nil
	}
	return supervise.WorkResult{Text: w.Task + " DONE", Spent: zeroSpent()}, nil
}

func (e *talkingExec) Deliver(_ context.Context, node supervise.NodeID, msg string) bool {
	select {
	case e.box(node) <- msg:
		return true
	default:
		return false
	}
}

func (e *talkingExec) counts() (steered, decisions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.steered, e.decisions
}

// rerunOptions are a run of router over exec whose manager may spawn,
// await, steer and answer.
func rerunOptions(t *testing.T, exec supervise.Executor, router contract.ChatModel) (supervise.Options, *profile.Profile) {
	t.Helper()
	o, _, err := transcriptOptions(exec, router)
	if err != nil {
		t.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
		"prompt": {"systemPrompt": "You manage workers."},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
			"agent_runtime_coordination_steer_agent": true, "agent_runtime_coordination_answer_question": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	o.RunDir = t.TempDir()
	return o, manager
}

// countRecords counts the lines of the run dir file name whose kind is
// kind.
func countRecords(t *testing.T, path, kind string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Kind == kind {
			n++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// Issue 13, RES-03 / behaviour 46 for the manager's own calls: a router
// manager killed after its steer_agent call was journaled, the steer
// delivered and acknowledged and the worker settled, but before the
// call's result reached its transcript, runs the call again on resume.
// The re-run finds its first run's operation (keyed by the run, the
// manager and the call id) and answers what the journal says — delivered,
// replayed — instead of steering again under a new operation: the worker
// was told once, and the journal holds one steer request and one
// acknowledgement.
func TestResumedRouterManagerRerunsSteerOnce(t *testing.T) {
	exec := &talkingExec{}
	plan := []contract.ChatEvent{
		call("c0", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "wait"}),
		call("c1", supervise.VerbSteerAgent, map[string]any{"workerId": "run1:s1", "instruction": "finish"}),
		call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}),
	}
	o, manager := rerunOptions(t, exec, &stepper{plan: plan})
	if _, err := supervise.Supervise(context.Background(), manager, "ship", o); err != nil {
		t.Fatal(err)
	}
	// Killed once the worker settled, the transcript ending on the
	// steer's call (record 3): its result never journaled.
	cutAfterCall(t, o.RunDir, 3, 1)
	journal := filepath.Join(o.RunDir, supervise.SpawnJournalFile)
	if n := countRecords(t, journal, supervise.KindSteerAcknowledged); n != 1 {
		t.Fatalf("the cut journal holds %d steer acknowledgements, want the first run's one", n)
	}
	v2 := &stepper{plan: plan}
	o.Router, o.Resume = v2, true
	res, err := supervise.Supervise(context.Background(), manager, "ship", o)
	if err != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("the resumed run: %v %+v", err, res)
	}
	if steered, _ := exec.counts(); steered != 1 {
		t.Errorf("the worker was steered %d times, want once", steered)
	}
	got := v2.resultOf("c1")
	if !strings.Contains(got, `"replayed":true`) || !strings.Contains(got, `"outcome":"delivered"`) || !strings.Contains(got, `"delivered":true`) {
		t.Errorf("the re-run steer's result is %q, want the first run's delivered outcome, replayed", got)
	}
	if n, m := countRecords(t, journal, supervise.KindSteerRequested), countRecords(t, journal, supervise.KindSteerAcknowledged); n != 1 || m != 1 {
		t.Errorf("the journal holds %d steer requests and %d acknowledgements, want 1 and 1", n, m)
	}
}

// Issue 13: a router manager killed after its answer_question call
// delivered the decision (journaled in the coordination log) but before
// the call's result reached its transcript runs the call again on
// resume: the asker got the decision once, and the re-run's result says
// answered and delivered, replayed — not refused already-decided.
func TestResumedRouterManagerRerunsAnswerOnce(t *testing.T) {
	exec := &talkingExec{}
	plan := []contract.ChatEvent{
		call("c0", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "ask"}),
		call("c1", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000}),
		call("c2", supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "blue"}),
		call("c3", supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000}),
	}
	o, manager := rerunOptions(t, exec, &stepper{plan: plan})
	if _, err := supervise.Supervise(context.Background(), manager, "ship", o); err != nil {
		t.Fatal(err)
	}
	// Killed once the asker settled, the transcript ending on the
	// answer's call (record 5).
	cutAfterCall(t, o.RunDir, 5, 1)
	v2 := &stepper{plan: plan}
	o.Router, o.Resume = v2, true
	res, err := supervise.Supervise(context.Background(), manager, "ship", o)
	if err != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("the resumed run: %v %+v", err, res)
	}
	if _, decisions := exec.counts(); decisions != 1 {
		t.Errorf("the asker got %d decisions, want one", decisions)
	}
	got := v2.resultOf("c2")
	if !strings.Contains(got, `"replayed":true`) || !strings.Contains(got, `"status":"answered"`) || !strings.Contains(got, `"delivered":true`) {
		t.Errorf("the re-run answer's result is %q, want the first run's delivered answer, replayed", got)
	}
	if n := countRecords(t, filepath.Join(o.RunDir, supervise.CoordinationLogFile), supervise.CoordDecision); n != 1 {
		t.Errorf("the coordination log holds %d decisions, want 1", n)
	}
}
