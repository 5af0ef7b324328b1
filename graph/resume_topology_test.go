package graph_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// §3.7 resume: a journal of another topology is refused before
// anything runs. Beyond the edges the journal ledgered and the brief
// (node ids, delegates caps), a topology is every node's canonical
// profile (node pinning: a re-spawned node must run the profile its
// earlier spawns ran), every edge — an analyzes edge that never fired
// yet, its cap — and the text each directive handle resolved to. Each
// change below is refused with a *supervise.ResumeError whose
// *supervise.ResumeMismatchError points into the graph, and the
// journal is left as it was.
func TestGraphResumeRefusesAChangedTopology(t *testing.T) {
	g, o, dir := directiveRun(t)
	journal := filepath.Join(dir, supervise.SpawnJournalFile)
	before, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	clone := func(g graph.Graph) graph.Graph {
		g.Nodes = append([]graph.Node(nil), g.Nodes...)
		g.Edges = append([]graph.Edge(nil), g.Edges...)
		return g
	}
	cases := []struct {
		name    string
		change  func(*graph.Graph, *graph.Options)
		pointer string
	}{
		{"a worker node's profile runs another model", func(g *graph.Graph, _ *graph.Options) {
			p, err := profile.Parse([]byte(`{"name": "reviewer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/bigger"}}`))
			if err != nil {
				t.Fatal(err)
			}
			g.Nodes[2].Profile = p
		}, "/nodes/2/profile"},
		{"an analyzes edge's cap", func(g *graph.Graph, _ *graph.Options) { g.Edges[2].MaxTraversals = new(1) }, "/edges/2/maxTraversals"},
		{"an analyzes edge added, its findings steered into a worker", func(g *graph.Graph, _ *graph.Options) {
			g.Edges = append(g.Edges, graph.Edge{Kind: graph.Analyzes, Analyst: "claims-check", Over: []string{"reviewer"}, To: "coder", Directive: "analyze/critic/v2"})
		}, "/edges/3"},
		{"a directive's text under the same handle", func(_ *graph.Graph, o *graph.Options) {
			var err error
			if o.Registry, err = o.Registry.With(map[string]string{"delegate/coder/v1": "Rewrite the module from scratch."}); err != nil {
				t.Fatal(err)
			}
		}, "/edges/0/directive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g, o := clone(g), o
			tc.change(&g, &o)
			_, err := graph.RunGraph(context.Background(), g, o)
			var re *supervise.ResumeError
			var me *supervise.ResumeMismatchError
			if !errors.As(err, &re) || !errors.As(err, &me) {
				t.Fatalf("resuming with a changed topology: %v, want a *supervise.ResumeError wrapping a *supervise.ResumeMismatchError", err)
			}
			if me.Pointer != tc.pointer {
				t.Errorf("the refusal points at %s, want %s: %v", me.Pointer, tc.pointer, err)
			}
			after, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			if string(after) != string(before) {
				t.Error("a refused resume changed the journal")
			}
		})
	}
}
