package delegation_test

import (
	"context"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/kernel"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// spanObserver traces a supervised run with a real OpenTelemetry SDK
// tracer: a supervisor.run root span and a supervisor.node span per
// worker under it (what telemetry.Tracing.SuperviseObserver does, which
// this layer may not import).
type spanObserver struct {
	tracer trace.Tracer
	mu     sync.Mutex
	root   trace.Span
	nodes  map[supervise.NodeID]trace.Span
}

func (o *spanObserver) RunStarted(ctx context.Context, s supervise.RunStart) context.Context {
	ctx, span := o.tracer.Start(ctx, "supervisor.run", trace.WithNewRoot())
	o.mu.Lock()
	o.root = span
	o.mu.Unlock()
	return ctx
}

func (o *spanObserver) NodeStarted(ctx context.Context, n supervise.NodeInfo) (context.Context, kernel.Observer) {
	ctx, span := o.tracer.Start(ctx, "supervisor.node")
	o.mu.Lock()
	o.nodes[n.ID] = span
	o.mu.Unlock()
	return ctx, nil
}

func (o *spanObserver) NodeSettled(_ context.Context, s supervise.NodeSettled) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if sp := o.nodes[s.Node.ID]; sp != nil {
		sp.End()
	}
}

func (o *spanObserver) RunEnded(context.Context, supervise.SupervisedResult) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.root != nil {
		o.root.End()
	}
}

// TestRecordCarriesTrace: §9 "records carry traceId/parentSpanId and a
// capped span tree" — a delegation run under a traced observer records
// the trace id of its supervised run, that run's root span as
// parentSpanId, and the span tree (root and worker node, with the ids,
// parents, statuses and durations the tracer gave them, matching the
// exported spans); an untraced delegation carries none of it (absent,
// not zero ids).
func TestRecordCarriesTrace(t *testing.T) {
	ctx := deadline(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })

	f := newFixture(t, storememory.New(nil))
	cfg := f.config(t)
	cfg.Observer = func() supervise.Observer {
		return &spanObserver{tracer: tp.Tracer("test"), nodes: map[supervise.NodeID]trace.Span{}}
	}
	q := open(t, cfg)
	d := settle(t, ctx, q, must(q.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t).TaskID)
	if d.State != delegation.StateCompleted {
		t.Fatalf("state %s (%s)", d.State, d.Failure)
	}
	spans := exp.GetSpans()
	var root, node tracetest.SpanStub
	for _, s := range spans {
		switch s.Name {
		case "supervisor.run":
			root = s
		case "supervisor.node":
			node = s
		}
	}
	if !root.SpanContext.IsValid() || !node.SpanContext.IsValid() {
		t.Fatalf("exported spans %d: no run and node span", len(spans))
	}
	if d.TraceID != root.SpanContext.TraceID().String() || d.ParentSpanID != root.SpanContext.SpanID().String() {
		t.Errorf("traceId %q parentSpanId %q, want %s and %s", d.TraceID, d.ParentSpanID, root.SpanContext.TraceID(), root.SpanContext.SpanID())
	}
	if len(d.Trace) != 2 || d.TraceTruncated {
		t.Fatalf("trace %+v (truncated %v), want the run's span and the worker's", d.Trace, d.TraceTruncated)
	}
	r, w := d.Trace[0], d.Trace[1]
	if r.Name != "supervisor.run" || r.SpanID != root.SpanContext.SpanID().String() || r.ParentSpanID != "" || r.Status != delegation.SpanOK || r.DurationMS == nil {
		t.Errorf("root span %+v", r)
	}
	if w.Name != "supervisor.node" || w.SpanID != node.SpanContext.SpanID().String() || w.ParentSpanID != r.SpanID || w.Status != delegation.SpanOK || w.DurationMS == nil || w.Node == "" {
		t.Errorf("worker span %+v, want under %s", w, r.SpanID)
	}

	// Untraced: an observer that starts no span, and no observer.
	for name, obs := range map[string]func() supervise.Observer{
		"no observer":   nil,
		"no valid span": func() supervise.Observer { return nil },
	} {
		cfg := newFixture(t, storememory.New(nil)).config(t)
		cfg.Observer = obs
		q := open(t, cfg)
		d := settle(t, ctx, q, must(q.Submit(ctx, delegation.Request{Intent: "write alpha"}))(t).TaskID)
		if d.TraceID != "" || d.ParentSpanID != "" || d.Trace != nil || d.TraceTruncated {
			t.Errorf("%s: trace %q %q %+v, want none", name, d.TraceID, d.ParentSpanID, d.Trace)
		}
		rec := callTool(t, ctx, q, delegation.ToolStatus, `{"taskId": "`+d.TaskID+`"}`)
		for _, k := range []string{"traceId", "parentSpanId", "trace"} {
			if _, ok := rec[k]; ok {
				t.Errorf("%s: the status carries %s: %v", name, k, rec[k])
			}
		}
	}
}
