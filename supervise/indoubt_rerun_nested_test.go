package supervise_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// pairGate opens once each of its names has arrived; a wait on it is
// bounded.
type pairGate struct {
	mu      sync.Mutex
	arrived map[string]bool
	want    []string
	open    chan struct{}
}

func newPairGate(names ...string) *pairGate {
	return &pairGate{arrived: map[string]bool{}, want: names, open: make(chan struct{})}
}

// arrive notes name; the last of the names opens the gate.
func (g *pairGate) arrive(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.arrived[name] {
		return
	}
	g.arrived[name] = true
	for _, n := range g.want {
		if !g.arrived[n] {
			return
		}
	}
	close(g.open)
}

// wait waits for the gate to open, at most d; it reports whether it did.
func (g *pairGate) wait(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-g.open:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// bindThenHold binds every worker's execution, says so to bound, and
// answers only once bound has opened (both workers bound): no worker's
// settlement is journaled before both bindings are.
type bindThenHold struct {
	bound *pairGate
}

func (e bindThenHold) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	if err := w.Bind(ctx, "exec-"+string(w.Node)); err != nil {
		return supervise.WorkResult{}, err
	}
	e.bound.arrive(w.Task)
	if !e.bound.wait(ctx, 30*time.Second) {
		return supervise.WorkResult{}, errors.New("the other worker was never bound")
	}
	return supervise.WorkResult{Text: "DONE: " + w.Task, Spent: ledger.Spend{Tokens: i64(10), Iterations: i64(1)}}, nil
}

func (bindThenHold) ReportsUsage() bool { return true }

// heldModel asks inner for a turn only once gate has opened when the
// conversation holds at least after assistant messages: a manager that
// does nothing more until both workers are bound.
type heldModel struct {
	inner contract.ChatModel
	gate  *pairGate
	after int
}

func (m heldModel) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	spoken := 0
	for _, msg := range messages {
		if msg.Role == contract.ChatAssistant {
			spoken++
		}
	}
	if spoken >= m.after && !m.gate.wait(ctx, 30*time.Second) {
		return func(yield func(contract.ChatEvent, error) bool) {
			yield(contract.ChatEvent{}, errors.New("the workers were never both bound"))
		}
	}
	return m.inner.Turn(ctx, messages, tools)
}

// cutAfterBinds rewrites dir's journal as a process SIGKILLed once the
// workers of tasks had their executions bound, before any spawn call's
// result was journaled, left it: every record up to the last binding,
// less the transcript records holding the answers to calls (each was the
// last record of its manager before the cut: the managers were held
// until every binding), and nothing after. It returns the workers' ids
// by task.
func cutAfterBinds(t *testing.T, dir string, tasks []string, calls ...string) map[string]supervise.NodeID {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	ids := map[string]supervise.NodeID{}
	taskOf, bound := map[supervise.NodeID]string{}, map[supervise.NodeID]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() && len(bound) < len(tasks) {
		var rec supervise.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("a journal line does not decode: %v", err)
		}
		switch {
		case rec.Kind == supervise.KindSpawned && slices.Contains(tasks, rec.Task):
			ids[rec.Task], taskOf[rec.Node] = rec.Node, rec.Task
		case rec.Kind == supervise.KindExecutionBound && taskOf[rec.Node] != "":
			bound[rec.Node] = true
		}
		answers := false
		for _, m := range rec.Messages {
			answers = answers || rec.Kind == supervise.KindTranscript && m.Role == contract.ChatTool && slices.Contains(calls, m.ToolCallID)
		}
		if answers {
			continue
		}
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	if len(bound) < len(tasks) {
		t.Fatalf("the journal binds %v of the workers of %v", bound, tasks)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return ids
}

// §3.6 "Persistence & resume", RES-03 at depth (behaviours 41, 46): a
// nested router manager (the lead) and the root each made an unkeyed
// spawn_worker call whose child bound its execution before the process
// died, the call's result never journaled: both children are in doubt,
// their executions still running. Resumed, each manager's tool loop runs
// its call again from its own journaled transcript, and each claims its
// own in-doubt child, named in doubt — the root's r2 its run1:s<n>, the
// lead's l1 its run1:s1:s<n> — neither spawned nor executed again.
//
// The two managers' re-run calls are each manager's own (rerunCalls per
// manager view): with the one run-wide set the later manager's
// setRerunCalls replaced the earlier's, so that one's re-run call found
// no re-run call, missed its in-doubt child and spawned its task again.
// The resumed managers' tool resolvers wait for each other (both sets
// noted before either loop runs) to make that order certain.
func TestNestedRerunSpawnClaimsItsOwnInDoubtChild(t *testing.T) {
	dir := t.TempDir()
	const rootWork, leadWork = "root work", "lead work"
	rootScript := scripted.ChatScript{FromConversation: true, Turns: []scripted.ChatTurn{
		turn(call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
			"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10}}), managerUsage(10, 0, 0.0001)),
		turn(call("r2", supervise.VerbSpawnWorker, spawnArgs(rootWork)), managerUsage(10, 0, 0.0001)),
		turn(call("r3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000}), managerUsage(10, 0, 0.0001)),
		turn(call("r4", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000}), managerUsage(10, 0, 0.0001)),
		turn(scripted.Text("root: the lead delivered"), managerUsage(10, 0, 0.0001)),
	}}
	leadScript := scripted.ChatScript{FromConversation: true, Turns: []scripted.ChatTurn{
		turn(call("l1", supervise.VerbSpawnWorker, spawnArgs(leadWork)), managerUsage(7, 3, 0.00001)),
		turn(call("l2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000}), managerUsage(7, 3, 0.00001)),
		turn(scripted.Text("lead: DONE"), managerUsage(7, 3, 0.00001)),
	}}
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)

	// The first process: the root's third turn and the lead's second
	// wait until both workers are bound, and the workers answer only
	// then, so the cut below is a state a kill leaves.
	bound := newPairGate(rootWork, leadWork)
	o := nestedOptions(t, bindThenHold{bound: bound}, heldModel{inner: scripted.NewChatModel(rootScript), gate: bound, after: 2},
		func() contract.ChatModel {
			return heldModel{inner: scripted.NewChatModel(leadScript), gate: bound, after: 1}
		})
	o.RunDir = dir
	// No dollar ceiling (as agentrt graph's): an in-doubt worker's
	// unknown spend leaves the pool able to admit another.
	o.Budget.MicroUSD, o.PerWorker.MicroUSD = nil, nil
	if _, err := supervise.Supervise(context.Background(), mgr, "ship", o); err != nil {
		t.Fatal(err)
	}
	// The root's child and the lead's: run1:s2 and run1:s1:s3, or
	// run1:s3 and run1:s1:s2 (the two spawns race for the run's next
	// sequence).
	child := cutAfterBinds(t, dir, []string{rootWork, leadWork}, "r2", "l1")

	// The resumed process: its executions are still running (the
	// bindingExecutor's Recover says so), so both children stay in doubt.
	exec := &bindingExecutor{runs: map[string]int{}}
	drivers := newPairGate("run1", "run1:s1")
	waited := make(chan bool, 2)
	o = nestedOptions(t, exec, scripted.NewChatModel(rootScript), func() contract.ChatModel { return scripted.NewChatModel(leadScript) })
	o.RunDir, o.Resume, o.Budget = dir, true, ledger.Budget{}
	o.PerWorker.MicroUSD = nil
	o.ResolveSupervisorTools = func(ctx context.Context, nc supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		drivers.arrive(string(nc.NodeID))
		waited <- drivers.wait(ctx, 10*time.Second)
		return nil, nil
	}
	res, err := supervise.Supervise(context.Background(), mgr, "", o)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if !<-waited {
			t.Error("the resumed root and lead did not both reach their tool loops together (10s)")
		}
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" {
		t.Errorf("resumed: status %s winner %+v error %+v, want the lead run1:s1 delivered", res.Status, res.Winner, res.Error)
	}
	if exec.runs[rootWork] != 0 || exec.runs[leadWork] != 0 {
		t.Errorf("the resumed run executed the in-doubt tasks again: %v, want neither", exec.runs)
	}
	var ids []supervise.NodeID
	for _, n := range res.Tree {
		ids = append(ids, n.ID)
		if (n.ID == child[rootWork] || n.ID == child[leadWork]) && !n.InDoubt {
			t.Errorf("%s, bound when the process died, is not in doubt: %+v", n.ID, n)
		}
	}
	slices.Sort(ids)
	want := []supervise.NodeID{"run1:s1", child[rootWork], child[leadWork]}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("the resumed run's workers are %v, want %v (no second spawn)", ids, want)
	}
	// Each call run again answers with its own journaled child, named in
	// doubt: never a completed result, nor a worker live again.
	answers := journaledToolAnswers(t, dir)
	for call, child := range map[string]supervise.NodeID{"r2": child[rootWork], "l1": child[leadWork]} {
		a := answers[call]
		if !strings.Contains(a, `"workerId":"`+string(child)+`"`) || !strings.Contains(a, `"inDoubt":true`) || strings.Contains(a, `"resumed"`) {
			t.Errorf("the re-run call %s answered %q, want its journaled child %s named in doubt", call, a, child)
		}
	}
}
