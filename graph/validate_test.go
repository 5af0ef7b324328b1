package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// refused is what a refusal names: the error type and its path or field.
type refused struct {
	Type  string
	Where string
}

func refusalOf(err error) refused {
	var ve *graph.ValidationError
	var ce *graph.ConfigError
	switch {
	case err == nil:
		return refused{}
	case errors.As(err, &ve):
		return refused{"validation", ve.Path}
	case errors.As(err, &ce):
		return refused{"config", ce.Field}
	}
	return refused{"other", err.Error()}
}

// Behaviour 52 (spec runtime §3.7 "Validation before spend"; checklist
// FD-07): every malformed graph or option is refused with a typed error
// naming the offending path, before any worker runs or the root's model
// is called.
func TestValidationBeforeSpendBehaviour52(t *testing.T) {
	analyst := func(g *graph.Graph, t *testing.T) {
		g.Nodes = append(g.Nodes, graph.Node{ID: "critic", Profile: workerProfile(t, "critic")})
		g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
	}
	cases := []struct {
		name  string
		graph func(*graph.Graph, *testing.T)
		opts  func(*graph.Options)
		want  refused
	}{
		{name: "a valid star", want: refused{}},
		{name: "profile.name differs from the id", graph: func(g *graph.Graph, t *testing.T) { g.Nodes[1].Profile = workerProfile(t, "coder-v2") },
			want: refused{"validation", "nodes[1].profile.name"}},
		{name: "zero roots: a delegates cycle", graph: func(g *graph.Graph, _ *testing.T) {
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Delegates, From: "coder", To: "driver", Directive: "delegate/coder/v1"})
		}, want: refused{"validation", "edges"}},
		{name: "two roots", graph: func(g *graph.Graph, t *testing.T) {
			g.Nodes = append(g.Nodes, graph.Node{ID: "lead", Profile: driverProfile(t, "lead", supervise.VerbSpawnWorker)}, graph.Node{ID: "tester", Profile: workerProfile(t, "tester")})
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Delegates, From: "lead", To: "tester", Directive: "delegate/coder/v1"})
		}, want: refused{"validation", "edges"}},
		{name: "self-delegation", graph: func(g *graph.Graph, _ *testing.T) {
			g.Edges[0].To = "driver"
		}, want: refused{"validation", "edges[0].to"}},
		{name: "a worker node that would manage (declares coordination verbs)", graph: func(g *graph.Graph, t *testing.T) {
			g.Nodes[1].Profile = driverProfile(t, "coder", supervise.VerbSpawnWorker)
		}, want: refused{"validation", "nodes[1].profile.tools"}},
		{name: "root lacks the spawn tool", graph: func(g *graph.Graph, t *testing.T) {
			g.Nodes[0].Profile = driverProfile(t, "driver", supervise.VerbAwaitEvent)
		}, want: refused{"validation", "nodes[0].profile.tools"}},
		{name: "analyst node as a delegates target", graph: func(g *graph.Graph, t *testing.T) {
			analyst(g, t)
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Delegates, From: "driver", To: "critic", Directive: "delegate/coder/v1"})
		}, want: refused{"validation", "edges[2].analyst"}},
		{name: "id both node and lens", graph: analyst, opts: func(o *graph.Options) {
			o.Supervise.Analysts = []supervise.Lens{{ID: "critic", Description: "d", Area: "a", Question: "q", Instructions: "i", ToolGroup: supervise.ToolGroupAll}}
		}, want: refused{"validation", "edges[2].analyst"}},
		{name: "a built-in lens id that is also a node", graph: func(g *graph.Graph, t *testing.T) {
			analyst(g, t)
			g.Nodes[3] = graph.Node{ID: "failure-triage", Profile: workerProfile(t, "failure-triage")}
			g.Edges[2].Analyst = "failure-triage"
		}, want: refused{"validation", "edges[2].analyst"}},
		{name: "an analyzes edge over an unknown node", graph: func(g *graph.Graph, _ *testing.T) {
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "claims-check", Over: []string{"nobody"}, To: "driver", Directive: "analyze/critic/v2"})
		}, want: refused{"validation", "edges[2].over[0]"}},
		{name: "a supervise AuthorizeMessage (§3.7: the graph wraps Options.AuthorizeMessage)", opts: func(o *graph.Options) {
			o.Supervise.AuthorizeMessage = func(_ context.Context, m supervise.DownMessage) (string, error) { return m.Instruction, nil }
		}, want: refused{"config", "Supervise.AuthorizeMessage"}},
		{name: "a supervise AfterSettle", opts: func(o *graph.Options) {
			o.Supervise.AfterSettle = func(context.Context, *supervise.Coordinator, supervise.Settled) {}
		}, want: refused{"config", "Supervise.AfterSettle"}},
		{name: "an owned supervise option", opts: func(o *graph.Options) {
			o.Supervise.Profiles = map[string]*profile.Profile{"x": nil}
		}, want: refused{"config", "Supervise.Profiles"}},
		{name: "authored profiles in a graph", opts: func(o *graph.Options) { o.Supervise.AuthoredProfiles = true },
			want: refused{"config", "Supervise.AuthoredProfiles"}},
		{name: "a second budget", opts: func(o *graph.Options) { o.Supervise.Budget = ledger.Budget{Tokens: i64(1)} },
			want: refused{"config", "Supervise.Budget"}},
		{name: "a supervise brain", opts: func(o *graph.Options) {
			o.Supervise.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
				return supervise.BrainReport{}, nil
			})
		}, want: refused{"config", "Supervise.Brain"}},
		{name: "brain and router together", opts: func(o *graph.Options) {
			o.Brain = graph.BrainFunc(func(context.Context, *graph.Driver, string) (supervise.BrainReport, error) {
				return supervise.BrainReport{}, nil
			})
		}, want: refused{"config", "Brain"}},
		{name: "no nodes", graph: func(g *graph.Graph, _ *testing.T) { g.Nodes = nil }, want: refused{"validation", "nodes"}},
		{name: "no edges", graph: func(g *graph.Graph, _ *testing.T) { g.Edges = nil }, want: refused{"validation", "edges"}},
		{name: "no deliverable", graph: func(g *graph.Graph, _ *testing.T) { g.Deliverable = supervise.Deliverable{} },
			want: refused{"validation", "deliverable.check"}},
		{name: "no budget", graph: func(g *graph.Graph, _ *testing.T) { g.Budget = nil }, want: refused{"validation", "budget"}},
		{name: "duplicate id", graph: func(g *graph.Graph, _ *testing.T) { g.Nodes[2] = g.Nodes[1] }, want: refused{"validation", "nodes[2].id"}},
		{name: "no delegates edge", graph: func(g *graph.Graph, t *testing.T) {
			g.Edges = []graph.Edge{{Kind: graph.Analyzes, Analyst: "reviewer", Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"}}
		}, want: refused{"validation", "edges"}},
		{name: "unknown directive", graph: func(g *graph.Graph, _ *testing.T) { g.Edges[1].Directive = "delegate/reviewer/v9" },
			want: refused{"validation", "edges[1].directive"}},
		{name: "not a handle", graph: func(g *graph.Graph, _ *testing.T) { g.Edges[1].Directive = "review it" },
			want: refused{"validation", "edges[1].directive"}},
		{name: "invalid continuity", graph: func(g *graph.Graph, _ *testing.T) { g.Edges[0].Continuity = "steer" },
			want: refused{"validation", "edges[0].continuity"}},
		{name: "zero cap", graph: func(g *graph.Graph, _ *testing.T) { g.Edges[0].MaxTraversals = new(0) },
			want: refused{"validation", "edges[0].maxTraversals"}},
		{name: "not a star", graph: func(g *graph.Graph, t *testing.T) {
			g.Nodes = append(g.Nodes, graph.Node{ID: "tester", Profile: workerProfile(t, "tester")})
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Delegates, From: "coder", To: "tester", Directive: "delegate/coder/v1"})
		}, want: refused{"validation", "edges[2].from"}},
		{name: "analyzes with continuity", graph: func(g *graph.Graph, t *testing.T) {
			analyst(g, t)
			g.Edges[2].Continuity = graph.ContinuityFresh
		}, want: refused{"validation", "edges[2].continuity"}},
		{name: "two analyzes edges for one analyst", graph: func(g *graph.Graph, t *testing.T) {
			analyst(g, t)
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"reviewer"}, To: "driver", Directive: "analyze/critic/v2"})
		}, want: refused{"validation", "edges[3].analyst"}},
		{name: "analyzes the root", graph: func(g *graph.Graph, t *testing.T) {
			analyst(g, t)
			g.Edges[2].Over = []string{"driver"}
		}, want: refused{"validation", "edges[2].over[0]"}},
		{name: "unreachable node", graph: func(g *graph.Graph, t *testing.T) {
			g.Nodes = append(g.Nodes, graph.Node{ID: "idle", Profile: workerProfile(t, "idle")})
		}, want: refused{"validation", "nodes[3]"}},
		{name: "invalid profile", graph: func(g *graph.Graph, _ *testing.T) {
			g.Nodes[2].Profile = &profile.Profile{Name: new("reviewer"), Harness: "no-such-harness"}
		}, want: refused{"validation", "nodes[2].profile"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := starGraph(t)
			if tc.graph != nil {
				tc.graph(&g, t)
			}
			workers := &inboxWorkers{}
			model := &countingModel{ChatModel: router(turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "t"})))}
			o := options(t, workers, model)
			if tc.opts != nil {
				tc.opts(&o)
			}
			if diff := cmp.Diff(tc.want, refusalOf(graph.Validate(g, o))); diff != "" {
				t.Fatalf("Validate (-want +got):\n%s", diff)
			}
			if tc.want == (refused{}) {
				return
			}
			_, err := graph.RunGraph(context.Background(), g, o)
			if diff := cmp.Diff(tc.want, refusalOf(err)); diff != "" {
				t.Errorf("RunGraph (-want +got):\n%s", diff)
			}
			if n, m := workers.runs.Load(), model.calls.Load(); n != 0 || m != 0 {
				t.Errorf("a refused graph spent: %d worker runs, %d root model calls", n, m)
			}
		})
	}
}
