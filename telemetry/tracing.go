package telemetry

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span this package
// starts.
const ScopeName = "github.com/agentrt/agentrt/telemetry"

// DefaultServiceName is the resource's service.name when none is given.
const DefaultServiceName = "agentrt"

// Defaults of the export queue (spec runtime §10: batch 64, interval 5 s,
// queue 2048, drop the newest when full).
const (
	DefaultQueueSize    = 2048
	DefaultBatchSize    = 64
	DefaultBatchTimeout = 5 * time.Second
)

// Options configure a Tracing.
type Options struct {
	// Exporter receives the finished spans; required.
	Exporter sdktrace.SpanExporter
	// ServiceName is the resource's service.name ("" means
	// DefaultServiceName).
	ServiceName string
	// QueueSize, BatchSize and BatchTimeout shape the export queue (0
	// means the default). A span that ends while the queue is full is
	// dropped and counted (Report.Dropped); the run never waits.
	QueueSize    int
	BatchSize    int
	BatchTimeout time.Duration
	// Logger receives export failures (nil discards).
	Logger *slog.Logger
	// OnDrop, when set, is told how many spans the full queue dropped
	// (spec runtime §10's onDrop): Flush and Shutdown call it with the
	// spans dropped since they last did, when there are any. A panic in
	// it is contained.
	OnDrop func(dropped int64)
	// MeterProvider, when set, receives the run metrics (MetricRuns,
	// MetricTokenUsage, MetricCost, MetricTurnDuration); the caller
	// owns it unless FromEnv made it.
	MeterProvider metric.MeterProvider
}

// Tracing is one tracer provider and its exporter. It is safe for
// concurrent use; Shutdown ends it.
type Tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	counts   *counts
	log      *slog.Logger
	metrics  *runInstruments
	// ownMeter is the meter provider FromEnv made, shut down with t.
	ownMeter *sdkmetric.MeterProvider
	onDrop   func(int64)
	// told is how many dropped spans onDrop was told of.
	dropMu sync.Mutex
	told   int64
}

// Report is what became of the spans a Tracing ended so far.
type Report struct {
	// Succeeded is true when every ended span was delivered.
	Succeeded bool
	// Delivered spans were accepted by the exporter.
	Delivered int64
	// Undelivered spans were handed to export and not accepted: the
	// export failed, the collector rejected part of their batch (a
	// partial success is a failure: which spans it kept is unknown), or
	// a span was invalid and never sent.
	Undelivered int64
	// Dropped spans never reached the exporter: the queue was full.
	Dropped int64
	// Err is the last export failure, if any.
	Err error
}

// New returns a Tracing that exports to o.Exporter.
func New(o Options) (*Tracing, error) {
	if o.Exporter == nil {
		return nil, errors.New("telemetry: an exporter is required")
	}
	if o.QueueSize < 0 || o.BatchSize < 0 || o.BatchTimeout < 0 {
		return nil, fmt.Errorf("telemetry: queue size %d, batch size %d and batch timeout %s must not be negative", o.QueueSize, o.BatchSize, o.BatchTimeout)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &counts{}
	exp := &checkedExporter{next: o.Exporter, counts: c, log: log}
	batch := sdktrace.NewBatchSpanProcessor(exp,
		sdktrace.WithMaxQueueSize(cmp.Or(o.QueueSize, DefaultQueueSize)),
		sdktrace.WithMaxExportBatchSize(cmp.Or(o.BatchSize, DefaultBatchSize)),
		sdktrace.WithBatchTimeout(cmp.Or(o.BatchTimeout, DefaultBatchTimeout)))
	res := serviceResource(o.ServiceName)
	var err error
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(runIDs{}),
		sdktrace.WithSpanProcessor(&countedProcessor{SpanProcessor: batch, counts: c}),
	)
	t := &Tracing{provider: tp, tracer: tp.Tracer(ScopeName), counts: c, log: log, onDrop: o.OnDrop}
	if o.MeterProvider != nil {
		if t.metrics, err = newInstruments(o.MeterProvider); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Flush exports every span ended so far (and the metrics, when FromEnv
// made their exporter) and reports what became of all the spans this
// Tracing ended.
func (t *Tracing) Flush(ctx context.Context) Report {
	err := t.provider.ForceFlush(ctx)
	if t.ownMeter != nil {
		err = errors.Join(err, t.ownMeter.ForceFlush(ctx))
	}
	return t.reported(t.counts.report(err))
}

// reported tells OnDrop of the spans dropped since it was last told, and
// returns r.
func (t *Tracing) reported(r Report) Report {
	if t.onDrop == nil {
		return r
	}
	t.dropMu.Lock()
	news := r.Dropped - t.told
	t.told = max(t.told, r.Dropped)
	t.dropMu.Unlock()
	if news > 0 {
		t.tellDrops(news)
	}
	return r
}

// tellDrops calls OnDrop, containing a panic.
func (t *Tracing) tellDrops(n int64) {
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("telemetry: OnDrop panicked", "panic", p)
		}
	}()
	t.onDrop(n)
}

// Shutdown flushes, stops the exporters and reports as Flush does. Spans
// ended afterwards are not exported. Calling it again reports again.
func (t *Tracing) Shutdown(ctx context.Context) Report {
	err := t.provider.Shutdown(ctx)
	if t.ownMeter != nil {
		if e := t.ownMeter.Shutdown(ctx); e != nil && !errors.Is(e, sdkmetric.ErrReaderShutdown) {
			err = errors.Join(err, e)
		}
	}
	return t.reported(t.counts.report(err))
}

// serviceResource is the resource naming the service.
func serviceResource(name string) *resource.Resource {
	return resource.NewSchemaless(attribute.String("service.name", cmp.Or(name, DefaultServiceName)))
}

// startRoot starts a span that roots the trace of run runID (TraceID; a
// random trace id when runID is empty, as for an unrecorded tool loop):
// a span ctx carries is linked, not parent.
func (t *Tracing) startRoot(ctx context.Context, runID, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...)}
	if caller := trace.SpanContextFromContext(ctx); caller.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
	}
	if runID != "" {
		ctx = context.WithValue(ctx, runKey{}, runID)
	}
	return t.tracer.Start(ctx, name, opts...)
}

// TraceID is the trace id of run runID's spans: the first 16 bytes of
// the SHA-256 of the run id, never all zero. A run resumed in another
// process rejoins its trace.
func TraceID(runID string) trace.TraceID {
	sum := sha256.Sum256([]byte("agentrt/run/" + runID))
	var id trace.TraceID
	copy(id[:], sum[:16])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// counts are the span counts behind a Report.
type counts struct {
	ended, delivered, undelivered atomic.Int64
	mu                            sync.Mutex
	err                           error
}

func (c *counts) fail(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
}

// report reads the counts once the queue is empty (after a flush): every
// ended span not handed to export was dropped.
func (c *counts) report(flushErr error) Report {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if flushErr != nil {
		err = errors.Join(err, flushErr)
	}
	r := Report{Delivered: c.delivered.Load(), Undelivered: c.undelivered.Load(), Err: err}
	r.Dropped = max(0, c.ended.Load()-r.Delivered-r.Undelivered)
	r.Succeeded = r.Undelivered == 0 && r.Dropped == 0 && err == nil
	return r
}

// countedProcessor counts the spans that end sampled: the batch processor
// queues exactly those, so after a flush every one not handed to export
// was dropped because the queue was full.
type countedProcessor struct {
	sdktrace.SpanProcessor
	counts *counts
}

func (p *countedProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		p.counts.ended.Add(1)
	}
	p.SpanProcessor.OnEnd(s)
}

// checkedExporter never sends an invalid span, counts what it delivered
// and what failed, and logs failures instead of handing them to the
// process-wide OpenTelemetry error handler.
type checkedExporter struct {
	next   sdktrace.SpanExporter
	counts *counts
	log    *slog.Logger
}

func (e *checkedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	valid := make([]sdktrace.ReadOnlySpan, 0, len(spans))
	for _, s := range spans {
		if err := checkSpan(s); err != nil {
			e.counts.undelivered.Add(1)
			e.counts.fail(err)
			e.log.Warn("telemetry: a span was not exported", "span", s.Name(), "err", err)
			continue
		}
		valid = append(valid, s)
	}
	if len(valid) == 0 {
		return nil
	}
	if err := e.next.ExportSpans(ctx, valid); err != nil {
		e.counts.undelivered.Add(int64(len(valid)))
		e.counts.fail(err)
		e.log.Warn("telemetry: exporting spans failed", "spans", len(valid), "err", err)
		return nil // counted and logged; the batch processor has no better use for it
	}
	e.counts.delivered.Add(int64(len(valid)))
	return nil
}

func (e *checkedExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// checkSpan is the span validation of spec runtime §10: valid non-zero
// ids, a parent that is not the span itself, an end not before its start.
func checkSpan(s sdktrace.ReadOnlySpan) error {
	sc, parent := s.SpanContext(), s.Parent()
	switch {
	case !sc.TraceID().IsValid():
		return errors.New("its trace id is zero")
	case !sc.SpanID().IsValid():
		return errors.New("its span id is zero")
	case parent.SpanID().IsValid() && parent.SpanID() == sc.SpanID():
		return errors.New("it is its own parent")
	case parent.IsValid() && parent.TraceID() != sc.TraceID() && !parent.IsRemote():
		return errors.New("its parent is in another trace")
	case s.EndTime().Before(s.StartTime()):
		return errors.New("it ends before it starts")
	}
	return nil
}

// runKey carries the run id whose trace a new root span starts.
type runKey struct{}

// runIDs gives a root span started for a run (startRoot) the run's trace
// id, and every span a random span id but a retained run's root
// (StartRetained: RetainedSpanID).
type runIDs struct{}

func (runIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if id, ok := ctx.Value(runKey{}).(string); ok {
		if sid, ok := ctx.Value(rootSpanKey{}).(trace.SpanID); ok && sid.IsValid() {
			return TraceID(id), sid
		}
		return TraceID(id), newSpanID()
	}
	var t trace.TraceID
	for !t.IsValid() {
		rand.Read(t[:])
	}
	return t, newSpanID()
}

func (runIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		rand.Read(s[:])
	}
	return s
}
