package cli

import (
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/graph"
)

// findingsGraph is a graph whose root delegates to n nodes, each the
// subject of one analyzes edge: n findings over n targets.
func findingsGraph(n int) (graph.Graph, []string) {
	g := graph.Graph{}
	targets := make([]string, 0, n)
	for i := range n {
		id := fmt.Sprintf("w%d", i)
		targets = append(targets, id)
		g.Edges = append(g.Edges,
			graph.Edge{Kind: graph.Delegates, From: "root", To: id},
			graph.Edge{Kind: graph.Analyzes, Analyst: "a", Over: []string{id}, To: "root"})
	}
	return g, targets
}

func TestFindingsOverCountsEachTraversal(t *testing.T) {
	g, targets := findingsGraph(5)
	// An edge over two targets fires twice; one over a node that is not
	// a target fires never.
	g.Edges = append(g.Edges,
		graph.Edge{Kind: graph.Analyzes, Analyst: "b", Over: []string{"w1", "w2"}, To: "root"},
		graph.Edge{Kind: graph.Analyzes, Analyst: "c", Over: []string{"elsewhere"}, To: "root"})
	if got := findingsOver(g, targets); got != 7 {
		t.Fatalf("findingsOver = %d, want 7", got)
	}
	if got := findingsOver(g, append(targets, "w1")); got != 7 {
		t.Fatalf("findingsOver with a repeated target = %d, want 7", got)
	}
}

// BenchmarkFindingsOver shows findingsOver's cost against the number of
// findings: it should grow linearly (10x the findings, ~10x the time).
func BenchmarkFindingsOver(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		g, targets := findingsGraph(n)
		b.Run(fmt.Sprintf("findings=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if got := findingsOver(g, targets); got != n {
					b.Fatalf("findingsOver = %d, want %d", got, n)
				}
			}
		})
	}
}
