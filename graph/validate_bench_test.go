package graph_test

import (
	"errors"
	"fmt"
	"strings"
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

// starDocOf is a graph definition of a root delegating to n workers,
// each analysed by its own analyst node.
func starDocOf(n int) []byte {
	var b strings.Builder
	node := func(id string, tools string) string {
		return fmt.Sprintf(`{"id": %q, "profile": {"name": %q, "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/x"}%s}}`, id, id, tools)
	}
	b.WriteString(`{"nodes": [` + node("driver", `, "tools": {"agent_runtime_coordination_spawn_worker": true}`))
	for i := range n {
		b.WriteString(", " + node(fmt.Sprintf("w%d", i), "") + ", " + node(fmt.Sprintf("a%d", i), ""))
	}
	b.WriteString(`], "edges": [`)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"kind": "delegates", "from": "driver", "to": "w%d", "directive": "delegate/coder/v1"}, `, i)
		fmt.Fprintf(&b, `{"kind": "analyzes", "analyst": "a%d", "over": ["w%d"], "to": "driver", "directive": "analyze/critic/v2"}`, i, i)
	}
	b.WriteString(`], "budget": {"tokens": 1000000, "iterations": 1000}}`)
	return []byte(b.String())
}

// BenchmarkDecodeValidate decodes and validates a definition of n
// workers and n analysts: linear in n.
func BenchmarkDecodeValidate(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			doc := starDocOf(n)
			o := options(b, nil, router())
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				g, err := graph.Decode(doc)
				if err != nil {
					b.Fatal(err)
				}
				g.Deliverable = passing
				if err := graph.Validate(g, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
