package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/telemetry"
)

const noteWriter = `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`

// traced runs one scripted turn under a Tracing exporting to memory and
// returns the spans by name.
func traced(t *testing.T, script, runID string) map[string]tracetest.SpanStub {
	t.Helper()
	spans := tracedSpans(t, script, runID)
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if _, dup := byName[s.Name]; dup {
			t.Fatalf("two spans named %s", s.Name)
		}
		byName[s.Name] = s
	}
	return byName
}

func tracedSpans(t *testing.T, script, runID string) tracetest.SpanStubs {
	t.Helper()
	return tracedWith(t, script, runID, telemetry.Options{})
}

// tracedWith runs one scripted turn under a Tracing with o and an
// in-memory exporter and returns its spans.
func tracedWith(t *testing.T, script, runID string, o telemetry.Options) tracetest.SpanStubs {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	o.Exporter = mem
	tr, err := telemetry.New(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "Write a release note.", Provider: scripted.New(sc, scripted.Options{}),
		Store: memory.New(nil), RunID: runID, Observer: tr.Observer(),
		Check: func(context.Context, kernel.Outcome) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: true}, nil
		}})
	// Read before Shutdown: the in-memory exporter forgets at shutdown.
	if r := tr.Flush(t.Context()); !r.Succeeded || r.Delivered != int64(len(mem.GetSpans())) {
		t.Fatalf("report %+v for %d spans", r, len(mem.GetSpans()))
	}
	spans := mem.GetSpans()
	tr.Shutdown(t.Context())
	return spans
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// OS-06, behaviour 70: a run is an invoke_agent span, its turn a
// gen_ai.client.inference child and its tool call an agent.tool_call
// child of the turn, all in the run's trace, with the current GenAI keys.
func TestRunSpanTree(t *testing.T) {
	script := `{"turns":[{"steps":[{"text":"A note."},{"toolCall":{"id":"call-1","name":"mcp__files__read","arguments":{"path":"NOTES.md"}}},{"usage":{"inputTokens":12,"outputTokens":5},"mode":"delta"}]}]}`
	spans := traced(t, script, "run-tree")
	run, turn, tool := spans["invoke_agent note-writer"], spans[telemetry.SpanInference], spans[telemetry.SpanToolCall]
	if len(spans) != 3 || run.Name == "" || turn.Name == "" || tool.Name == "" {
		t.Fatalf("spans %v", keys(spans))
	}
	if got, want := run.SpanContext.TraceID(), telemetry.TraceID("run-tree"); got != want {
		t.Errorf("trace id %s, want %s (derived from the run id)", got, want)
	}
	if run.Parent.IsValid() {
		t.Errorf("the run span has a parent %s", run.Parent.SpanID())
	}
	if turn.Parent.SpanID() != run.SpanContext.SpanID() || tool.Parent.SpanID() != turn.SpanContext.SpanID() {
		t.Errorf("parentage: turn's parent %s (run %s), tool's parent %s (turn %s)", turn.Parent.SpanID(), run.SpanContext.SpanID(), tool.Parent.SpanID(), turn.SpanContext.SpanID())
	}
	for _, s := range []tracetest.SpanStub{turn, tool} {
		if s.SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("%s is in trace %s", s.Name, s.SpanContext.TraceID())
		}
	}
	env, _ := attrMap(run.Attributes)["tangle.environment.id"].(string)
	if env == "" {
		t.Error("the run span names no environment")
	}
	tests := []struct {
		span tracetest.SpanStub
		want map[string]any
		code codes.Code
	}{
		{run, map[string]any{
			"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "note-writer", "gen_ai.conversation.id": "run-tree",
			"tangle.run.id": "run-tree", "tangle.run.kind": "execute", "tangle.run.status": "completed", "tangle.run.delivered": true,
			"gen_ai.request.model": "scripted/note-writer", "gen_ai.response.model": "scripted/note-writer",
			"gen_ai.usage.input_tokens": int64(12), "gen_ai.usage.output_tokens": int64(5), "tangle.cost_known": false,
			"tangle.environment.id": env,
		}, codes.Ok},
		{turn, map[string]any{
			"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "run-tree", "tangle.run.id": "run-tree",
			"gen_ai.request.model": "scripted/note-writer", "gen_ai.response.model": "scripted/note-writer", "gen_ai.provider.name": "scripted",
			"gen_ai.usage.input_tokens": int64(12), "gen_ai.usage.output_tokens": int64(5), "tangle.cost_known": false,
			"gen_ai.response.finish_reasons": []string{"completed"}, "tangle.environment.id": env,
		}, codes.Unset},
		{tool, map[string]any{
			"gen_ai.operation.name": "execute_tool", "gen_ai.conversation.id": "run-tree", "gen_ai.tool.name": "mcp__files__read",
			"gen_ai.tool.call.id": "call-1", "mcp.server": "files", "mcp.tool.name": "read",
		}, codes.Unset},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, attrMap(tc.span.Attributes)); diff != "" {
			t.Errorf("%s attributes (-want +got):\n%s", tc.span.Name, diff)
		}
		if tc.span.Status.Code != tc.code {
			t.Errorf("%s status %v, want %v", tc.span.Name, tc.span.Status.Code, tc.code)
		}
	}
}

// Behaviours 69 and 70 as they apply to runs: usage that is unknown or
// only a floor is omitted and marked, never exported as 0; a run that
// failed has error status (2); no deprecated key is ever written.
func TestUnknownUsageAndErrors(t *testing.T) {
	tests := []struct {
		name      string
		script    string
		wantUsage map[string]any // on both the run and the turn span
		runStatus codes.Code
		turnCode  codes.Code
		errorType string
	}{
		{"exact usage", `{"turns":[{"steps":[{"text":"A note."},{"usage":{"inputTokens":3,"outputTokens":4,"cost":0.25},"mode":"delta"}]}]}`,
			map[string]any{"gen_ai.usage.input_tokens": int64(3), "gen_ai.usage.output_tokens": int64(4), "tangle.cost.usd": 0.25}, codes.Ok, codes.Unset, ""},
		{"no usage reported", `{"turns":[{"steps":[{"text":"A note."}]}]}`,
			map[string]any{"tangle.tokens_known": false, "tangle.cost_known": false}, codes.Ok, codes.Unset, ""},
		{"usage without a mode is a floor", `{"turns":[{"steps":[{"text":"A note."},{"usage":{"inputTokens":3,"outputTokens":4}}]}]}`,
			map[string]any{"tangle.tokens_known": false, "tangle.cost_known": false}, codes.Ok, codes.Unset, ""},
		{"in-band error", `{"turns":[{"steps":[{"text":"partial"},{"usage":{"inputTokens":3,"outputTokens":4},"mode":"delta"}],"end":"failed","error":"quota exhausted sk-secret"}]}`,
			map[string]any{"tangle.tokens_known": false, "tangle.cost_known": false}, codes.Error, codes.Error, kernel.ReasonInBandError},
		{"death mid-turn", `{"turns":[{"steps":[{"text":"par"}],"end":"die","error":"connection reset"}]}`,
			map[string]any{"tangle.tokens_known": false, "tangle.cost_known": false}, codes.Error, codes.Error, kernel.ReasonTransport},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spans := tracedSpans(t, tc.script, "run-usage")
			if len(spans) != 2 {
				t.Fatalf("%d spans", len(spans))
			}
			for _, s := range spans {
				got := map[string]any{}
				for k, v := range attrMap(s.Attributes) {
					if strings.HasPrefix(k, "gen_ai.usage.") || strings.HasSuffix(k, "_known") || k == "tangle.cost.usd" {
						got[k] = v
					}
					for _, bad := range []string{"gen_ai.system", "prompt_tokens", "completion_tokens", "llm.token_count", "sk-secret", "Write a release note"} {
						if strings.Contains(k, bad) {
							t.Errorf("%s carries %q", s.Name, bad)
						}
					}
					if str, ok := v.(string); ok && (strings.Contains(str, "sk-secret") || strings.Contains(str, "release note")) {
						t.Errorf("%s attribute %s exports run content %q", s.Name, k, str)
					}
				}
				if diff := cmp.Diff(tc.wantUsage, got); diff != "" {
					t.Errorf("%s usage (-want +got):\n%s", s.Name, diff)
				}
				want := tc.turnCode
				if s.Name != telemetry.SpanInference {
					want = tc.runStatus
					if et := attrMap(s.Attributes)["error.type"]; tc.errorType != "" && et != tc.errorType {
						t.Errorf("run error.type %v, want %s", et, tc.errorType)
					}
				}
				if s.Status.Code != want {
					t.Errorf("%s status %v, want %v", s.Name, s.Status.Code, want)
				}
				if strings.Contains(s.Status.Description, "secret") {
					t.Errorf("%s status carries the provider's detail", s.Name)
				}
			}
		})
	}
}

// Behaviour 69: a run resumed under the same run id (here: in a fresh
// process and store) rejoins the same trace.
func TestResumedRunRejoinsItsTrace(t *testing.T) {
	script := `{"turns":[{"steps":[{"text":"A note."}]}]}`
	first, again := tracedSpans(t, script, "run-resumed"), tracedSpans(t, script, "run-resumed")
	other := tracedSpans(t, script, "run-other")
	if first[0].SpanContext.TraceID() != again[0].SpanContext.TraceID() {
		t.Errorf("trace ids %s and %s differ", first[0].SpanContext.TraceID(), again[0].SpanContext.TraceID())
	}
	if first[0].SpanContext.SpanID() == again[0].SpanContext.SpanID() {
		t.Error("two executions share a span id")
	}
	if first[0].SpanContext.TraceID() == other[0].SpanContext.TraceID() {
		t.Error("two runs share a trace")
	}
}

func TestNilTracingIsOff(t *testing.T) {
	var tr *telemetry.Tracing
	if o := tr.Observer(); o != nil {
		t.Fatalf("a nil Tracing observes: %T", o)
	}
}

func keys(m map[string]tracetest.SpanStub) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Issue 16 (OS-06, spec runtime §10: trace id derived from the run id):
// two attempts of one fleet run, each a kernel run of its own id — the
// second taking the run over — root in the fleet run's one trace with
// the fleet run as their conversation and their own ids as tangle.run.id.
func TestAttemptsOfARunShareItsTrace(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tr, err := telemetry.New(telemetry.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	p, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		t.Fatal(err)
	}
	for _, attempt := range []string{"fleet-1.a1", "fleet-1.a2"} {
		kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "Write a release note.", Provider: scripted.New(&scripted.Script{}, scripted.Options{}),
			Store: memory.New(nil), RunID: attempt, Observer: tr.AttemptObserver("fleet-1"),
			Check: func(context.Context, kernel.Outcome) (kernel.Verdict, error) {
				return kernel.Verdict{Passed: true}, nil
			}})
	}
	if r := tr.Flush(t.Context()); !r.Succeeded {
		t.Fatalf("report %+v", r)
	}
	var got []map[string]any
	for _, s := range mem.GetSpans() {
		if s.Name != telemetry.SpanRunPrefix+" note-writer" {
			continue
		}
		if s.SpanContext.TraceID() != telemetry.TraceID("fleet-1") || s.Parent.IsValid() {
			t.Errorf("attempt span in trace %s (parent %v), want the root of %s", s.SpanContext.TraceID(), s.Parent.SpanID(), telemetry.TraceID("fleet-1"))
		}
		a := attrMap(s.Attributes)
		got = append(got, map[string]any{telemetry.KeyConversation: a[telemetry.KeyConversation], telemetry.KeyRunID: a[telemetry.KeyRunID]})
	}
	want := []map[string]any{
		{telemetry.KeyConversation: "fleet-1", telemetry.KeyRunID: "fleet-1.a1"},
		{telemetry.KeyConversation: "fleet-1", telemetry.KeyRunID: "fleet-1.a2"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attempt spans (-want +got):\n%s", diff)
	}
	if (*telemetry.Tracing)(nil).AttemptObserver("fleet-1") != nil {
		t.Error("a nil Tracing's attempt observer is not nil")
	}
}
