package delegation

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// nodeTracer starts a real SDK span for the run and for every node.
type nodeTracer struct{ tracer trace.Tracer }

func (o nodeTracer) RunStarted(ctx context.Context, _ supervise.RunStart) context.Context {
	ctx, _ = o.tracer.Start(ctx, "supervisor.run", trace.WithNewRoot())
	return ctx
}

func (o nodeTracer) NodeStarted(ctx context.Context, _ supervise.NodeInfo) (context.Context, kernel.Observer) {
	ctx, _ = o.tracer.Start(ctx, "supervisor.node")
	return ctx, nil
}
func (nodeTracer) NodeSettled(context.Context, supervise.NodeSettled)   {}
func (nodeTracer) RunEnded(context.Context, supervise.SupervisedResult) {}

// TestTraceIsCapped: §9 "a capped span tree" — a run with more spans
// than MaxTraceSpans keeps the newest MaxTraceSpans and says it was
// truncated; spans of a later attempt follow an earlier attempt's under
// the same cap, and a node whose parent was dropped still names it.
func TestTraceIsCapped(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	rec := newTraceRecorder(nodeTracer{tracer: tp.Tracer("test")}, time.Now)
	ctx := rec.RunStarted(context.Background(), supervise.RunStart{RunID: "dlg-1"})
	const n = MaxTraceSpans + 40
	for i := range n {
		rec.NodeStarted(ctx, supervise.NodeInfo{ID: supervise.NodeID(fmt.Sprint("w", i)), Parent: "dlg-1"})
	}
	var d Delegation
	rec.apply(&d)
	if len(d.Trace) != MaxTraceSpans || !d.TraceTruncated {
		t.Fatalf("%d spans, truncated %v; want %d and truncated", len(d.Trace), d.TraceTruncated, MaxTraceSpans)
	}
	if last := d.Trace[len(d.Trace)-1]; last.Node != fmt.Sprint("w", n-1) {
		t.Errorf("the newest span is %s, want w%d", last.Node, n-1)
	}
	if d.TraceID == "" || d.ParentSpanID == "" || d.Trace[0].ParentSpanID != d.ParentSpanID {
		t.Errorf("trace %q root %q first parent %q: a node keeps its dropped root as parent", d.TraceID, d.ParentSpanID, d.Trace[0].ParentSpanID)
	}

	// A second attempt's spans follow, under the same cap.
	small := newTraceRecorder(nodeTracer{tracer: tp.Tracer("test")}, time.Now)
	ctx = small.RunStarted(context.Background(), supervise.RunStart{RunID: "dlg-1"})
	small.NodeStarted(ctx, supervise.NodeInfo{ID: "again", Parent: "dlg-1"})
	small.apply(&d)
	if len(d.Trace) != MaxTraceSpans || d.Trace[len(d.Trace)-1].Node != "again" || !d.TraceTruncated {
		t.Errorf("after a second attempt: %d spans, last %s", len(d.Trace), d.Trace[len(d.Trace)-1].Node)
	}
}
