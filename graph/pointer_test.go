package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/graph"
)

// A refused graph names the offending part as a JSON pointer (RFC 6901)
// into the graph document, beside its readable path.
func TestValidationErrorPointer(t *testing.T) {
	tests := []struct{ path, pointer string }{
		{"edges[0].to", "/edges/0/to"},
		{"nodes[1].profile.tools", "/nodes/1/profile/tools"},
		{"edges[2].over[0]", "/edges/2/over/0"},
		{`registry["Delegate"]`, "/registry/Delegate"},
		{`registry["a/b~c"]`, "/registry/a~1b~0c"},
		{"budget", "/budget"},
		{"graph", ""},
	}
	for _, tt := range tests {
		e := &graph.ValidationError{Path: tt.path, Reason: "r"}
		if got := e.Pointer(); got != tt.pointer {
			t.Errorf("Pointer of %s = %q, want %q", tt.path, got, tt.pointer)
		}
	}
	_, err := graph.Decode([]byte(`{"nodes": [{"id": "a", "role": "x"}], "edges": [], "budget": {"tokens": 1}}`))
	var ve *graph.ValidationError
	if !errors.As(err, &ve) || ve.Pointer() != "/nodes/0/role" || !strings.Contains(err.Error(), "(at /nodes/0/role)") {
		t.Errorf("Decode: %v; want a refusal at /nodes/0/role", err)
	}
}
