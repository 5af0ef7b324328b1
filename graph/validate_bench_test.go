package graph_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/graph"
)

// manyRootsGraph is n pairs r<i> → w<i>: a graph of n roots, which
// Validate refuses, naming them.
func manyRootsGraph(tb testing.TB, n int) graph.Graph {
	g := starGraph(tb)
	g.Nodes, g.Edges = nil, nil
	worker := workerProfile(tb, "w")
	for i := range n {
		r, w := fmt.Sprintf("r%d", i), fmt.Sprintf("w%d", i)
		rp, wp := *worker, *worker
		rp.Name, wp.Name = &r, &w
		g.Nodes = append(g.Nodes, graph.Node{ID: r, Profile: &rp}, graph.Node{ID: w, Profile: &wp})
		g.Edges = append(g.Edges, graph.Edge{Kind: graph.Delegates, From: r, To: w, Directive: "delegate/coder/v1"})
	}
	return g
}

// BenchmarkValidateManyRoots: refusing a graph of n roots should cost
// linearly in n (10x the roots, ~10x the time).
func BenchmarkValidateManyRoots(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("roots=%d", n), func(b *testing.B) {
			g := manyRootsGraph(b, n)
			o := options(b, nil, nil)
			b.ReportAllocs()
			for b.Loop() {
				var ve *graph.ValidationError
				if err := graph.Validate(g, o); !errors.As(err, &ve) {
					b.Fatalf("Validate = %v, want a *ValidationError", err)
				}
			}
		})
	}
}
