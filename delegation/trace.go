package delegation

import (
	"context"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// MaxTraceSpans bounds the spans a delegation record keeps; past it the
// oldest are dropped and the record says so (TraceTruncated).
const MaxTraceSpans = 256

// Span statuses of a TraceSpan.
const (
	SpanOK    = "ok"
	SpanError = "error"
	// SpanUnset: the span's end was not seen (its attempt stopped
	// first).
	SpanUnset = "unset"
)

// TraceSpan is one span of a delegation's trace as its record keeps it:
// the supervised run's root and one span per worker node, with the ids
// the Config.Observer's tracer gave them.
type TraceSpan struct {
	Name         string `json:"name"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId,omitempty"`
	// Node is the supervise node the span traces (the run's root node
	// for the run's span).
	Node string `json:"node,omitempty"`
	// Status is SpanOK, SpanError or SpanUnset.
	Status    string    `json:"status"`
	StartedAt time.Time `json:"startedAt"`
	// DurationMS is null while the span's end is unknown.
	DurationMS *int64 `json:"durationMs"`
}

// traceRecorder wraps a delegation run's supervise.Observer and keeps
// what its tracer made of the run: the trace id, the root span and a
// span per node. It records nothing when the run is not traced (no
// observer, or one whose contexts carry no valid span).
type traceRecorder struct {
	inner supervise.Observer
	now   func() time.Time

	mu      sync.Mutex
	traceID string
	// rootSpan is the run's span id; root its index in spans (-1
	// before it started, or once it was dropped).
	rootSpan string
	root     int
	spans    []TraceSpan
	byNode   map[supervise.NodeID]int
	dropped  int
}

var (
	_ supervise.Observer      = (*traceRecorder)(nil)
	_ supervise.BrainObserver = (*traceRecorder)(nil)
)

func newTraceRecorder(inner supervise.Observer, now func() time.Time) *traceRecorder {
	return &traceRecorder{inner: inner, now: now, root: -1, byNode: map[supervise.NodeID]int{}}
}

// spanName is the name the tracer gave the span ctx carries, when the
// span tells it (an SDK span does), else fallback.
func spanName(ctx context.Context, fallback string) string {
	if n, ok := trace.SpanFromContext(ctx).(interface{ Name() string }); ok && n.Name() != "" {
		return n.Name()
	}
	return fallback
}

// add keeps s, dropping the oldest span past MaxTraceSpans; r.mu is
// held.
func (r *traceRecorder) add(s TraceSpan) int {
	if len(r.spans) == MaxTraceSpans {
		r.spans = r.spans[1:]
		r.dropped++
		r.root = max(-1, r.root-1)
		for id, i := range r.byNode {
			if i == 0 {
				delete(r.byNode, id)
			} else {
				r.byNode[id] = i - 1
			}
		}
	}
	r.spans = append(r.spans, s)
	return len(r.spans) - 1
}

func (r *traceRecorder) RunStarted(ctx context.Context, s supervise.RunStart) context.Context {
	ctx = r.inner.RunStarted(ctx, s)
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ctx
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.traceID, r.rootSpan = sc.TraceID().String(), sc.SpanID().String()
	r.root = r.add(TraceSpan{Name: spanName(ctx, "supervisor.run"), SpanID: sc.SpanID().String(), Node: s.RunID, Status: SpanUnset, StartedAt: r.now()})
	return ctx
}

func (r *traceRecorder) NodeStarted(ctx context.Context, n supervise.NodeInfo) (context.Context, kernel.Observer) {
	nctx, obs := r.inner.NodeStarted(ctx, n)
	sc, parent := trace.SpanContextFromContext(nctx), trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || sc.SpanID() == parent.SpanID() {
		return nctx, obs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := TraceSpan{Name: spanName(nctx, "supervisor.node"), SpanID: sc.SpanID().String(), Node: string(n.ID), Status: SpanUnset, StartedAt: r.now()}
	if i, ok := r.byNode[n.Parent]; ok {
		s.ParentSpanID = r.spans[i].SpanID
	} else if parent.IsValid() {
		s.ParentSpanID = parent.SpanID().String()
	}
	r.byNode[n.ID] = r.add(s)
	return nctx, obs
}

func (r *traceRecorder) NodeSettled(ctx context.Context, s supervise.NodeSettled) {
	r.inner.NodeSettled(ctx, s)
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.byNode[s.Node.ID]
	if !ok {
		return
	}
	sp := &r.spans[i]
	sp.Status = SpanError
	if s.State == supervise.StateDone {
		sp.Status = SpanOK
	}
	ms := r.now().Sub(sp.StartedAt).Milliseconds()
	sp.DurationMS = &ms
}

func (r *traceRecorder) RunEnded(ctx context.Context, res supervise.SupervisedResult) {
	r.inner.RunEnded(ctx, res)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root < 0 {
		return
	}
	sp := &r.spans[r.root]
	sp.Status = SpanError
	if res.Status == supervise.StatusWinner {
		sp.Status = SpanOK
	}
	ms := r.now().Sub(sp.StartedAt).Milliseconds()
	sp.DurationMS = &ms
}

// BrainObserver passes the manager's observer through.
func (r *traceRecorder) BrainObserver() kernel.Observer {
	if b, ok := r.inner.(supervise.BrainObserver); ok {
		return b.BrainObserver()
	}
	return nil
}

// ids returns the trace id and the run's root span id ("" untraced).
func (r *traceRecorder) ids() (string, string) {
	if r == nil {
		return "", ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.traceID, r.rootSpan
}

// apply records the trace of this attempt on d: its trace id and root
// span, and its spans after those of earlier attempts, the oldest
// dropped past MaxTraceSpans.
func (r *traceRecorder) apply(d *Delegation) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.traceID == "" {
		return
	}
	d.TraceID, d.ParentSpanID = r.traceID, r.rootSpan
	all := slices.Concat(d.Trace, r.spans)
	if over := len(all) - MaxTraceSpans; over > 0 {
		all = all[over:]
		d.TraceTruncated = true
	}
	if r.dropped > 0 {
		d.TraceTruncated = true
	}
	d.Trace = all
}
