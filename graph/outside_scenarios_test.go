package graph_test

// Scenarios an outside tester writes against §3.7 runGraph through
// the Go API, each with its own scripted executor and caller brain.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// outsideExec records every Execute by the profile name it ran and the
// digest of the profile it was given. A worker whose profile is named in
// fail errors; one named in block waits for ctx or release.
type outsideExec struct {
	mu      sync.Mutex
	calls   map[string]int
	digests map[string][]string
	tasks   map[string][]string
	steers  map[string][]string
	fail    map[string]bool
	block   map[string]bool
	release chan struct{}
	text    func(w supervise.Work) string
}

func newOutsideExec() *outsideExec {
	return &outsideExec{calls: map[string]int{}, digests: map[string][]string{}, tasks: map[string][]string{}, steers: map[string][]string{},
		fail: map[string]bool{}, block: map[string]bool{}, release: make(chan struct{})}
}

func (e *outsideExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	d, err := profile.Digest(w.Profile)
	if err != nil {
		return supervise.WorkResult{}, err
	}
	name := ""
	if w.Profile.Name != nil {
		name = *w.Profile.Name
	}
	e.mu.Lock()
	e.calls[name]++
	e.digests[name] = append(e.digests[name], d)
	e.tasks[name] = append(e.tasks[name], w.Task)
	fail, block := e.fail[name], e.block[name]
	e.mu.Unlock()
	tok, it := int64(10), int64(1)
	spent := ledger.Spend{Tokens: &tok, Iterations: &it}
	var waiting <-chan struct{}
	if w.Inbox != nil {
		waiting = w.Inbox.Waiting()
	}
	for block {
		select {
		case <-ctx.Done():
			return supervise.WorkResult{Spent: spent}, ctx.Err()
		case <-e.release:
			block = false
		case <-waiting:
			for _, m := range w.Inbox.Take(ctx) {
				e.mu.Lock()
				e.steers[name] = append(e.steers[name], m.Message)
				e.mu.Unlock()
			}
			waiting = w.Inbox.Waiting()
		}
	}
	for _, m := range w.Inbox.TakeOrSeal(ctx) {
		e.mu.Lock()
		e.steers[name] = append(e.steers[name], m.Message)
		e.mu.Unlock()
	}
	if fail {
		return supervise.WorkResult{Spent: spent}, errors.New("scripted failure of " + name)
	}
	text := "out of " + name
	if e.text != nil {
		text = e.text(w)
	}
	return supervise.WorkResult{Text: text, Spent: spent}, nil
}

// ReadsInbox: the workers take their steers (supervise.InboxReader).
func (e *outsideExec) ReadsInbox() bool { return true }

func (e *outsideExec) count(name string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[name]
}

const outsideDoc = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}},
    {"id": "critic", "profile": {"name": "critic", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/critic"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/v1", "maxTraversals": %d},
    {"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "driver", "directive": "analyze/v1"}
  ],
  "budget": {"maxTokens": 10000, "maxIterations": 8}
}`

func outsideGraph(t *testing.T, maxTraversals int, passes func(text string) bool) graph.Graph {
	t.Helper()
	g, err := graph.Decode(fmt.Appendf(nil, outsideDoc, maxTraversals))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	g.Deliverable = supervise.Deliverable{Describe: "a passing output", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: passes(out.Text), Reason: "outside check"}, nil
	}}
	return g
}

func outsideAwait(ctx context.Context, t *testing.T, d *graph.Driver, n int) []supervise.Event {
	t.Helper()
	var evs []supervise.Event
	deadline := time.Now().Add(20 * time.Second)
	for len(evs) < n && time.Now().Before(deadline) {
		r, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5000})
		if err != nil {
			t.Errorf("Await: %v", err)
			return evs
		}
		if r.Event != nil {
			evs = append(evs, *r.Event)
			continue
		}
		if r.Idle || r.Stopped {
			return evs
		}
	}
	return evs
}

// §3.7 node pinning: whatever the driver asks, a spawn of a node runs the
// node's canonical profile; a spawn naming no worker node (unknown, the
// root, an analyst node) or carrying an authored profile is refused with
// no executor call.
func TestOutsidePinningAndRefusedSpawnsBehaviour52(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 4, func(string) bool { return true })
	var canon string
	for _, n := range g.Nodes {
		if n.ID == "coder" {
			d, err := profile.Digest(n.Profile)
			if err != nil {
				t.Fatal(err)
			}
			canon = d
		}
	}
	ex := newOutsideExec()
	refusals := map[string]error{}
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		for _, p := range []string{"ghost", "driver", "critic", "Coder", " coder"} {
			_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: p, Task: "x"})
			refusals[p] = err
		}
		before := ex.count("coder") + ex.count("critic") + ex.count("ghost") + ex.count("driver")
		if before != 0 {
			t.Errorf("executor ran %d workers for refused spawns, want 0", before)
		}
		_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "x",
			AuthoredProfile: []byte(`{"name":"coder","harness":"cli-base","model":{"default":"scripted/evil"},"tools":{"agent_runtime_coordination_spawn_worker":true}}`)})
		if err != nil {
			t.Errorf("Spawn(coder) with an authored profile: %v, want admitted and pinned", err)
		}
		s, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it", Label: "critic"})
		if err != nil {
			t.Errorf("Spawn(coder): %v", err)
		}
		// A worker node has no spawn tool: a spawn under it is refused.
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "nested", Parent: s.WorkerID}); err == nil {
			t.Errorf("a spawn under the coder worker %s was admitted", s.WorkerID)
		}
		outsideAwait(ctx, t, d, 4)
		return supervise.BrainReport{Text: "done"}, nil
	})
	res, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex}})
	if err != nil {
		t.Fatalf("RunGraph: %v", err)
	}
	for p, err := range refusals {
		if err == nil {
			t.Errorf("Spawn(%q) was admitted, want refused", p)
		}
	}
	if got := ex.count("coder"); got != 2 {
		t.Errorf("coder ran %d times, want 2", got)
	}
	if ds := ex.digests["coder"]; len(ds) != 2 || ds[0] != canon || ds[1] != canon {
		t.Errorf("coder ran profile digests %v, want the canonical %s twice", ds, canon)
	}
	// A worker labelled like the analyst node is still the coder: the
	// analyzes edge over coder fires on both settles, and nothing
	// treats the label as a node.
	if got := ex.count("critic"); got != 2 {
		t.Errorf("critic ran %d times, want 2 (once per coder settle)", got)
	}
	if res.Result.Status != supervise.StatusWinner {
		t.Errorf("status %q, want winner", res.Result.Status)
	}
	for _, r := range res.Ledger {
		if r.Kind == graph.Delegates && (r.Traversal > 2 || r.Outcome != graph.OutcomeDelivered) {
			t.Errorf("refused spawns took traversals: %+v", r)
		}
	}
}

// §3.7 cap + behaviour 53: a delegates cap spent with no winner throws
// GraphEdgeCapError carrying the ledger; a steer is a traversal that
// consumes the edge's future spawn budget.
func TestOutsideCapSpentBySteerBehaviour53(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 2, func(string) bool { return false })
	ex := newOutsideExec()
	ex.block["coder"] = true
	var secondSpawn error
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		s, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := d.Steer(ctx, supervise.SteerArgs{WorkerID: s.WorkerID, Instruction: "also add a test"}); err != nil {
			t.Errorf("Steer: %v", err)
		}
		close(ex.release)
		outsideAwait(ctx, t, d, 1)
		_, secondSpawn = d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "again"})
		outsideAwait(ctx, t, d, 1)
		return supervise.BrainReport{Text: "gave up"}, nil
	})
	_, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex}})
	if secondSpawn == nil {
		t.Errorf("a third traversal of a cap-2 edge (spawn, steer, spawn) was admitted")
	}
	var capErr *graph.GraphEdgeCapError
	if !errors.As(err, &capErr) {
		t.Fatalf("RunGraph error %v, want *GraphEdgeCapError", err)
	}
	if len(capErr.ExhaustedEdges) != 1 || capErr.ExhaustedEdges[0] != "delegates:driver->coder" {
		t.Errorf("ExhaustedEdges %v", capErr.ExhaustedEdges)
	}
	var conts []string
	for _, r := range capErr.Ledger {
		if r.Kind == graph.Delegates {
			conts = append(conts, fmt.Sprintf("%d:%s:%s", r.Traversal, r.Continuity, r.Outcome))

		}
	}
	// The refused spawn is a ledger row too (the reference's
	// traversal-cap-exhausted), never a swallowed error.
	if want := "1:fresh:delivered,2:steer:delivered,3:fresh:unpropagated"; strings.Join(conts, ",") != want {
		t.Errorf("delegates ledger %v, want %s", conts, want)
	}
	var last graph.LedgerRow
	for _, r := range capErr.Ledger {
		if r.Kind == graph.Delegates {
			last = r
		}
	}
	if !strings.Contains(last.Reason, "traversal-cap-exhausted") {
		t.Errorf("last delegates row %+v, want the cap refusal", last)
	}
	if got := ex.steers["coder"]; len(got) != 1 || got[0] != "also add a test" {
		t.Errorf("coder took steers %q, want the one", got)
	}
	if capErr.Result.Status == supervise.StatusWinner {
		t.Errorf("cap error carries a winner")
	}
	if got := ex.count("coder"); got != 1 {
		t.Errorf("coder ran %d times, want 1", got)
	}
}

// §3.7 analyzes + §9: an analyst node that fails routes nothing, and its
// traversal is ledgered unpropagated with a reason; the pool is
// conserved (behaviour 36) when the brain returns.
func TestOutsideFailingAnalystNodeUnpropagatedBehaviour36(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 2, func(s string) bool { return strings.HasPrefix(s, "out of coder") })
	ex := newOutsideExec()
	ex.fail["critic"] = true
	var readout ledger.Readout
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it"}); err != nil {
			return supervise.BrainReport{}, err
		}
		evs := outsideAwait(ctx, t, d, 3)
		for _, e := range evs {
			// The driver hears the analyst's settle (state failed) but
			// gets no findings text.
			if e.Kind == graph.EventFinding && (e.Output != "" || e.State != supervise.StateFailed) {
				t.Errorf("a failed analyst delivered findings: %+v", e)
			}
		}
		readout = d.Readout()
		return supervise.BrainReport{Text: "done"}, nil
	})
	res, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex}})
	if err != nil {
		t.Fatalf("RunGraph: %v", err)
	}
	if res.Result.Status != supervise.StatusWinner {
		t.Errorf("status %q reason %q, want winner", res.Result.Status, res.Result.Reason)
	}
	if ex.count("critic") != 1 {
		t.Errorf("critic ran %d times, want 1", ex.count("critic"))
	}
	var an []graph.LedgerRow
	for _, r := range res.Ledger {

		if r.Kind == graph.Analyzes {
			an = append(an, r)
		}
	}
	if len(an) != 1 || an[0].Outcome != graph.OutcomeUnpropagated || an[0].Reason == "" || an[0].Edge != "analyzes:critic:coder->driver" {
		t.Errorf("analyzes rows %+v, want one unpropagated with a reason", an)
	}
	if err := readout.Conserved(); err != nil {
		t.Errorf("pool not conserved: %v", err)
	}
	for name, b := range readout.Channels {
		if b.Free+b.Reserved+b.Committed != b.Total {
			t.Errorf("channel %s: free %d + reserved %d + committed %d != total %d", name, b.Free, b.Reserved, b.Committed, b.Total)
		}
	}
	if b := readout.Channels["tokens"]; b.Total != 10000 {
		t.Errorf("tokens total %d, want 10000", b.Total)
	}
}

// §3.7 stripped: an AuthorizeMessage that narrows a steer ledgers it
// stripped, with the narrowed bytes; one that refuses ledgers it
// unpropagated.
func TestOutsideSteerStrippedAndRefusedBehaviour53(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 5, func(string) bool { return true })
	ex := newOutsideExec()
	ex.block["coder"] = true
	auth := func(_ context.Context, m graph.Message) (string, error) {
		if strings.Contains(m.Instruction, "rm -rf") {
			return "", errors.New("refused")
		}
		return strings.ReplaceAll(m.Instruction, " SECRET", ""), nil
	}
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		s, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		d.Steer(ctx, supervise.SteerArgs{WorkerID: s.WorkerID, Instruction: "use key SECRET"})
		d.Steer(ctx, supervise.SteerArgs{WorkerID: s.WorkerID, Instruction: "rm -rf /"})
		close(ex.release)
		outsideAwait(ctx, t, d, 2)
		return supervise.BrainReport{Text: "done"}, nil
	})
	res, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, AuthorizeMessage: auth, Supervise: supervise.Options{Executor: ex}})
	if err != nil {
		t.Fatalf("RunGraph: %v", err)
	}
	var got []string
	for _, r := range res.Ledger {
		if r.Kind == graph.Delegates && r.Continuity == graph.ContinuitySteer {
			got = append(got, fmt.Sprintf("%s/%d", r.Outcome, r.Bytes))
		}
	}
	want := fmt.Sprintf("stripped/%d,unpropagated/0", len("use key"))
	if got := ex.steers["coder"]; len(got) != 1 || got[0] != "use key" {
		t.Errorf("coder took steers %q, want only the narrowed one", got)
	}
	if strings.Join(got, ",") != want {
		t.Errorf("steer rows %v, want %s", got, want)
	}
}

// §3.7 "every directive resolves": an Options without a Registry
// resolves in the built-in one (the reference's default is its seeded
// registry), in Validate and in RunGraph alike; a handle the built-in
// registry lacks is still refused before any spend.
func TestOutsideNilRegistryIsBuiltin(t *testing.T) {
	g := outsideGraph(t, 1, func(string) bool { return true })
	ex := newOutsideExec()
	brain := graph.BrainFunc(func(context.Context, *graph.Driver, string) (supervise.BrainReport, error) {
		return supervise.BrainReport{}, nil
	})
	if err := graph.Validate(g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex}}); err != nil {
		t.Errorf("Validate without a Registry: %v", err)
	}
	g.Edges[0].Directive = "delegate/absent/v1"
	err := graph.Validate(g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex}})
	var ve *graph.ValidationError
	if !errors.As(err, &ve) || ve.Pointer() != "/edges/0/directive" {
		t.Errorf("Validate of an unknown handle without a Registry: %v, want a ValidationError at /edges/0/directive", err)
	}
}

// §3.7 analyzes: findings routed to a node with no live worker (never
// spawned) cross no edge: the traversal is ledgered unpropagated with a
// reason, never delivered, and the analyst still ran once on the pool.
func TestOutsideFindingsToANodeWithoutALiveWorker(t *testing.T) {
	ctx := context.Background()
	doc := `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}},
    {"id": "reviewer", "profile": {"name": "reviewer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/reviewer"}}},
    {"id": "critic", "profile": {"name": "critic", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/critic"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/v1"},
    {"kind": "delegates", "from": "driver", "to": "reviewer", "directive": "delegate/review/v1"},
    {"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "reviewer", "directive": "analyze/v1"}
  ],
  "budget": {"maxTokens": 10000, "maxIterations": 8}
}`
	g, err := graph.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	g.Deliverable = supervise.Deliverable{Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: out.Text == "out of coder"}, nil
	}}
	ex := newOutsideExec()
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it"}); err != nil {
			return supervise.BrainReport{}, err
		}
		outsideAwait(ctx, t, d, 2)
		return supervise.BrainReport{Text: "done"}, nil
	})
	res, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex}})
	if err != nil {
		t.Fatalf("RunGraph: %v", err)
	}
	if ex.count("critic") != 1 || ex.count("reviewer") != 0 {
		t.Errorf("critic ran %d, reviewer %d; want 1 and 0", ex.count("critic"), ex.count("reviewer"))
	}
	var an []graph.LedgerRow
	for _, r := range res.Ledger {
		if r.Kind == graph.Analyzes {
			an = append(an, r)
		}
	}
	if len(an) != 1 || an[0].Outcome != graph.OutcomeUnpropagated || an[0].Reason == "" || an[0].Bytes != 0 {
		t.Errorf("analyzes rows %+v, want one unpropagated with a reason and 0 bytes", an)
	}
}

// §3.7 cap + §6 / behaviour 38: a spawn the pool refuses (a ceiling past
// what is free, a usd request on a root without maxUsd) is ledgered
// unpropagated and does not spend the edge's cap (the reference charges
// a spawn row only when a live worker binds it); the pool is untouched
// by the refusals and conserved at the end (behaviour 36).
func TestOutsidePoolRefusedSpawnsSpendNoCapBehaviour38(t *testing.T) {
	ctx := context.Background()
	g := outsideGraph(t, 1, func(s string) bool { return s == "out of coder" })
	ex := newOutsideExec()
	var codes []string
	var readout ledger.Readout
	brain := graph.BrainFunc(func(ctx context.Context, d *graph.Driver, task string) (supervise.BrainReport, error) {
		before := d.Readout()
		huge, usd := int64(1_000_000), 0.5
		for _, b := range []*supervise.SpawnBudget{{Tokens: &huge}, {USD: &usd}} {
			_, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "x", Budget: b})
			c, _ := supervise.CodeOf(err)
			codes = append(codes, string(c))
		}
		if diff := before.Channels["tokens"]; d.Readout().Channels["tokens"] != diff {
			t.Errorf("refused spawns moved the pool: %+v -> %+v", diff, d.Readout().Channels["tokens"])
		}
		if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: "write it"}); err != nil {
			t.Errorf("the first admitted spawn of a cap-1 edge after two refusals: %v", err)
		}
		outsideAwait(ctx, t, d, 2)
		readout = d.Readout()
		return supervise.BrainReport{Text: "done"}, nil
	})
	res, err := graph.RunGraph(ctx, g, graph.Options{Task: "t", Brain: brain, Supervise: supervise.Options{Executor: ex}})
	if err != nil {
		t.Fatalf("RunGraph: %v", err)
	}
	if strings.Join(codes, ",") != "budget-exhausted,usd-unbudgeted" {
		t.Errorf("refusal codes %v, want budget-exhausted, usd-unbudgeted", codes)
	}
	var got []string
	for _, r := range res.Ledger {
		if r.Kind == graph.Delegates {
			got = append(got, fmt.Sprintf("%d:%s", r.Traversal, r.Outcome))
		}
	}
	if strings.Join(got, ",") != "1:unpropagated,2:unpropagated,3:delivered" {
		t.Errorf("delegates rows %v, want two unpropagated refusals then the delivered spawn", got)
	}
	if res.Result.Status != supervise.StatusWinner || ex.count("coder") != 1 {
		t.Errorf("status %q, coder ran %d; want a winner from one run", res.Result.Status, ex.count("coder"))
	}
	if err := readout.Conserved(); err != nil {
		t.Errorf("pool not conserved: %v", err)
	}
}
