package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/providers/scripted"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

const os16Topology = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1", "maxTraversals": 2}
  ],
  "budget": {"maxTokens": 5000, "maxIterations": 6, "maxUsd": 0.05}
}`

// os16Directive holds multi-byte characters: bytes are UTF-8 bytes.
const os16Directive = "Répare — ça ✓"

func os16i(v int64) *int64 { return &v }

func os16Options(t *testing.T, dir string, brain graph.BrainFunc, resume bool) (graph.Graph, graph.Options) {
	t.Helper()
	g, err := graph.Decode([]byte(os16Topology))
	if err != nil {
		t.Fatal(err)
	}
	g.Deliverable = supervise.Deliverable{Describe: "never", Check: func(context.Context, supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: false, Reason: "never"}, nil
	}}
	reg, err := graph.NewRegistry(map[string]string{"delegate/coder/v1": os16Directive})
	if err != nil {
		t.Fatal(err)
	}
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "patch", Spent: ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)}}, nil
	})
	return g, graph.Options{Task: "t", Registry: reg, Brain: brain, Supervise: supervise.Options{
		PerWorker: ledger.Budget{Tokens: os16i(100), Iterations: os16i(1), MicroUSD: os16i(100)},
		Executor:  exec, RunDir: dir, RunID: "os16g", Resume: resume, ReturnEnded: resume,
	}}
}

// §3.7 edge ledger, §15 behaviour 53: two spawns over a delegates edge
// capped at 2 are delivered with traversals 1 and 2 and bytes counted
// in UTF-8 (directive + task), the third is refused and ledgered
// unpropagated traversal 3; the run ends no-winner all-children-down,
// so RunGraph returns a GraphEdgeCapError carrying the ledger; the
// journal's edge records equal the returned ledger; a resume to the
// run's end returns the same ledger and the same error.
func TestOS16GraphLedgerUnicodeCapResume(t *testing.T) {
	dir := t.TempDir()
	const task = "écris ✓"
	brain := func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
		for range 2 {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		for range 2 {
			if _, err := d.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 20_000}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task})
		var vr *supervise.VerbRefusal
		if !errors.As(err, &vr) || vr.Code != "edge-cap-exhausted" {
			return supervise.BrainReport{}, errors.New("third spawn not refused by the cap: " + errorText(err))
		}
		return supervise.BrainReport{Text: "gave up"}, nil
	}
	check := func(name string, res graph.GraphResult, err error) {
		t.Helper()
		var capErr *graph.GraphEdgeCapError
		if !errors.As(err, &capErr) {
			t.Fatalf("%s: err %v, want a GraphEdgeCapError (result %s %s)", name, err, res.Result.Status, res.Result.Reason)
		}
		if res.Result.Reason != supervise.ReasonAllChildrenDown {
			t.Errorf("%s: reason %s, want all-children-down", name, res.Result.Reason)
		}
		want := len(os16Directive) + len(task)
		if len(res.Ledger) != 3 {
			t.Fatalf("%s: ledger %+v, want 3 rows", name, res.Ledger)
		}
		for i, row := range res.Ledger {
			if row.Edge != "delegates:driver->coder" || row.Traversal != i+1 {
				t.Errorf("%s: row %d edge %s traversal %d", name, i, row.Edge, row.Traversal)
			}
			if i < 2 && (row.Outcome != graph.OutcomeDelivered || row.Bytes != want || row.WorkerID == "" || row.Continuity != graph.ContinuityFresh) {
				t.Errorf("%s: row %d %+v, want delivered fresh %d bytes with a worker", name, i, row, want)
			}
		}
		if last := res.Ledger[2]; last.Outcome != graph.OutcomeUnpropagated || last.Bytes != 0 {
			t.Errorf("%s: third row %+v, want unpropagated 0 bytes", name, last)
		}
		if len(capErr.Ledger) != 3 || len(res.ExhaustedEdges) != 1 || len(capErr.ExhaustedEdges) != 1 {
			t.Errorf("%s: cap error %+v exhausted %v", name, capErr.ExhaustedEdges, res.ExhaustedEdges)
		}
		j := journaledEdgeRows(t, dir)
		if len(j) != len(res.Ledger) {
			t.Fatalf("%s: journal edge rows %+v, ledger %+v", name, j, res.Ledger)
		}
		for i := range j {
			if j[i] != res.Ledger[i] {
				t.Errorf("%s: journal row %d %+v, ledger row %+v", name, i, j[i], res.Ledger[i])
			}
		}
	}
	g, o := os16Options(t, dir, brain, false)
	res, err := graph.RunGraph(context.Background(), g, o)
	check("first", res, err)
	g, o = os16Options(t, dir, brain, true)
	res, err = graph.RunGraph(context.Background(), g, o)
	check("return-ended", res, err)
}

func errorText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// §3.7 traversal numbering across a kill: the process dies after the
// first delegation settled; the resumed run replays that spawn (no new
// row), and its next delegation is traversal 2, the refused third 3 —
// continuing, not restarting — and the journal equals the ledger.
func TestOS16GraphTraversalAfterKill(t *testing.T) {
	dir, killed := t.TempDir(), t.TempDir()
	const task = "écris ✓"
	brain := func(kill bool) graph.BrainFunc {
		return func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task, Label: "a"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := d.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 20_000}); err != nil {
				return supervise.BrainReport{}, err
			}
			if kill {
				journaltest.CopyRunDir(t, dir, killed)
				return supervise.BrainReport{}, errors.New("killed")
			}
			if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task + "2", Label: "b"}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := d.Await(ctx, supervise.AwaitArgs{Kinds: []string{supervise.EventSettled}, TimeoutMS: 20_000}); err != nil {
				return supervise.BrainReport{}, err
			}
			_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task + "3", Label: "c"})
			if err == nil {
				return supervise.BrainReport{}, errors.New("third spawn not refused")
			}
			return supervise.BrainReport{Text: "gave up"}, nil
		}
	}
	g, o := os16Options(t, dir, brain(true), false)
	if _, err := graph.RunGraph(context.Background(), g, o); err != nil {
		t.Fatal(err)
	}
	g, o = os16Options(t, killed, brain(false), false)
	o.Supervise.Resume = true
	res, err := graph.RunGraph(context.Background(), g, o)
	var capErr *graph.GraphEdgeCapError
	if !errors.As(err, &capErr) {
		t.Fatalf("err %v, want GraphEdgeCapError (%s %s)", err, res.Result.Status, res.Result.Reason)
	}
	var got []string
	for _, r := range res.Ledger {
		got = append(got, r.Edge+"#"+string(rune('0'+r.Traversal))+" "+string(r.Outcome)+" "+string(r.WorkerID))
	}
	want := []string{"delegates:driver->coder#1 delivered os16g:s1", "delegates:driver->coder#2 delivered os16g:s2", "delegates:driver->coder#3 unpropagated "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ledger %q, want %q", got, want)
	}
	j := journaledEdgeRows(t, killed)
	if len(j) != len(res.Ledger) {
		t.Fatalf("journal %+v, ledger %+v", j, res.Ledger)
	}
	for i := range j {
		if j[i] != res.Ledger[i] {
			t.Errorf("journal row %d %+v, ledger %+v", i, j[i], res.Ledger[i])
		}
	}
	if s := res.Result.Spent; s.Tokens != 20 || !s.TokensKnown {
		t.Errorf("spent %+v, want 20 known tokens", s)
	}
}

// os16SteerExec runs a worker until it is steered once (or its context
// ends): a Steerer, so the root's steer_agent reaches it.
type os16SteerExec struct {
	mu      sync.Mutex
	steered map[supervise.NodeID]chan string
}

func (e *os16SteerExec) ch(id supervise.NodeID) chan string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.steered == nil {
		e.steered = map[supervise.NodeID]chan string{}
	}
	c, ok := e.steered[id]
	if !ok {
		c = make(chan string, 1)
		e.steered[id] = c
	}
	return c
}

func (e *os16SteerExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	spent := ledger.Spend{Tokens: os16i(10), Iterations: os16i(1), MicroUSD: os16i(10)}
	select {
	case msg := <-e.ch(w.Node):
		return supervise.WorkResult{Text: "patch after " + msg, Spent: spent}, nil
	case <-ctx.Done():
		return supervise.WorkResult{Spent: spent}, ctx.Err()
	}
}

func (e *os16SteerExec) Deliver(_ context.Context, node supervise.NodeID, msg string) bool {
	select {
	case e.ch(node) <- msg:
		return true
	default:
		return false
	}
}

func os16Call(id, verb string, args map[string]any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, supervise.ToolPrefix+verb, string(b))
}

// os16SteerModel is the root's model: delegate, steer the worker, await
// it, answer.
func os16SteerModel() contract.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{FromConversation: true, Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{os16Call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "écris ✓"})}},
		{Events: []contract.ChatEvent{os16Call("c2", supervise.VerbSteerAgent, map[string]any{"workerId": "os16g:s1", "instruction": "plus vite ✓"})}},
		{Events: []contract.ChatEvent{os16Call("c3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 20000})}},
		{Events: []contract.ChatEvent{scripted.Text("done")}},
	}})
}

const os16SteerTopology = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
        "agent_runtime_coordination_steer_agent": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1", "maxTraversals": 3}
  ],
  "budget": {"maxTokens": 5000, "maxIterations": 6, "maxUsd": 0.05}
}`

func os16SteerOptions(t *testing.T, dir string, resume bool) (graph.Graph, graph.Options) {
	t.Helper()
	g, err := graph.Decode([]byte(os16SteerTopology))
	if err != nil {
		t.Fatal(err)
	}
	g.Deliverable = supervise.Deliverable{Describe: "a patch", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: strings.HasPrefix(out.Text, "patch")}, nil
	}}
	reg, err := graph.NewRegistry(map[string]string{"delegate/coder/v1": os16Directive})
	if err != nil {
		t.Fatal(err)
	}
	return g, graph.Options{Task: "t", Registry: reg, Supervise: supervise.Options{
		PerWorker: ledger.Budget{Tokens: os16i(100), Iterations: os16i(1), MicroUSD: os16i(100)},
		Executor:  &os16SteerExec{}, Router: os16SteerModel(), RunDir: dir, RunID: "os16g", Resume: resume,
	}}
}

// §3.7 edge ledger across a kill (a journal prefix is what a killed
// process leaves): the process dies right after the root's steer was
// ledgered, before its tool loop journaled the call's result. The
// resumed root runs the call again — supervise answers it from the
// journal, never sending it twice — and the steer is the edge's
// traversal 2 once, not a second traversal 3 charged to the cap.
func TestOS16GraphSteerRowAfterKill(t *testing.T) {
	dir, killed := t.TempDir(), t.TempDir()
	g, o := os16SteerOptions(t, dir, false)
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.Status != supervise.StatusWinner || len(res.Ledger) != 2 || res.Ledger[1].Continuity != graph.ContinuitySteer {
		t.Fatalf("first run: %s %s ledger %+v", res.Result.Status, res.Result.Reason, res.Ledger)
	}
	journaltest.CopyRunDir(t, dir, killed)
	b, err := os.ReadFile(filepath.Join(dir, "spawn-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	cut := -1
	for i, l := range lines {
		if strings.Contains(l, `"kind":"edge"`) && strings.Contains(l, `"continuity":"steer"`) {
			cut = i + 1
		}
	}
	if cut < 0 {
		t.Fatal("no steer edge record in the journal")
	}
	if err := os.WriteFile(filepath.Join(killed, "spawn-journal.jsonl"), []byte(strings.Join(lines[:cut], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	g, o = os16SteerOptions(t, killed, true)
	res, err = graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Ledger {
		got = append(got, r.Edge+"#"+strconv.Itoa(r.Traversal)+" "+string(r.Continuity)+" "+string(r.Outcome))
	}
	want := []string{"delegates:driver->coder#1 fresh delivered", "delegates:driver->coder#2 steer delivered"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("resumed ledger %q, want %q", got, want)
	}
	if j := journaledEdgeRows(t, killed); len(j) != len(res.Ledger) {
		t.Errorf("journal has %d edge rows, ledger %d", len(j), len(res.Ledger))
	}
}

// os16Cut writes to killed the journal of dir up to and including its
// last record that contains every one of marks: what a process killed
// right after that append leaves.
func os16Cut(t *testing.T, dir, killed string, marks ...string) {
	t.Helper()
	journaltest.CopyRunDir(t, dir, killed)
	b, err := os.ReadFile(filepath.Join(dir, "spawn-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	cut := -1
	for i, l := range lines {
		all := true
		for _, m := range marks {
			all = all && strings.Contains(l, m)
		}
		if all {
			cut = i + 1
		}
	}
	if cut < 0 {
		t.Fatalf("no record with %q in the journal", marks)
	}
	if err := os.WriteFile(filepath.Join(killed, "spawn-journal.jsonl"), []byte(strings.Join(lines[:cut], "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// §3.7 edge ledger across a kill: a delegation supervise refused is
// ledgered unpropagated once; the process dies right after that row,
// before its tool loop journaled the call's result; the resumed root
// runs the call again and it is refused again — the ledger still holds
// the one refused traversal, as a cap refusal made again is ledgered
// once.
func TestOS16GraphRefusedSpawnRowAfterKill(t *testing.T) {
	dir, killed := t.TempDir(), t.TempDir()
	model := func() contract.ChatModel {
		return scripted.NewChatModel(scripted.ChatScript{FromConversation: true, Turns: []scripted.ChatTurn{
			{Events: []contract.ChatEvent{os16Call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "écris ✓",
				"budget": map[string]any{"maxTokens": 999999}})}},
			{Events: []contract.ChatEvent{scripted.Text("done")}},
		}})
	}
	g, o := os16SteerOptions(t, dir, false)
	o.Supervise.Router = model()
	res, err := graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ledger) != 1 || res.Ledger[0].Outcome != graph.OutcomeUnpropagated {
		t.Fatalf("first run ledger %+v", res.Ledger)
	}
	os16Cut(t, dir, killed, `"kind":"edge"`)
	g, o = os16SteerOptions(t, killed, true)
	o.Supervise.Router = model()
	res, err = graph.RunGraph(context.Background(), g, o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Ledger {
		got = append(got, r.Edge+"#"+strconv.Itoa(r.Traversal)+" "+string(r.Outcome)+" "+r.Reason)
	}
	if len(res.Ledger) != 1 {
		t.Errorf("resumed ledger %q, want the one refused traversal", got)
	}
}

// §3.7 edge ledger across a kill at every record: a root that
// delegates, steers the worker and awaits it is killed after each
// record of its journal and resumed. Every resumed run's ledger equals
// its journal's edge records, numbers each edge's traversals 1..n
// without a gap or a repeat, and holds the one delegation delivered
// and the one steer once.
func TestOS16GraphKillSweep(t *testing.T) {
	dir := t.TempDir()
	g, o := os16SteerOptions(t, dir, false)
	full, err := graph.RunGraph(context.Background(), g, o)
	if err != nil || full.Result.Status != supervise.StatusWinner {
		t.Fatalf("uninterrupted: %v %s %s", err, full.Result.Status, full.Result.Reason)
	}
	b, err := os.ReadFile(filepath.Join(dir, "spawn-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1]
	for k := 1; k < len(lines); k++ {
		killed := t.TempDir()
		journaltest.CopyRunDir(t, dir, killed)
		if err := os.WriteFile(filepath.Join(killed, "spawn-journal.jsonl"), []byte(strings.Join(lines[:k], "")), 0o644); err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal([]byte(lines[k-1]), &rec)
		name := fmt.Sprintf("killed after record %d (%s)", k, rec.Kind)
		g, o := os16SteerOptions(t, killed, true)
		res, err := graph.RunGraph(context.Background(), g, o)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		var got []string
		for i, r := range res.Ledger {
			got = append(got, r.Edge+"#"+strconv.Itoa(r.Traversal)+" "+string(r.Continuity)+" "+string(r.Outcome))
			if r.Traversal != i+1 {
				t.Errorf("%s: row %d is traversal %d", name, i, r.Traversal)
			}
		}
		// The root's one steer_agent call is one traversal whatever
		// the kill point; the one delegation too, unless the kill left
		// its worker in doubt (ExecutorFunc binds no execution) and the
		// re-run call tried anew.
		steers, fresh := 0, 0
		for _, r := range res.Ledger {
			switch {
			case r.Continuity == graph.ContinuitySteer:
				steers++
			case r.Outcome == graph.OutcomeDelivered:
				fresh++
			}
		}
		if steers != 1 || fresh != 1 {
			t.Errorf("%s: ledger %q: %d steer rows, %d delivered delegations, want 1 and 1", name, got, steers, fresh)
		}
		j := journaledEdgeRows(t, killed)
		if len(j) != len(res.Ledger) {
			t.Errorf("%s: journal %d edge rows, ledger %d", name, len(j), len(res.Ledger))
		} else {
			for i := range j {
				if j[i] != res.Ledger[i] {
					t.Errorf("%s: journal row %d %+v, ledger %+v", name, i, j[i], res.Ledger[i])
				}
			}
		}
	}
}
