package graph_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
)

// Issue 13: Decode bounds its input for every caller, not only the CLI:
// a definition of MaxDefinitionLen bytes decodes, one byte more is a
// *ValidationError at the document's root (pointer "") naming the limit.
func TestDecodeBoundsTheDefinition(t *testing.T) {
	doc := `{"nodes": [], "edges": [], "budget": {"maxTokens": 1, "maxIterations": 1}}`
	pad := func(n int) []byte { return []byte(doc + strings.Repeat(" ", n-len(doc))) }
	if _, err := graph.Decode(pad(graph.MaxDefinitionLen)); err != nil {
		t.Fatalf("a definition of exactly MaxDefinitionLen bytes: %v", err)
	}
	_, err := graph.Decode(pad(graph.MaxDefinitionLen + 1))
	var ve *graph.ValidationError
	if !errors.As(err, &ve) || ve.Pointer() != "" || !strings.Contains(ve.Reason, strconv.Itoa(graph.MaxDefinitionLen)) {
		t.Fatalf("Decode of MaxDefinitionLen+1 bytes = %v, want a *ValidationError at pointer \"\" naming the limit %d", err, graph.MaxDefinitionLen)
	}
}
