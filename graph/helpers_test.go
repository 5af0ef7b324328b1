package graph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

func i64(n int64) *int64 { return &n }

// prof parses a profile document built from fields.
func prof(t testing.TB, fields map[string]any) *profile.Profile {
	t.Helper()
	doc, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// driverProfile is a cli-base root declaring the given coordination verbs.
func driverProfile(t testing.TB, name string, verbs ...string) *profile.Profile {
	tools := map[string]bool{}
	for _, v := range verbs {
		tools[supervise.ToolPrefix+v] = true
	}
	return prof(t, map[string]any{"name": name, "harness": "cli-base", "model": map[string]any{"default": "scripted/driver"},
		"prompt": map[string]any{"systemPrompt": "Drive the graph with spawn_worker."}, "tools": tools})
}

func workerProfile(t testing.TB, name string) *profile.Profile {
	return prof(t, map[string]any{"name": name, "harness": "cli-base", "model": map[string]any{"provider": "scripted", "default": "scripted/" + name}})
}

const (
	coderDirective  = "Fix the failing test; change nothing else."
	critDirective   = "Review the patch for unsafe changes."
	reviewDirective = "Review the patch and say what is risky."
)

func registry(t testing.TB) *graph.Registry {
	t.Helper()
	r, err := graph.NewRegistry(map[string]string{
		"delegate/coder/v1":    coderDirective,
		"delegate/reviewer/v1": reviewDirective,
		"analyze/critic/v2":    critDirective,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// passing delivers any output that says "patch".
var passing = supervise.Deliverable{Describe: "a patch", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
	if strings.Contains(out.Text, "patch") {
		return kernel.Verdict{Passed: true}, nil
	}
	return kernel.Verdict{Passed: false, Reason: "no patch"}, nil
}}

// starGraph is driver → coder, driver → reviewer.
func starGraph(t testing.TB) graph.Graph {
	return graph.Graph{
		Nodes: []graph.Node{
			{ID: "driver", Profile: driverProfile(t, "driver", supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbSteerAgent)},
			{ID: "coder", Profile: workerProfile(t, "coder")},
			{ID: "reviewer", Profile: workerProfile(t, "reviewer")},
		},
		Edges: []graph.Edge{
			{Kind: graph.Delegates, From: "driver", To: "coder", Directive: "delegate/coder/v1"},
			{Kind: graph.Delegates, From: "driver", To: "reviewer", Directive: "delegate/reviewer/v1"},
		},
		Deliverable: passing,
		Budget:      &ledger.Budget{Tokens: i64(10_000), Iterations: i64(10), MicroUSD: i64(1_000_000)},
	}
}

func call(id, verb string, args any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, supervise.ToolPrefix+verb, string(b))
}

func turn(events ...contract.ChatEvent) scripted.ChatTurn {
	events = append(events, scripted.Usage(10, 5, contract.UsageDelta))
	return scripted.ChatTurn{Events: events}
}

func router(turns ...scripted.ChatTurn) contract.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: turns})
}

// kernelWorkers runs workers through the kernel on a scripted provider
// answering each task by a word in it.
func kernelWorkers(t testing.TB, script string) supervise.Executor {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	return &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
}

func options(t testing.TB, exec supervise.Executor, model contract.ChatModel) graph.Options {
	return graph.Options{Task: "Make the build green.", Registry: registry(t), Supervise: supervise.Options{
		PerWorker: ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(100_000)},
		Executor:  exec, Router: model, RunID: "g",
	}}
}

// inboxWorkers are live until a steer arrives; each answers with what it
// was told. They count every execution.
type inboxWorkers struct {
	mu    sync.Mutex
	boxes map[supervise.NodeID]chan string
	runs  atomic.Int64
}

func (w *inboxWorkers) box(id supervise.NodeID) chan string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.boxes == nil {
		w.boxes = map[supervise.NodeID]chan string{}
	}
	if w.boxes[id] == nil {
		w.boxes[id] = make(chan string, 1)
	}
	return w.boxes[id]
}

func (w *inboxWorkers) Execute(ctx context.Context, work supervise.Work) (supervise.WorkResult, error) {
	w.runs.Add(1)
	one, tokens := int64(1), int64(10)
	spent := ledger.Spend{Tokens: &tokens, Iterations: &one, MicroUSD: i64(0)}
	select {
	case msg := <-w.box(work.Node):
		return supervise.WorkResult{Text: "patch per: " + msg, Spent: spent}, nil
	case <-ctx.Done():
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
}

func (w *inboxWorkers) Deliver(_ context.Context, node supervise.NodeID, msg string) bool {
	select {
	case w.box(node) <- msg:
		return true
	default:
		return false
	}
}

func (w *inboxWorkers) ReportsUsage() bool { return true }

// countingModel counts the root's model calls.
type countingModel struct {
	contract.ChatModel
	calls atomic.Int64
}

func (m *countingModel) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.calls.Add(1)
	return m.ChatModel.Turn(ctx, messages, tools)
}

// final is a final text turn event.
func final(text string) contract.ChatEvent { return scripted.Text(text) }

// resumingWorkers are inboxWorkers whose executor can re-attach to a
// settled worker's session.
type resumingWorkers struct{ inboxWorkers }

func (*resumingWorkers) ResumesSessions() bool { return true }

func ledgerSpend(iterations int64) ledger.Spend {
	return ledger.Spend{Tokens: i64(5), Iterations: &iterations, MicroUSD: i64(0)}
}

// rowsOfKind returns the rows of ledger of kind k, in the ledger's order.
func rowsOfKind(ledger []graph.LedgerRow, k graph.EdgeKind) []graph.LedgerRow {
	var rows []graph.LedgerRow
	for _, r := range ledger {
		if r.Kind == k {
			rows = append(rows, r)
		}
	}
	return rows
}

// journaledEdgeRows reads the edge records of the run dir's journal as
// ledger rows, in journal order.
func journaledEdgeRows(t *testing.T, dir string) []graph.LedgerRow {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []graph.LedgerRow
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var rec struct {
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		if rec.Kind != supervise.KindEdge {
			continue
		}
		var row graph.LedgerRow
		if err := json.Unmarshal(rec.Data, &row); err != nil {
			t.Fatalf("edge record %s: %v", rec.Data, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}
