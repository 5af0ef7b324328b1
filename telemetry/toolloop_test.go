package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/telemetry"
)

// tracedLoop runs a tool loop whose model calls echo and then broken
// (which fails), then answers; the first turn reports usage, the last
// none.
func tracedLoop(t *testing.T, runID string) tracetest.SpanStubs {
	t.Helper()
	tr, mem := newMemTracing(t)
	echo := contract.Tool{Name: "echo", Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) { return args, nil }}
	broken := contract.Tool{Name: "mcp__files__read", Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		return canonjson.Value{}, errors.New("secret path /etc/x")
	}}
	model := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Call("call_1", "echo", `{"x":1}`), scripted.Call("call_2", "mcp__files__read", `{}`),
			scripted.Usage(40, 8, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Text("done")}},
	}})
	res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: model, User: "echo", Tools: []contract.Tool{echo, broken},
		RunID: runID, Observer: tr.Observer()})
	if err != nil || res.StopReason != kernel.StopCompleted {
		t.Fatal(res, err)
	}
	if r := tr.Flush(t.Context()); !r.Succeeded {
		t.Fatalf("report %+v", r)
	}
	return mem.GetSpans()
}

// A traced tool loop is an invoke_agent span with a
// gen_ai.client.inference span per model turn and an agent.tool_call span
// per call, both its children; a turn's unknown usage is omitted and
// marked, and a failed call's error text is never exported.
func TestToolLoopSpans(t *testing.T) {
	spans := tracedLoop(t, "loop-7")
	var run tracetest.SpanStub
	var turns, tools []tracetest.SpanStub
	for _, s := range spans {
		switch s.Name {
		case telemetry.SpanRunPrefix:
			run = s
		case telemetry.SpanInference:
			turns = append(turns, s)
		case telemetry.SpanToolCall:
			tools = append(tools, s)
		default:
			t.Errorf("unexpected span %s", s.Name)
		}
	}
	ra := attrMap(run.Attributes)
	if run.SpanContext.TraceID() != telemetry.TraceID("loop-7") || ra[telemetry.KeyRunKind] != kernel.KindToolLoop || ra[telemetry.KeyRunStatus] != "completed" ||
		ra[telemetry.KeyInputTokens] != nil || ra[telemetry.KeyTokensKnown] != false {
		// The loop's total is a floor: the last turn reported nothing.
		t.Errorf("run span %v", ra)
	}
	if len(turns) != 2 || len(tools) != 2 {
		t.Fatalf("%d turn and %d tool spans", len(turns), len(tools))
	}
	for _, s := range append(turns, tools...) {
		if s.Parent.SpanID() != run.SpanContext.SpanID() {
			t.Errorf("%s is not the run span's child", s.Name)
		}
	}
	first, last := attrMap(turns[0].Attributes), attrMap(turns[1].Attributes)
	if first[telemetry.KeyInputTokens] != int64(40) || first[telemetry.KeyOutputTokens] != int64(8) || first[telemetry.KeyTokensKnown] != nil {
		t.Errorf("first turn %v", first)
	}
	if last[telemetry.KeyInputTokens] != nil || last[telemetry.KeyTokensKnown] != false || last[telemetry.KeyCostKnown] != false {
		t.Errorf("last turn %v", last)
	}
	echo, read := attrMap(tools[0].Attributes), attrMap(tools[1].Attributes)
	if echo[telemetry.KeyToolName] != "echo" || echo[telemetry.KeyToolCallID] != "call_1" || tools[0].Status.Code != codes.Ok {
		t.Errorf("echo span %v %v", echo, tools[0].Status)
	}
	if read[telemetry.KeyMCPServer] != "files" || read[telemetry.KeyMCPToolName] != "read" || read[telemetry.KeyErrorType] != kernel.CodeToolError ||
		tools[1].Status.Code != codes.Error {
		t.Errorf("read span %v %v", read, tools[1].Status)
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			if v := kv.Value.String(); len(v) > 0 && strings.Contains(v, "/etc/x") {
				t.Errorf("span %s exports the tool's error text in %s", s.Name, kv.Key)
			}
		}
		if s.Status.Description != "" && strings.Contains(s.Status.Description, "/etc/x") {
			t.Errorf("span %s status quotes the tool's error", s.Name)
		}
	}
}

// An unrecorded loop with no run id gets a trace of its own, not one
// shared by every such loop.
func TestToolLoopWithoutRunIDOwnTrace(t *testing.T) {
	a, b := tracedLoop(t, ""), tracedLoop(t, "")
	if a[0].SpanContext.TraceID() == b[0].SpanContext.TraceID() || a[0].SpanContext.TraceID() == telemetry.TraceID("") {
		t.Errorf("trace ids %s and %s", a[0].SpanContext.TraceID(), b[0].SpanContext.TraceID())
	}
}
