package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/mcpserver"
)

// TestStdioDeepArgumentsAreAToolResult: a tools/call whose arguments
// nest deeper than the SDK decodes (1000 levels in the whole message) is
// answered on the stdio transport with the call's own id, as a tool
// result {error: invalid_arguments, reason} naming the JSON pointer where
// the nesting goes too deep, and the client's session goes on. (A reply
// with a null id is one no client can match to its call; the MCP Go
// SDK's client closes its session on it.)
func TestStdioDeepArgumentsAreAToolResult(t *testing.T) {
	ctx := deadline(t)
	echo := contract.Tool{Name: "echo", Run: func(_ context.Context, args canonjson.Value) (canonjson.Value, error) { return args, nil }}
	srv, err := mcpserver.New([]contract.Tool{echo}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ctx, srv, "pipe")
	tests := []struct {
		depth   int
		pointer string
	}{
		{depth: 999, pointer: "/a/0/0"},
		{depth: 5000, pointer: "/a/0/0"},
	}
	for _, tt := range tests {
		deep := strings.Repeat("[", tt.depth) + strings.Repeat("]", tt.depth)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"a":` + deep + `}`)})
		if err != nil {
			t.Fatalf("depth %d: a protocol error %v, want a tool result", tt.depth, err)
		}
		got := outcomeOf(t, res)
		if got.OK || got.Code != kernel.CodeInvalidArguments || !strings.Contains(got.Reason, "the arguments at /a/0/0") || len(got.Reason) > mcpserver.MaxReasonBytes+len("…") {
			t.Errorf("depth %d: %+v, want invalid_arguments naming a pointer under /a", tt.depth, got)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"ok": true}})
	if err != nil {
		t.Fatalf("the call after: %v", err)
	}
	if got := outcomeOf(t, res); !got.OK {
		t.Errorf("the call after: %+v", got)
	}
}

// TestRefusalReasonIsBounded: a refused call's reason quotes the
// refused value; a 2 MiB one does not come back whole (the model would
// be shown it as the result): the reason is clipped to MaxReasonBytes,
// still naming the pointer, on the stdio and the HTTP transport.
func TestRefusalReasonIsBounded(t *testing.T) {
	ctx := deadline(t)
	schema, err := canonjson.Decode([]byte(`{"type":"object","properties":{"n":{"type":"integer"}},"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	tool := contract.Tool{Name: "count", InputSchema: schema, Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
		return canonjson.ObjectValue(nil), nil
	}}
	srv, err := mcpserver.New([]contract.Tool{tool}, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2<<20)
	for _, kind := range transports {
		res, err := connect(t, ctx, srv, kind).CallTool(ctx, &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"n": big}})
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		got := outcomeOf(t, res)
		if got.OK || got.Code != kernel.CodeInvalidArguments || !strings.HasPrefix(got.Reason, "the arguments at /n ") {
			t.Errorf("%s: %.200v, want invalid_arguments at /n", kind, got)
		}
		if len(got.Reason) > mcpserver.MaxReasonBytes+len("…") {
			t.Errorf("%s: a reason of %d bytes, want at most %d", kind, len(got.Reason), mcpserver.MaxReasonBytes+len("…"))
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || len(tc.Text) > mcpserver.MaxReasonBytes+len("…") {
			t.Errorf("%s: the text shown is not the clipped reason", kind)
		}
	}
}
