package fleet

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/canonjson"
)

// docTrace is the fleet run's document member holding the W3C
// traceparent of the span that submitted it (Submission.TraceParent).
const docTrace = "traceparent"

// TraceParent is the W3C traceparent of the span ctx carries, or "" when
// it carries none: what a submitter traced in another process (a
// supervise node span, say) gives as Submission.TraceParent so that the
// run's attempts continue its trace.
func TraceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// parseTraceParent returns the remote span context of traceparent tp,
// or an error when tp is not a valid W3C traceparent (version 00, a
// non-zero 32-hex trace id and 16-hex parent id, two hex flags).
func parseTraceParent(tp string) (trace.SpanContext, error) {
	if len(tp) != 55 {
		return trace.SpanContext{}, fmt.Errorf("%w: traceparent %q is not a W3C traceparent (55 characters: 00-<trace id>-<parent id>-<flags>)", ErrInvalid, clipped(tp))
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
	if !sc.IsValid() || !sc.IsRemote() || tp[:3] != "00-" {
		return trace.SpanContext{}, fmt.Errorf("%w: traceparent %q is not a W3C traceparent (00-<trace id>-<parent id>-<flags>, ids non-zero lower-case hex)", ErrInvalid, clipped(tp))
	}
	return sc, nil
}

// withTraceParent returns ctx carrying the remote span context of
// traceparent tp, or ctx itself when tp is empty or invalid.
func withTraceParent(ctx context.Context, tp string) (context.Context, error) {
	if tp == "" {
		return ctx, nil
	}
	sc, err := parseTraceParent(tp)
	if err != nil {
		return ctx, err
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc), nil
}

// clipped is s cut to 64 bytes, for an error message quoting input.
func clipped(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// traceParentOf is the traceparent recorded in a fleet run's document,
// "" when none (a member that is not a string reads as none).
func traceParentOf(doc canonjson.Value) string {
	v, _ := doc.Get(docTrace)
	return v.Str()
}
