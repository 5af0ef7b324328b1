package graph_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/graph"
)

// A member whose name holds a path's punctuation (".", "[", "]") or is
// empty is named in brackets, so the refusal's JSON pointer is the
// member's, not one read from the punctuation.
func TestRefusalPointerOfAnOddMemberName(t *testing.T) {
	for _, tc := range []struct{ doc, path, pointer string }{
		{`{"nodes": [], "edges": [], "budget": {"max.0": 1}}`, `budget["max.0"]`, "/budget/max.0"},
		{`{"nodes": [], "edges": [], "budget": {"": 1}}`, `budget[""]`, "/budget/"},
		{`{"nodes": [], "edges": [], "budget": {"a[1]": 1}}`, `budget["a[1]"]`, "/budget/a[1]"},
		{`{"nodes": [], "edges": [], "budget": {}, "x.y": 1}`, `["x.y"]`, "/x.y"},
		{`{"nodes": [], "edges": [], "budget": {"maxTokens": 1, "maxIterations": 1, "resources": {"a.b": {"unit": "u", "limit": 1, "a.b": 2}}}}`,
			`budget.resources["a.b"]["a.b"]`, "/budget/resources/a.b/a.b"},
		{`{"nodes": [], "edges": [], "budget": {"a.b": 1, "a.b": 2}}`, `budget["a.b"]`, "/budget/a.b"},
		{`{"nodes": [], "edges": [], "budget": {"": 1, "": 2}}`, `budget[""]`, "/budget/"},
	} {
		_, err := graph.Decode([]byte(tc.doc))
		var ve *graph.ValidationError
		if !errors.As(err, &ve) || ve.Path != tc.path || ve.Pointer() != tc.pointer {
			t.Errorf("%s: %v; want a refusal at %s (%s)", tc.doc, err, tc.path, tc.pointer)
		}
	}
}
