package telemetry

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/telemetry/otlptest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Behaviour 68: no endpoint → no exporter (tracing off); the standard
// variables configure the rest.
func TestConfigFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    *Config
		wantErr string
	}{
		{"no endpoint: off", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b"}, nil, ""},
		{"disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, nil, ""},
		{"traces exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, nil, ""},
		{"base endpoint gets the traces path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/", "OTEL_SERVICE_NAME": "svc"},
			&Config{Endpoint: "http://c:4318/v1/traces", ServiceName: "svc", MetricsEndpoint: "http://c:4318/v1/metrics"}, ""},
		{"traces endpoint as is, its headers win", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/x",
			"OTEL_EXPORTER_OTLP_HEADERS": "a=b", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=s%20ecret, team = x "},
			&Config{Endpoint: "https://t.example/x", Headers: map[string]string{"api-key": "s ecret", "team": "x"},
				MetricsEndpoint: "http://c:4318/v1/metrics", MetricsHeaders: map[string]string{"a": "b"}}, ""},
		{"traces endpoint only: no metrics", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:4318/v1/traces"},
			&Config{Endpoint: "http://t:4318/v1/traces"}, ""},
		{"metrics off", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_METRICS_EXPORTER": "none"},
			&Config{Endpoint: "http://c:4318/v1/traces"}, ""},
		{"metrics endpoint and headers of their own", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:9/m",
			"OTEL_EXPORTER_OTLP_METRICS_HEADERS": "k=v"},
			&Config{Endpoint: "http://c:4318/v1/traces", MetricsEndpoint: "http://m:9/m", MetricsHeaders: map[string]string{"k": "v"}}, ""},
		{"json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			&Config{Endpoint: "http://c:4318/v1/traces", JSON: true, MetricsEndpoint: "http://c:4318/v1/metrics"}, ""},
		{"grpc refused", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, nil, "not supported"},
		{"not a URL, value not echoed", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318?token=hunter2"}, nil, "not an http or https URL"},
		{"malformed header", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, nil, "not key=value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ConfigFromEnv(env(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("err %v, want one containing %q and no secret", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
			tr, err := FromEnv(t.Context(), env(tc.env), Options{})
			if err != nil || (tr == nil) != (tc.want == nil) {
				t.Errorf("FromEnv = %v, %v", tr, err)
			}
			if tr != nil {
				tr.Shutdown(t.Context())
			}
		})
	}
}

// blockingExporter holds every export until released.
type blockingExporter struct {
	release chan struct{}
	mem     *tracetest.InMemoryExporter
}

func (b *blockingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	<-b.release
	return b.mem.ExportSpans(ctx, spans)
}

func (b *blockingExporter) Shutdown(context.Context) error { return nil }

// Behaviour 68: spans that end while the queue is full are dropped, the
// run never waits, and the report counts them.
func TestFullQueueCountsDroppedSpans(t *testing.T) {
	b := &blockingExporter{release: make(chan struct{}), mem: tracetest.NewInMemoryExporter()}
	var told []int64
	onDrop := func(n int64) {
		told = append(told, n)
		panic("a hook's panic is contained")
	}
	tr, err := New(Options{Exporter: b, QueueSize: 1, BatchSize: 1, BatchTimeout: time.Millisecond, OnDrop: onDrop})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	start := time.Now()
	for range n {
		_, s := tr.tracer.Start(t.Context(), "s")
		s.End()
		time.Sleep(time.Millisecond) // let the processor take the first into its export
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("ending spans waited on the exporter")
	}
	close(b.release)
	r := tr.Shutdown(t.Context())
	if r.Succeeded || r.Dropped == 0 || r.Delivered+r.Dropped != n || r.Delivered != int64(len(b.mem.GetSpans())) {
		t.Errorf("report %+v (exported %d of %d)", r, len(b.mem.GetSpans()), n)
	}
	// onDrop (behaviour 68) was told of the drops once; reporting again
	// tells nothing new.
	tr.Shutdown(t.Context())
	if len(told) != 1 || told[0] != r.Dropped {
		t.Errorf("OnDrop told %v, want [%d]", told, r.Dropped)
	}
}

// Behaviour 68: an HTTP 200 whose partialSuccess rejected spans is a
// failure, through the real OTLP/HTTP exporter.
func TestPartialSuccessIsFailure(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	c.RejectSpans(1)
	tr, err := FromEnv(t.Context(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.URL}), Options{})
	if err != nil || tr == nil {
		t.Fatal(tr, err)
	}
	_, s := tr.tracer.Start(t.Context(), "s")
	s.End()
	r := tr.Shutdown(t.Context())
	if r.Succeeded || r.Undelivered != 1 || r.Delivered != 0 || r.Err == nil || len(c.Spans()) != 1 {
		t.Errorf("report %+v, collector got %d spans", r, len(c.Spans()))
	}
}

// Spec runtime §10 (response cap 64 KiB): a collector answering more
// than MaxResponseBytes fails the export — its spans are undelivered —
// instead of being read without bound.
func TestOversizedResponseIsFailure(t *testing.T) {
	var got atomic.Int64
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		// An ExportTraceServiceResponse is a protobuf message: field 1
		// (partial_success) as a length-delimited blob longer than the cap.
		body := append([]byte{0x0a, 0x81, 0x80, 0x04}, make([]byte, MaxResponseBytes+1)...)
		w.Write(body)
	}))
	defer big.Close()
	tr, err := FromEnv(t.Context(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": big.URL}), Options{})
	if err != nil || tr == nil {
		t.Fatal(tr, err)
	}
	_, s := tr.tracer.Start(t.Context(), "s")
	s.End()
	r := tr.Shutdown(t.Context())
	if r.Succeeded || r.Undelivered != 1 || r.Delivered != 0 || r.Err == nil || !strings.Contains(r.Err.Error(), "too large") || got.Load() == 0 {
		t.Errorf("report %+v after %d requests, want one undelivered span and a response-size error", r, got.Load())
	}
}

// Spec runtime §10: redirects are refused (they could carry the headers'
// credentials elsewhere).
func TestRedirectRefused(t *testing.T) {
	c := otlptest.New()
	defer c.Close()
	redirect := httptest.NewServer(http.RedirectHandler(c.URL+otlptest.TracesPath, http.StatusTemporaryRedirect))
	defer redirect.Close()
	tr, err := FromEnv(t.Context(), env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": redirect.URL, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=secret"}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, s := tr.tracer.Start(t.Context(), "s")
	s.End()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	r := tr.Shutdown(ctx)
	if r.Succeeded || r.Delivered != 0 || len(c.Spans()) != 0 {
		t.Errorf("report %+v, collector got %d spans", r, len(c.Spans()))
	}
}

// Behaviour 68: a span with a zero trace or span id, its own parent, or
// an end before its start is never exported, and counts as undelivered.
func TestInvalidSpansNeverExported(t *testing.T) {
	tid, sid := TraceID("run-x"), newSpanID()
	now := time.Now()
	good := tracetest.SpanStub{Name: "good", SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}), StartTime: now, EndTime: now}
	zeroTrace, zeroSpan, selfParent, backwards := good, good, good, good
	zeroTrace.Name, zeroTrace.SpanContext = "zero trace", trace.NewSpanContext(trace.SpanContextConfig{SpanID: sid})
	zeroSpan.Name, zeroSpan.SpanContext = "zero span", trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid})
	selfParent.Name, selfParent.Parent = "self parent", good.SpanContext
	backwards.Name, backwards.EndTime = "backwards", now.Add(-time.Second)
	mem := tracetest.NewInMemoryExporter()
	c := &counts{}
	e := &checkedExporter{next: mem, counts: c, log: discard()}
	if err := e.ExportSpans(t.Context(), tracetest.SpanStubs{zeroTrace, good, zeroSpan, selfParent, backwards}.Snapshots()); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range mem.GetSpans() {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"good"}, names); diff != "" {
		t.Errorf("exported (-want +got):\n%s", diff)
	}
	c.ended.Store(5)
	if r := c.report(nil); r.Delivered != 1 || r.Undelivered != 4 || r.Dropped != 0 || r.Succeeded {
		t.Errorf("report %+v", r)
	}
}

func TestTraceIDIsDerivedAndValid(t *testing.T) {
	a, b := TraceID("run-1"), TraceID("run-1")
	if a != b || !a.IsValid() || a == TraceID("run-2") {
		t.Errorf("TraceID: %s %s %s", a, b, TraceID("run-2"))
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
