package graph_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 "Validation before spend", rules the behaviour-52 table leaves
// out: an analyzes edge that could never deliver, or whose id (the key
// of its ledger rows, its cap and its journal records) is another
// edge's, is refused before anything runs, naming the part.
func TestValidationRefusesEdgesThatCannotBeTold(t *testing.T) {
	critic := func(g *graph.Graph, t *testing.T, id string) {
		g.Nodes = append(g.Nodes, graph.Node{ID: id, Profile: workerProfile(t, id)})
	}
	cases := []struct {
		name  string
		graph func(*graph.Graph, *testing.T)
		want  refused
	}{
		{name: "findings to an analyst node (an oracle receives no work, so they would never be delivered)", graph: func(g *graph.Graph, t *testing.T) {
			critic(g, t, "critic")
			critic(g, t, "auditor")
			g.Edges = append(g.Edges,
				graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"coder"}, To: "auditor", Directive: "analyze/critic/v2"},
				graph.Edge{Kind: graph.Analyzes, Analyst: "auditor", Over: []string{"reviewer"}, To: "driver", Directive: "analyze/critic/v2"})
		}, want: refused{"validation", "edges[2].to"}},
		{name: "two analyzes edges of one id", graph: func(g *graph.Graph, t *testing.T) {
			// analyzes:a:b:c->driver twice: analyst a over b:c, analyst a:b over c.
			for _, id := range []string{"b:c", "c"} {
				g.Nodes = append(g.Nodes, graph.Node{ID: id, Profile: workerProfile(t, id)})
				g.Edges = append(g.Edges, graph.Edge{Kind: graph.Delegates, From: "driver", To: id, Directive: "delegate/coder/v1"})
			}
			critic(g, t, "a")
			critic(g, t, "a:b")
			g.Edges = append(g.Edges,
				graph.Edge{Kind: graph.Analyzes, Analyst: "a", Over: []string{"b:c"}, To: "driver", Directive: "analyze/critic/v2"},
				graph.Edge{Kind: graph.Analyzes, Analyst: "a:b", Over: []string{"c"}, To: "driver", Directive: "analyze/critic/v2"})
		}, want: refused{"validation", "edges[5]"}},
		{name: "a node named twice in over", graph: func(g *graph.Graph, t *testing.T) {
			critic(g, t, "critic")
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "critic", Over: []string{"coder", "coder"}, To: "driver", Directive: "analyze/critic/v2"})
		}, want: refused{"validation", "edges[2].over[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := starGraph(t)
			tc.graph(&g, t)
			workers := &inboxWorkers{}
			model := &countingModel{ChatModel: router(turn(call("c1", "spawn_worker", map[string]any{"profile": "coder", "task": "t"})))}
			o := options(t, workers, model)
			if diff := cmp.Diff(tc.want, refusalOf(graph.Validate(g, o))); diff != "" {
				t.Fatalf("Validate (-want +got):\n%s", diff)
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

// Validate checks the options exactly as RunGraph does: a caller lens
// (Supervise.Analysts) given twice, one with a built-in lens's id, or
// one out of §9's bounds is a *graph.ConfigError naming it from both,
// where Validate passed it and RunGraph returned supervise's untyped
// options error.
func TestValidateRefusesTheLensesRunGraphRefuses(t *testing.T) {
	lens := supervise.Lens{ID: "claims-x", Description: "d", Area: "a", Question: "q", Instructions: "i", ToolGroup: supervise.ToolGroupAll}
	builtin, bad := lens, lens
	builtin.ID, bad.ID = "failure-triage", "Bad_ID"
	cases := []struct {
		name   string
		lenses []supervise.Lens
		want   refused
	}{
		{"a lens given twice", []supervise.Lens{lens, lens}, refused{"config", "Supervise.Analysts[1]"}},
		{"a lens with a built-in lens's id", []supervise.Lens{builtin}, refused{"config", "Supervise.Analysts[0]"}},
		{"a lens id out of bounds", []supervise.Lens{bad}, refused{"config", "Supervise.Analysts[0]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := starGraph(t)
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: tc.lenses[0].ID, Over: []string{"coder"}, To: "driver", Directive: "analyze/critic/v2"})
			workers := &inboxWorkers{}
			model := &countingModel{ChatModel: router(turn(call("c1", "spawn_worker", map[string]any{"profile": "coder", "task": "t"})))}
			o := options(t, workers, model)
			o.Supervise.Analysts = tc.lenses
			if diff := cmp.Diff(tc.want, refusalOf(graph.Validate(g, o))); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
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
