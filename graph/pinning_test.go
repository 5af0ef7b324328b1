package graph_test

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// profileRecorder answers every task at once and records the digest of
// the profile each execution was given, by the profile's name.
type profileRecorder struct {
	mu   sync.Mutex
	got  map[string][]string
	errs []error
}

func (p *profileRecorder) Execute(_ context.Context, w supervise.Work) (supervise.WorkResult, error) {
	d, err := profile.Digest(w.Profile)
	p.mu.Lock()
	if err != nil {
		p.errs = append(p.errs, err)
	}
	if p.got == nil {
		p.got = map[string][]string{}
	}
	p.got[*w.Profile.Name] = append(p.got[*w.Profile.Name], d)
	p.mu.Unlock()
	one := int64(1)
	return supervise.WorkResult{Text: "the patch", Spent: ledger.Spend{Tokens: i64(10), Iterations: &one, MicroUSD: i64(0)}}, nil
}

func (*profileRecorder) ReportsUsage() bool { return true }

// §3.7 node pinning: a spawn names a node and the node's canonical
// profile runs — a driver cannot smuggle capabilities. The root's model
// asks for coder on another model (an extra argument), for an authored
// coder profile declaring a model and tools of its own, and for the
// reviewer node under the label "coder"; an analyst node runs over the
// reviewer. What the executor received is compared by digest: only the
// nodes' own profiles ran — the authored coder ran the coder node's
// canonical profile (the object names its node; the rest is ignored, as
// the reference's runGraph pins it), the reviewer's, the analyst's and
// the coder's again — and the spawn with an extra argument ran nothing
// and crossed no edge.
func TestSpawnRunsTheNodesCanonicalProfile(t *testing.T) {
	g := starGraph(t)
	g.Nodes = append(g.Nodes, graph.Node{ID: "critic", Profile: workerProfile(t, "critic")})
	g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"reviewer"}, To: "driver", Directive: "analyze/critic/v2"})
	authored := map[string]any{"name": "coder", "harness": "cli-base", "model": map[string]any{"provider": "scripted", "default": "scripted/bigger"},
		"tools": map[string]any{"shell": true}}
	model := router(
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix it.", "model": "scripted/bigger"})),
		turn(call("c2", supervise.VerbSpawnWorker, map[string]any{"profile": authored, "task": "Fix it."})),
		turn(call("c3", supervise.VerbSpawnWorker, map[string]any{"profile": "reviewer", "label": "coder", "task": "Review it."})),
		turn(call("c4", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60_000})),
		turn(call("c5", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60_000})),
		// The critic's settle: its finding is ledgered before the next
		// spawn's row, so the ledger's order is the run's, not a race.
		turn(call("c5b", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60_000})),
		turn(call("c6", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "Fix it."})),
		turn(call("c7", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60_000})),
		turn(final("done")),
	)
	exec := &profileRecorder{}
	res, err := graph.RunGraph(context.Background(), g, options(t, exec, model))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, n := range g.Nodes[1:] {
		d, err := profile.Digest(n.Profile)
		if err != nil {
			t.Fatal(err)
		}
		want[n.ID] = []string{d}
	}
	want["coder"] = append(want["coder"], want["coder"]...) // the authored spawn, and the last
	if diff := cmp.Diff(want, exec.got); diff != "" || len(exec.errs) > 0 {
		t.Errorf("profiles the executor ran, by digest (-want +got):\n%s%v", diff, exec.errs)
	}
	var rows []string
	for _, r := range res.Ledger {
		rows = append(rows, r.Edge+" "+string(r.Outcome))
	}
	wantRows := []string{"delegates:driver->coder delivered", "delegates:driver->reviewer delivered", "analyzes:critic:reviewer->driver delivered", "delegates:driver->coder delivered"}
	if diff := cmp.Diff(wantRows, rows); diff != "" {
		t.Errorf("ledger (-want +got):\n%s", diff)
	}
}
