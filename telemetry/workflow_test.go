package telemetry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/telemetry"
)

// Behaviour 70 as it applies to rounds: a rounds run is an
// invoke_workflow span rooting its own trace, each iteration an
// invoke_agent child with its turn below it; an errored iteration's spans
// have error status.
func TestRoundsWorkflowSpans(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tr, err := telemetry.New(telemetry.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		t.Fatal(err)
	}
	worker := scripted.InProcess(func(_ context.Context, prompt string, _ scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		if prompt == "break" {
			return nil, errors.New("worker down")
		}
		return []contract.EnvironmentEvent{{Type: "result", Data: map[string]canonjson.Value{"result": canonjson.StringValue("note")}}}, nil
	})
	wf := tr.StartWorkflow(t.Context(), "rr", "notes")
	res, err := kernel.Rounds(t.Context(), kernel.RoundsOptions[string, string]{
		Task: "t", RunID: "rr", MaxConcurrency: 1,
		Driver: kernel.Driver[string, string]{
			Plan: func(_ context.Context, task string, h []kernel.Iteration[string, string]) ([]string, error) {
				if len(h) == 0 {
					return []string{"write", "break"}, nil
				}
				return nil, nil
			},
			Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
				return kernel.DecisionDone, nil
			},
		},
		Agents:   []kernel.Agent[string]{{Profile: p}},
		Parse:    func(out kernel.Outcome) (string, error) { return out.Output.Str(), nil },
		Provider: worker, Store: memory.New(nil), Observe: wf.Observe,
	})
	telemetry.EndWorkflow(wf, res, err)
	if err != nil {
		t.Fatal(err)
	}
	tr.Flush(t.Context())
	spans := mem.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	var root tracetest.SpanStub
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		if s.Name == "invoke_workflow notes" {
			root = s
		}
	}
	if root.Name == "" || root.Parent.IsValid() || root.SpanContext.TraceID() != telemetry.TraceID("rr") {
		t.Fatalf("workflow span %+v", root)
	}
	// Each span as "name <- parent name (status)", in end order.
	var tree []string
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("%s is in another trace", s.Name)
		}
		parent := "-"
		if s.Parent.IsValid() {
			parent = byID[s.Parent.SpanID().String()].Name
		}
		tree = append(tree, s.Name+" <- "+parent+" ("+s.Status.Code.String()+")")
	}
	want := []string{
		"gen_ai.client.inference <- invoke_agent note-writer (Unset)",
		"invoke_agent note-writer <- invoke_workflow notes (Ok)",
		"gen_ai.client.inference <- invoke_agent note-writer (Error)",
		"invoke_agent note-writer <- invoke_workflow notes (Error)",
		"invoke_workflow notes <- - (Ok)",
	}
	if diff := cmp.Diff(want, tree); diff != "" {
		t.Errorf("span tree (-want +got):\n%s", diff)
	}
	got := attrMap(root.Attributes)
	for k, v := range map[string]any{"gen_ai.operation.name": "invoke_workflow", "tangle.loop.iterations": int64(2), "tangle.loop.decision": "done",
		"tangle.loop.winner.index": int64(0), "tangle.run.kind": "rounds", "tangle.tokens_known": false} {
		if got[k] != v {
			t.Errorf("workflow %s = %v, want %v", k, got[k], v)
		}
	}
	if root.Status.Code != codes.Ok {
		t.Errorf("workflow status %v", root.Status.Code)
	}
}

func TestNilWorkflowTracesNothing(t *testing.T) {
	var tr *telemetry.Tracing
	wf := tr.StartWorkflow(t.Context(), "rr", "")
	if o := wf.Observe("rr.0"); o != nil {
		t.Fatalf("observer %T", o)
	}
	telemetry.EndWorkflow[string, string](wf, nil, nil)
}
