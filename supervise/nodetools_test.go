package supervise_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// productTools is an Options.ResolveSupervisorTools that gives the root
// a tool "root_note" and every nested manager a tool "lead_note", and
// keeps the node contexts it resolved for and those its tools' calls
// were told.
type productTools struct {
	mu       sync.Mutex
	resolved []supervise.NodeContext
	calls    []supervise.ToolCallContext
	runs     atomic.Int64
}

func (p *productTools) resolve(_ context.Context, nc supervise.NodeContext) ([]supervise.SupervisorTool, error) {
	p.mu.Lock()
	p.resolved = append(p.resolved, nc)
	p.mu.Unlock()
	name := "root_note"
	if nc.Depth > 0 {
		name = "lead_note"
	}
	schema, err := canonjson.Decode([]byte(`{"type":"object","properties":{"q":{"type":"string"}}}`))
	if err != nil {
		return nil, err
	}
	return []supervise.SupervisorTool{{Name: name, Description: "note something for this manager", InputSchema: schema,
		Run: func(_ context.Context, args canonjson.Value, call supervise.ToolCallContext) (canonjson.Value, error) {
			p.runs.Add(1)
			p.mu.Lock()
			p.calls = append(p.calls, call)
			p.mu.Unlock()
			return canonjson.Decode([]byte(`{"noted":"` + string(call.NodeID) + `"}`))
		}}}, nil
}

// offeredModel records the names of the tools each turn of it is
// offered, and the tool messages it reads.
type offeredModel struct {
	inner   contract.ChatModel
	mu      *sync.Mutex
	offered *[]string
	seen    *[]string
}

func newOfferedModel(inner contract.ChatModel) offeredModel {
	return offeredModel{inner: inner, mu: &sync.Mutex{}, offered: new([]string), seen: new([]string)}
}

func (m offeredModel) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.mu.Lock()
	for _, t := range tools {
		if !slices.Contains(*m.offered, t.Name) {
			*m.offered = append(*m.offered, t.Name)
		}
	}
	for _, msg := range messages {
		if msg.Role == contract.ChatTool && msg.Content != nil {
			*m.seen = append(*m.seen, *msg.Content)
		}
	}
	m.mu.Unlock()
	return m.inner.Turn(ctx, messages, tools)
}

func (m offeredModel) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(*m.offered)
}

// §3.6 resolveSupervisorTools: the tools are resolved once per manager
// node — the root and a nested manager — from that node's trusted
// context (run, node, depth, assignment, profile, task); each manager
// is offered its own (the lead never root_note, the root never
// lead_note), each call is told its manager's context and call id, and
// the nested manager's calls are journaled under its node.
func TestResolveSupervisorToolsPerManagerNode(t *testing.T) {
	var pt productTools
	root := newOfferedModel(scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(scripted.Call("r0", "root_note", `{"q":"root"}`), managerUsage(10, 0, 0.0001)),
		turn(call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead", "key": "k-lead",
			"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10, "maxUsd": 0.5}}), managerUsage(10, 0, 0.0001)),
		turn(call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0.0001)),
		turn(scripted.Text("root: the lead delivered"), managerUsage(10, 0, 0.0001)),
	}}))
	lead := newOfferedModel(scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(scripted.Call("l0", "lead_note", `{"q":"lead"}`), managerUsage(7, 3, 0.00001)),
		turn(scripted.Text("lead: DONE"), managerUsage(7, 3, 0.00001)),
	}}))
	var workers atomic.Int64
	o := nestedOptions(t, progressExecutor{runs: &workers}, root, func() contract.ChatModel { return lead })
	o.RunDir, o.ResolveSupervisorTools = t.TempDir(), pt.resolve
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	res, err := supervise.Supervise(context.Background(), mgr, "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" {
		t.Fatalf("status %s winner %+v error %+v, want the lead run1:s1 delivered", res.Status, res.Winner, res.Error)
	}
	type ident struct {
		Run        string
		Node       supervise.NodeID
		Depth      int
		Assignment string
		Profile    string
		Task       string
		Call       string
	}
	of := func(nc supervise.NodeContext, call string) ident {
		name := ""
		if nc.Profile != nil && nc.Profile.Name != nil {
			name = *nc.Profile.Name
		}
		return ident{nc.RunID, nc.NodeID, nc.Depth, nc.AssignmentID, name, nc.Task, call}
	}
	rootID := ident{"run1", "run1", 0, "", "manager", "ship", ""}
	leadID := ident{"run1", "run1:s1", 1, "key:k-lead", "lead", "lead the team", ""}
	var resolved, calls []ident
	for _, nc := range pt.resolved {
		resolved = append(resolved, of(nc, ""))
	}
	for _, c := range pt.calls {
		calls = append(calls, of(c.NodeContext, c.CallID))
	}
	byNode := cmpopts.SortSlices(func(a, b ident) bool { return a.Node < b.Node })
	if diff := cmp.Diff([]ident{rootID, leadID}, resolved, byNode); diff != "" {
		t.Errorf("resolved once per manager node (-want +got):\n%s", diff)
	}
	rootID.Call, leadID.Call = "r0", "l0"
	if diff := cmp.Diff([]ident{rootID, leadID}, calls, byNode); diff != "" {
		t.Errorf("the calls' contexts (-want +got):\n%s", diff)
	}
	if got := root.names(); !slices.Contains(got, "root_note") || slices.Contains(got, "lead_note") {
		t.Errorf("the root was offered %v, want root_note and not the lead's tool", got)
	}
	if got := lead.names(); !slices.Contains(got, "lead_note") || slices.Contains(got, "root_note") {
		t.Errorf("the lead was offered %v, want lead_note and not the root's tool", got)
	}
	journal := string(readJournal(t, o.RunDir))
	for _, want := range []string{
		`{"key":"root_note r0","kind":"` + supervise.KindExtraToolCalled + `","label":"root_note"}`,
		`{"data":{"noted":"run1:s1"},"key":"lead_note l0","kind":"` + supervise.KindExtraToolDone + `","label":"lead_note","node":"run1:s1"}`,
	} {
		if !strings.Contains(journal, want) {
			t.Errorf("the journal lacks %s:\n%s", want, journal)
		}
	}
}

// §3.6 resolveSupervisorTools, "at most once": a nested manager whose
// process died after its product tool call ran — its outcome journaled,
// or only its start — is driven again on resume, its tool loop running
// the call again from its journaled transcript: the journaled outcome
// comes back, or the call is answered in doubt; the product's function
// ran once in all. The tools are resolved again for the new process.
// Each manager keeps its own re-run calls: with the one run-wide set
// the root's resumed loop replaced the lead's (and the reverse), and
// this test failed 17 of 160 subtests (-count=40 -cpu 1,2: "lead_note
// ran 2 times in all, want once"); 0 of 160 with the set per manager.
func TestResolveSupervisorToolsNestedCallActsOnceAcrossResume(t *testing.T) {
	for _, kind := range []string{supervise.KindExtraToolDone, supervise.KindExtraToolCalled} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			var pt productTools
			var workers atomic.Int64
			var resumed atomic.Bool
			rootTurns := func() *scripted.ChatModel {
				return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
					turn(call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
						"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10, "maxUsd": 0.5}}), managerUsage(10, 0, 0.0001)),
					turn(call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0.0001)),
					turn(scripted.Text("unreached"), managerUsage(10, 0, 0.0001)),
				}})
			}
			var leadSeen offeredModel
			leadModel := func() contract.ChatModel {
				if resumed.Load() {
					leadSeen = newOfferedModel(scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
						turn(scripted.Text("lead: DONE"), managerUsage(7, 3, 0.00001)),
					}}))
					return leadSeen
				}
				return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
					turn(scripted.Call("l0", "lead_note", `{"q":"lead"}`), managerUsage(7, 3, 0.00001)),
					turn(scripted.Text("unreached"), managerUsage(7, 3, 0.00001)),
				}})
			}
			o := nestedOptions(t, progressExecutor{runs: &workers}, rootTurns(), leadModel)
			o.RunDir, o.ResolveSupervisorTools = dir, pt.resolve
			mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
			var dead atomic.Bool
			ctx := supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
				return cutAfter{SpawnLog: sl, kind: kind, dead: &dead}
			})
			if _, err := supervise.Supervise(ctx, mgr, "ship", o); err == nil || !dead.Load() {
				t.Fatalf("first run: err %v, cut %v; want it cut after %s", err, dead.Load(), kind)
			}
			resumed.Store(true)
			// The root's await (r2) may or may not have been journaled
			// before the cut: it awaits once more either way (idle once
			// it has the lead's settlement).
			o.Router = scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				turn(call("r3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0.0001)),
				turn(scripted.Text("root: the lead delivered"), managerUsage(10, 0, 0.0001)),
			}})
			o.Resume, o.Budget = true, ledger.Budget{}
			res, err := supervise.Supervise(context.Background(), mgr, "", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != supervise.StatusWinner || res.Winner.Node != "run1:s1" {
				t.Fatalf("resumed: status %s winner %+v error %+v, want the lead delivered", res.Status, res.Winner, res.Error)
			}
			if n := pt.runs.Load(); n != 1 {
				t.Errorf("lead_note ran %d times in all, want once", n)
			}
			leadResolved := 0
			for _, nc := range pt.resolved {
				if nc.NodeID == "run1:s1" {
					leadResolved++
				}
			}
			if leadResolved != 2 {
				t.Errorf("the lead's tools were resolved %d times, want once per process (2)", leadResolved)
			}
			want := `"noted":"run1:s1"`
			if kind == supervise.KindExtraToolCalled {
				want = "not run again"
			}
			if leadSeen.mu == nil {
				t.Fatal("the lead was not driven again on resume")
			}
			leadSeen.mu.Lock()
			seen := strings.Join(*leadSeen.seen, "\n")
			leadSeen.mu.Unlock()
			if !strings.Contains(seen, want) {
				t.Errorf("the resumed lead read %q, want the call's answer to hold %s", seen, want)
			}
		})
	}
}

// §3.6 resolveSupervisorTools: a name has one owner. A resolved tool
// named as a coordination verb (bare or prefixed), twice, as one of the
// root's ExtraTools, with no name or no Run is refused, and so is a
// resolver that fails, panics or does not answer: the root manager does
// not start, and the run ends driver-failed naming ErrResolveTools (the
// reference's manager act() throws before its loop or MCP server
// starts).
func TestResolveSupervisorToolsRefusedAtTheRoot(t *testing.T) {
	run := func(context.Context, canonjson.Value, supervise.ToolCallContext) (canonjson.Value, error) {
		return canonjson.Value{}, nil
	}
	var extraRuns atomic.Int64
	tools := func(ts ...supervise.SupervisorTool) func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		return func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) { return ts, nil }
	}
	for _, tc := range []struct {
		name    string
		resolve func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error)
		extra   bool
		want    string
	}{
		{"bare verb", tools(supervise.SupervisorTool{Name: supervise.VerbSpawnWorker, Run: run}), false, "collides with a coordination verb"},
		{"prefixed verb", tools(supervise.SupervisorTool{Name: supervise.ToolPrefix + supervise.VerbStop, Run: run}), false, "collides with a coordination verb"},
		{"twice", tools(supervise.SupervisorTool{Name: "x", Run: run}, supervise.SupervisorTool{Name: "x", Run: run}), false, "named twice"},
		{"an extra tool's name", tools(supervise.SupervisorTool{Name: "lookup", Run: run}), true, "already offered"},
		{"no name", tools(supervise.SupervisorTool{Run: run}), false, "has no name"},
		{"no run", tools(supervise.SupervisorTool{Name: "x"}), false, "has no Run"},
		// MCP's tool name rule (coordmcp serves them; providers refuse
		// others): both arms refuse alike, at resolve time.
		{"a space", tools(supervise.SupervisorTool{Name: "kb note", Run: run}), false, `may not contain ' '`},
		{"a newline", tools(supervise.SupervisorTool{Name: "kb\nnote", Run: run}), false, `may not contain '\n'`},
		{"129 characters", tools(supervise.SupervisorTool{Name: strings.Repeat("k", 129), Run: run}), false, "1 to 128 characters"},
		{"resolver error", func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) {
			return nil, errors.New("tenant unknown")
		}, false, "tenant unknown"},
		{"resolver panic", func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) {
			panic("boom")
		}, false, "panicked: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var workers atomic.Int64
			model := newOfferedModel(scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				turn(scripted.Text("unreached"), managerUsage(10, 0, 0.0001)),
			}}))
			o := baseOptions(t, progressExecutor{runs: &workers}, model)
			o.ResolveSupervisorTools = tc.resolve
			if tc.extra {
				o.ExtraTools = []contract.Tool{lookupTool(t, &extraRuns)}
			}
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonDriverFailed || res.Error == nil ||
				!strings.Contains(res.Error.Message, tc.want) || !strings.Contains(res.Error.Message, supervise.ErrResolveTools.Error()) {
				t.Errorf("status %s reason %s error %+v, want driver-failed naming %q", res.Status, res.Reason, res.Error, tc.want)
			}
			if got := model.names(); len(got) != 0 {
				t.Errorf("the manager's model was asked with tools %v, want it never started", got)
			}
		})
	}
}

// A resolver that does not answer is not waited for past its manager's
// context (callHook): here the run's deadline ends the root manager and
// the run ends without the manager having started.
func TestResolveSupervisorToolsBlockedResolverIsBounded(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var workers atomic.Int64
	model := newOfferedModel(scripted.NewChatModel(scripted.ChatScript{}))
	o := baseOptions(t, progressExecutor{runs: &workers}, model)
	ctx, cancel := context.WithCancel(context.Background())
	o.ResolveSupervisorTools = func(context.Context, supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		cancel() // the caller gives up on the run while the resolver hangs
		<-release
		return nil, nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run waited on a resolver that ignores its context")
	}
	if got := model.names(); len(got) != 0 {
		t.Errorf("the manager's model was asked with tools %v, want it never started", got)
	}
}

// A nested manager whose tools cannot be resolved settles failed naming
// why; the root's run goes on (the reference's nested act() throws).
func TestResolveSupervisorToolsNestedRefusalFailsTheLead(t *testing.T) {
	var workers atomic.Int64
	root := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("r1", supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead the team", "label": "lead",
			"budget": map[string]any{"maxTokens": 2000, "maxIterations": 10, "maxUsd": 0.5}}), managerUsage(10, 0, 0.0001)),
		turn(call("r2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 0, 0.0001)),
		turn(scripted.Text("root: the lead failed"), managerUsage(10, 0, 0.0001)),
	}})
	o := nestedOptions(t, progressExecutor{runs: &workers}, root, func() contract.ChatModel {
		return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{turn(scripted.Text("lead: DONE"), managerUsage(7, 3, 0.00001))}})
	})
	o.ResolveSupervisorTools = func(_ context.Context, nc supervise.NodeContext) ([]supervise.SupervisorTool, error) {
		if nc.Depth > 0 {
			return nil, errors.New("no tools for leads")
		}
		return nil, nil
	}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tree) != 1 || res.Tree[0].State != supervise.StateFailed || res.Tree[0].Settlement == nil ||
		!strings.Contains(res.Tree[0].Settlement.Reason, "no tools for leads") {
		t.Fatalf("tree %+v, want the lead failed naming the resolver's error", res.Tree)
	}
	if res.BrainText != "root: the lead failed" {
		t.Errorf("the root said %q, want its run to go on", res.BrainText)
	}
}
