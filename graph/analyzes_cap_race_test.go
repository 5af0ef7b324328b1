package graph_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// analystGate is an AuthorizeSpawn that holds each analyst spawn (a
// lens's "analyst-<id>" or an analyst node's) until want of them are
// deciding at once, or until a deadline: two settlement hooks of one
// analyzes edge are then both past their cap check, the window a cap
// check that is not a reservation leaves open.
type analystGate struct {
	analyst func(profile string) bool
	want    int
	mu      sync.Mutex
	n       int
	all     chan struct{}
}

func newAnalystGate(want int, analyst func(string) bool) *analystGate {
	return &analystGate{analyst: analyst, want: want, all: make(chan struct{})}
}

func (g *analystGate) authorize(req supervise.SpawnRequest) error {
	if !g.analyst(req.Profile) {
		return nil
	}
	g.mu.Lock()
	if g.n++; g.n == g.want {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(3 * time.Second): // the cap held the other one back
	}
	return nil
}

// awaitIdle awaits events until the run has nothing live, within a
// deadline.
func awaitIdle(ctx context.Context, t *testing.T, d *graph.Driver) {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		ev, err := d.Await(ctx, supervise.AwaitArgs{TimeoutMS: 5000})
		if err != nil {
			t.Errorf("await: %v", err)
			return
		}
		if ev.Idle {
			return
		}
	}
	t.Errorf("the run was not idle within 60 s")
}

// §3.7, behaviour 53 (cap counting), GRAPH-CAP: an analyzes edge of
// maxTraversals 1 runs its analyst once however its source workers'
// settlement hooks interleave. Two coder workers settle together; each
// hook checks the edge's cap and then spawns the analyst — a check that
// is not a reservation lets both through while the first spawn is still
// being decided (here AuthorizeSpawn, which supervise asks without its
// spawn lock), and the edge spends two traversals of its one.
func TestAnalyzesCapHoldsAgainstConcurrentSettlesBehaviour53(t *testing.T) {
	for _, tc := range []struct {
		name    string
		analyst string
		profile string
	}{
		{"lens", "failure-triage", "analyst-failure-triage"},
		{"analyst node", "critic", "critic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := starGraph(t)
			if tc.analyst == "critic" {
				g.Nodes = append(g.Nodes, graph.Node{ID: "critic", Profile: workerProfile(t, "critic")})
			}
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: tc.analyst, Over: []string{"coder"}, To: "driver",
				Directive: "analyze/critic/v2", MaxTraversals: new(1)})
			script := strings.Replace(lensScript, `"match": "ANALYST LENS"`, `"match": "`+critDirective+`"`, 1)
			if tc.analyst == "failure-triage" {
				script = lensScript
			}
			gate := newAnalystGate(2, func(p string) bool { return p == tc.profile })
			o := options(t, kernelWorkers(t, script), nil)
			o.Supervise.AuthorizeSpawn = gate.authorize
			o.Brain = graph.BrainFunc(func(ctx context.Context, d *graph.Driver, _ string) (supervise.BrainReport, error) {
				for _, task := range []string{"Fix test_login.", "Fix test_logout."} {
					if _, err := d.Spawn(ctx, supervise.SpawnArgs{Profile: "coder", Task: task, Label: task[4:14]}); err != nil {
						return supervise.BrainReport{}, err
					}
				}
				awaitIdle(ctx, t, d)
				return supervise.BrainReport{}, nil
			})
			res, err := graph.RunGraph(context.Background(), g, o)
			if err != nil {
				t.Fatal(err)
			}
			analysts := 0
			for _, n := range res.Result.Tree {
				if n.Profile == tc.profile {
					analysts++
				}
			}
			var outcomes []string
			for _, r := range rowsOfKind(res.Ledger, graph.Analyzes) {
				outcomes = append(outcomes, string(r.Outcome)+" "+r.Reason)
			}
			// The capped row is ledgered at the second settle, the
			// delivered one at the analyst's: either may come first.
			slices.Sort(outcomes)
			if analysts != 1 {
				t.Errorf("%d analyst workers ran on an edge of maxTraversals 1, want 1; analyzes rows %q", analysts, outcomes)
			}
			if diff := cmp.Diff([]string{"delivered ", "unpropagated traversal-cap-exhausted (max 1)"}, outcomes); diff != "" {
				t.Errorf("analyzes rows (-want +got):\n%s", diff)
			}
		})
	}
}
