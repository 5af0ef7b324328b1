package graph_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/supervise"
)

const starDoc = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base"}},
    {"id": "critic", "profile": {"name": "critic", "harness": "cli-base"}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1", "maxTraversals": 3, "continuity": "fresh"},
    {"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "driver", "directive": "analyze/critic/v2"}
  ],
  "budget": {"tokens": 10000, "iterations": 10, "usd": 1.5}
}`

// FD-07: a graph is data. Decode reads the definition strictly; with the
// caller's deliverable it validates like a Go-built graph.
func TestDecodeStarDefinition(t *testing.T) {
	g, err := graph.Decode([]byte(starDoc))
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Nodes []string
		Edges []string
		Caps  []int
		USD   int64
	}
	got := summary{USD: *g.Budget.MicroUSD}
	for _, n := range g.Nodes {
		got.Nodes = append(got.Nodes, n.ID+"="+*n.Profile.Name)
	}
	for _, e := range g.Edges {
		got.Edges = append(got.Edges, e.ID())
		if e.MaxTraversals != nil {
			got.Caps = append(got.Caps, *e.MaxTraversals)
		}
	}
	want := summary{Nodes: []string{"driver=driver", "coder=coder", "critic=critic"},
		Edges: []string{"delegates:driver->coder", "analyzes:critic:coder->driver"}, Caps: []int{3}, USD: 1_500_000}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
	g.Deliverable = passing
	o := options(t, nil, router())
	if err := graph.Validate(g, o); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// Behaviour 52 for data: an unknown or misplaced key, a wrong type or a
// bad profile is refused with the path that holds it.
func TestDecodeRefusesWithPath(t *testing.T) {
	edges := `"edges": [{"kind": "delegates", "from": "a", "to": "b", "directive": "d/v1"}]`
	nodes := `"nodes": [{"id": "a", "profile": {"name": "a"}}]`
	budget := `"budget": {"tokens": 1, "iterations": 1}`
	cases := []struct {
		name, doc, path string
	}{
		{"unknown top-level key", `{` + nodes + `,` + edges + `,` + budget + `, "options": {}}`, "options"},
		{"missing budget", `{` + nodes + `,` + edges + `}`, "budget"},
		{"not an object", `[]`, "graph"},
		{"unknown node key", `{"nodes": [{"id": "a", "role": "x"}],` + edges + `,` + budget + `}`, "nodes[0].role"},
		{"bad profile", `{"nodes": [{"id": "a", "profile": {"name": "a", "harness": 7}}],` + edges + `,` + budget + `}`, "nodes[0].profile"},
		{"unknown edge kind", `{` + nodes + `, "edges": [{"kind": "feeds"}],` + budget + `}`, "edges[0].kind"},
		{"analyst on a delegates edge", `{` + nodes + `, "edges": [{"kind": "delegates", "analyst": "x"}],` + budget + `}`, "edges[0].analyst"},
		{"continuity on an analyzes edge", `{` + nodes + `, "edges": [{"kind": "analyzes", "continuity": "fresh"}],` + budget + `}`, "edges[0].continuity"},
		{"fractional cap", `{` + nodes + `, "edges": [{"kind": "delegates", "maxTraversals": 1.5}],` + budget + `}`, "edges[0].maxTraversals"},
		{"string id", `{"nodes": [{"id": 3}],` + edges + `,` + budget + `}`, "nodes[0].id"},
		{"negative tokens", `{` + nodes + `,` + edges + `, "budget": {"tokens": -1}}`, "budget.tokens"},
		{"unknown budget key", `{` + nodes + `,` + edges + `, "budget": {"gpus": 1}}`, "budget.gpus"},
		{"negative usd", `{` + nodes + `,` + edges + `, "budget": {"usd": -1}}`, "budget.usd"},
		// Two members of one name: which one holds is a parser's guess,
		// so the document is refused, not read last-wins.
		{"a second budget", `{` + nodes + `,` + edges + `,` + budget + `, "budget": {"tokens": 9, "iterations": 9}}`, "budget"},
		{"a second edge target", `{` + nodes + `, "edges": [{"kind": "delegates", "from": "a", "to": "b", "to": "a", "directive": "d/v1"}],` + budget + `}`, "edges[0].to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := graph.Decode([]byte(tc.doc))
			if diff := cmp.Diff(refused{"validation", tc.path}, refusalOf(err)); diff != "" {
				t.Errorf("(-want +got):\n%s\nerr: %v", diff, err)
			}
		})
	}
}

// FuzzDecode: no input makes Decode or Validate panic, and a document
// Decode accepts validates to nil or a typed refusal.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(starDoc))
	f.Add([]byte(`{"nodes": [], "edges": [], "budget": {}}`))
	f.Add([]byte(`{"nodes": [{"id": "a"}], "edges": [{"kind": "analyzes", "over": ["a", "a"]}], "budget": {"usd": 1e9}}`))
	f.Add([]byte(`{"nodes": null, "edges": [null], "budget": null}`))
	reg, err := graph.NewRegistry(map[string]string{"delegate/coder/v1": "x", "analyze/critic/v2": "y"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := graph.Decode(data)
		if err != nil {
			if r := refusalOf(err); r.Type != "validation" || r.Where == "" {
				t.Fatalf("Decode refusal %v is not a *ValidationError with a path", err)
			}
			return
		}
		g.Deliverable = passing
		o := graph.Options{Registry: reg, Brain: graph.BrainFunc(func(context.Context, *graph.Driver, string) (supervise.BrainReport, error) {
			return supervise.BrainReport{}, nil
		})}
		if err := graph.Validate(g, o); err != nil && refusalOf(err).Type == "other" {
			t.Fatalf("Validate: untyped refusal %v", err)
		}
	})
}

// A document that is not JSON at all is refused as such, with where it
// stops being JSON, not as "not a JSON object" (which sends the author
// looking for an array or a string that is not there).
func TestDecodeNamesMalformedJSON(t *testing.T) {
	for _, tc := range []struct {
		name, doc, reason string
	}{
		{"truncated", `{"nodes": [`, "is not valid JSON: unexpected end of JSON input (at byte 11)"},
		{"bad token", `{"nodes": [}`, "is not valid JSON: invalid character '}' looking for beginning of value (at byte 12)"},
		{"trailing data", `{"nodes": []} x`, "is not valid JSON: invalid character 'x' after top-level value (at byte 15)"},
		{"empty", ``, "is not valid JSON: unexpected end of JSON input"},
		{"an array", `[1]`, "is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := graph.Decode([]byte(tc.doc))
			var ve *graph.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err %v, want a *graph.ValidationError", err)
			}
			if diff := cmp.Diff(graph.ValidationError{Path: "graph", Reason: tc.reason}, *ve); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
