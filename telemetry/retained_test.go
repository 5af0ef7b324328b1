package telemetry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/telemetry"
)

// Issue 16 item 2 (OS-06; spec runtime §10 "trace id derived from the
// run id so a resumed run rejoins its trace"): a retained run's spans,
// whichever process exports them, share the trace derived from its
// record id, under its root whose span id is derived too; usage the
// provider did not report is marked unknown, never 0.
func TestRetainedSpansShareTheRunsTrace(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tr, err := telemetry.New(telemetry.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	const run = "retained-0123"
	ctx, start := tr.StartRetained(t.Context(), telemetry.RetainedStart{RunID: run, Agent: "note-writer"})
	// A root another tracer user starts under the context is not given
	// the run's root span id.
	telemetry.EndWorkflow[string, string](tr.StartWorkflow(ctx, "other-run", "w"), nil, nil)
	start.Dispatched(nil)
	_, followed := tr.FollowRetained(context.Background(), run)
	followed.Followed("completed", &contract.TurnResult{Success: true}, nil)
	_, reported := tr.FollowRetained(context.Background(), run)
	cost := 0.25
	reported.Followed("failed", &contract.TurnResult{Usage: &contract.TokenUsage{InputTokens: 12, OutputTokens: 4, Cost: &cost}}, nil)
	_, lost := tr.FollowRetained(context.Background(), run)
	lost.Followed("", nil, errors.New("stream broke: secret detail"))
	_, recovered := tr.RecoverRetained(context.Background(), run)
	recovered.Recovered("unverifiable", nil)
	recovered.Recovered("recovered", nil) // ends once
	// The same key and turn started again: a replay, not a second root.
	_, again := tr.StartRetained(context.Background(), telemetry.RetainedStart{RunID: run, Agent: "note-writer", Replayed: true})
	again.Dispatched(nil)
	if r := tr.Flush(t.Context()); !r.Succeeded || r.Delivered != 7 {
		t.Fatalf("report %+v, want 7 spans delivered", r)
	}

	type span struct {
		Name, Parent string
		Status       codes.Code
		Attrs        map[string]any
	}
	var got []span
	rootID := telemetry.RetainedSpanID(run)
	for _, s := range mem.GetSpans() {
		if s.Name == telemetry.SpanWorkflowPrefix+" w" {
			if s.SpanContext.SpanID() == rootID || s.SpanContext.TraceID() != telemetry.TraceID("other-run") {
				t.Errorf("another run's root took span %s in trace %s", s.SpanContext.SpanID(), s.SpanContext.TraceID())
			}
			continue
		}
		if s.SpanContext.TraceID() != telemetry.TraceID(run) {
			t.Errorf("%s in trace %s, want %s", s.Name, s.SpanContext.TraceID(), telemetry.TraceID(run))
		}
		parent := ""
		if s.Parent.IsValid() {
			parent = s.Parent.SpanID().String()
		} else if s.SpanContext.SpanID() != rootID {
			t.Errorf("root %s has span id %s, want %s", s.Name, s.SpanContext.SpanID(), rootID)
		}
		a, ids := attrMap(s.Attributes), map[string]any{}
		for _, k := range []string{telemetry.KeyRunID, telemetry.KeyConversation, telemetry.KeyRunKind} {
			ids[k] = a[k]
			delete(a, k)
		}
		if diff := cmp.Diff(map[string]any{telemetry.KeyRunID: run, telemetry.KeyConversation: run, telemetry.KeyRunKind: "retained"}, ids); diff != "" {
			t.Errorf("%s identifies (-want +got):\n%s", s.Name, diff)
		}
		got = append(got, span{s.Name, parent, s.Status.Code, a})
	}
	root := rootID.String()
	want := []span{
		{"invoke_agent note-writer", "", codes.Ok, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "note-writer", "tangle.retained.step": "start"}},
		{"gen_ai.client.inference", root, codes.Ok, map[string]any{"gen_ai.operation.name": "chat", "tangle.retained.step": "follow",
			"tangle.run.status": "completed", "gen_ai.response.finish_reasons": []string{"completed"}, "tangle.tokens_known": false, "tangle.cost_known": false}},
		{"gen_ai.client.inference", root, codes.Error, map[string]any{"gen_ai.operation.name": "chat", "tangle.retained.step": "follow",
			"tangle.run.status": "failed", "gen_ai.response.finish_reasons": []string{"failed"}, "error.type": "turn_failed",
			"gen_ai.usage.input_tokens": int64(12), "gen_ai.usage.output_tokens": int64(4), "tangle.cost.usd": 0.25}},
		{"gen_ai.client.inference", root, codes.Error, map[string]any{"gen_ai.operation.name": "chat", "tangle.retained.step": "follow",
			"error.type": "follow_failed", "tangle.tokens_known": false, "tangle.cost_known": false}},
		{"tangle.retained.recover", root, codes.Error, map[string]any{"tangle.retained.step": "recover", "tangle.retained.outcome": "unverifiable", "error.type": "recover_unverifiable"}},
		{"invoke_agent note-writer", root, codes.Ok, map[string]any{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "note-writer",
			"tangle.retained.step": "start", "tangle.retained.replayed": true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
	for _, s := range mem.GetSpans() {
		if s.Status.Description == "stream broke: secret detail" {
			t.Errorf("%s exports the error's text", s.Name)
		}
	}
}

// A nil Tracing (tracing off) traces nothing and never panics.
func TestRetainedSpansOff(t *testing.T) {
	var tr *telemetry.Tracing
	ctx, s := tr.StartRetained(t.Context(), telemetry.RetainedStart{RunID: "r", Agent: "a"})
	if s != nil || trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatalf("tracing off started %v", s)
	}
	s.Dispatched(nil)
	_, f := tr.FollowRetained(ctx, "r")
	f.Followed("completed", nil, nil)
	_, r := tr.RecoverRetained(ctx, "r")
	r.Recovered("recovered", nil)
}

// toolEvent is a tool part's update as a provider streams it.
func toolEvent(callID, tool, status string) contract.EnvironmentEvent {
	return contract.EnvironmentEvent{Type: "message.part.updated", Normalized: &contract.StreamEvent{
		MessagePartUpdated: &contract.MessagePartUpdatedEvent{Part: contract.Part{ID: "part-" + callID, Type: contract.PartTypeTool,
			CallID: &callID, Tool: &tool, State: &contract.ToolState{Status: status, Input: nil}}}}}
}

// Issue 16 item 2 (OS-06): the tool calls a followed retained turn
// reports are agent.tool_call spans under its follow span, as a run's
// are under its turn; a call the turn never reported ending ends with
// the follow span.
func TestFollowedToolCallsAreSpans(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tr, err := telemetry.New(telemetry.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	ctx, f := tr.FollowRetained(context.Background(), "retained-tools")
	f.Event(ctx, toolEvent("c1", "mcp__files__read", contract.ToolStatusRunning))
	f.Event(ctx, toolEvent("c1", "mcp__files__read", contract.ToolStatusCompleted))
	f.Event(ctx, toolEvent("c2", "bash", contract.ToolStatusRunning))
	f.Event(ctx, contract.EnvironmentEvent{Type: "other"})
	f.Followed("completed", &contract.TurnResult{Success: true}, nil)
	tr.Flush(t.Context())

	var follow string
	type tool struct {
		Parent string
		Status codes.Code
		Attrs  map[string]any
	}
	var tools []tool
	for _, s := range mem.GetSpans() {
		if s.Name == telemetry.SpanInference {
			follow = s.SpanContext.SpanID().String()
			continue
		}
		tools = append(tools, tool{s.Parent.SpanID().String(), s.Status.Code, attrMap(s.Attributes)})
	}
	conv := map[string]any{"gen_ai.conversation.id": "retained-tools", "gen_ai.operation.name": "execute_tool"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range conv {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	want := []tool{
		{follow, codes.Ok, with("gen_ai.tool.call.id", "c1", "gen_ai.tool.name", "mcp__files__read", "mcp.server", "files", "mcp.tool.name", "read")},
		{follow, codes.Unset, with("gen_ai.tool.call.id", "c2", "gen_ai.tool.name", "bash")},
	}
	if diff := cmp.Diff(want, tools); diff != "" {
		t.Errorf("tool spans (-want +got):\n%s", diff)
	}
}
