package telemetry_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/telemetry"
)

// BenchmarkExecuteTraced is kernel's BenchmarkExecute with the run traced
// (run, turn and tool-call spans into a discarding exporter): the price
// of tracing one run, to compare with the untraced benchmark.
func BenchmarkExecuteTraced(b *testing.B) {
	p, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		b.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"repeat":true,"steps":[{"text":"A note."},{"usage":{"inputTokens":12,"outputTokens":5},"mode":"delta"}]}]}`))
	if err != nil {
		b.Fatal(err)
	}
	tr, err := telemetry.New(telemetry.Options{Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	prov := scripted.New(sc, scripted.Options{})
	st := memory.New(nil)
	ctx := context.Background()
	pass := func(context.Context, kernel.Outcome) (kernel.Verdict, error) {
		return kernel.Verdict{Passed: true}, nil
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "t", Provider: prov, Store: st, Check: pass, Observer: tr.Observer()})
		if err != nil || !res.Delivered {
			b.Fatal(err)
		}
	}
}

// BenchmarkRetainedSpans is the tracing one process adds to a retained
// run it starts and follows: the root span, the follow span with a tool
// call, into a discarding exporter.
func BenchmarkRetainedSpans(b *testing.B) {
	tr, err := telemetry.New(telemetry.Options{Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	ctx := context.Background()
	running, done := toolEvent("c1", "mcp__files__read", contract.ToolStatusRunning), toolEvent("c1", "mcp__files__read", contract.ToolStatusCompleted)
	res := &contract.TurnResult{Success: true, Usage: &contract.TokenUsage{InputTokens: 12, OutputTokens: 5}}
	b.ReportAllocs()
	for b.Loop() {
		_, root := tr.StartRetained(ctx, telemetry.RetainedStart{RunID: "retained-bench", Agent: "note-writer"})
		root.Dispatched(nil)
		fctx, f := tr.FollowRetained(ctx, "retained-bench")
		f.Event(fctx, running)
		f.Event(fctx, done)
		f.Followed("completed", res, nil)
	}
}
