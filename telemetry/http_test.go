package telemetry_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/telemetry"
)

// Handler's server spans: a request with a traceparent continues it, one
// without roots its own trace; the span is named by the matched route,
// a 5xx is an error, an unmatched request is named by its method, and
// streaming still reaches the real writer.
func TestHandlerContinuesTraceparent(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tr, err := telemetry.New(telemetry.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(t.Context())
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/environments/{id}/turns", func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush through the handler: %v", err)
		}
	})
	mux.HandleFunc("GET /v1/fail", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	srv := httptest.NewServer(tr.Handler(mux))
	defer srv.Close()
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct{ method, path, traceparent string }{
		{http.MethodPost, "/v1/environments/env-secret-1/turns", parent},
		{http.MethodGet, "/v1/fail", ""},
		{http.MethodGet, "/nowhere", ""},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), c.method, srv.URL+c.path, nil)
		if c.traceparent != "" {
			req.Header.Set("traceparent", c.traceparent)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	// A client may read its answer before the handler's span has ended:
	// Close waits until every request's handler has returned.
	srv.Close()
	tr.Flush(t.Context())
	type span struct {
		Name        string
		Kind        trace.SpanKind
		Parent      string
		Status      codes.Code
		Route       any
		Code        any
		PathVisible bool
	}
	var got []span
	for _, s := range mem.GetSpans() {
		a := attrMap(s.Attributes)
		p := ""
		if s.Parent.IsValid() {
			p = s.Parent.TraceID().String() + "/" + s.Parent.SpanID().String()
			if s.SpanContext.TraceID() != s.Parent.TraceID() {
				t.Errorf("%s left its parent's trace", s.Name)
			}
		}
		visible := false
		for _, v := range a {
			if v == "env-secret-1" || v == "/v1/environments/env-secret-1/turns" {
				visible = true
			}
		}
		got = append(got, span{Name: s.Name, Kind: s.SpanKind, Parent: p, Status: s.Status.Code, Route: a[telemetry.KeyHTTPRoute], Code: a[telemetry.KeyHTTPStatus], PathVisible: visible})
	}
	want := []span{
		{Name: "POST /v1/environments/{id}/turns", Kind: trace.SpanKindServer, Parent: "4bf92f3577b34da6a3ce929d0e0e4736/00f067aa0ba902b7", Route: "/v1/environments/{id}/turns", Code: int64(200)},
		{Name: "GET /v1/fail", Kind: trace.SpanKindServer, Status: codes.Error, Route: "/v1/fail", Code: int64(502)},
		{Name: "GET", Kind: trace.SpanKindServer, Code: int64(404)},
	}
	// A span ends after its answer was written, so spans of consecutive
	// requests may end (and be exported) in either order.
	byName := cmpopts.SortSlices(func(a, b span) bool { return a.Name < b.Name })
	if diff := cmp.Diff(want, got, byName); diff != "" {
		t.Errorf("server spans (-want +got):\n%s", diff)
	}
	if h := (*telemetry.Tracing)(nil).Handler(mux); h != http.Handler(mux) {
		t.Error("a nil Tracing wraps the handler")
	}
}

// BenchmarkHandler is the price of one traced request (a server span
// continuing a traceparent, into a discarding exporter) over the bare
// handler, to compare with BenchmarkHandlerUntraced.
func BenchmarkHandler(b *testing.B) {
	tr, err := telemetry.New(telemetry.Options{Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(b.Context())
	benchHandler(b, tr.Handler(benchMux()))
}

// BenchmarkHandlerUntraced is BenchmarkHandler's baseline.
func BenchmarkHandlerUntraced(b *testing.B) { benchHandler(b, benchMux()) }

func benchMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/environments/{id}/turns", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	return mux
}

func benchHandler(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodPost, "/v1/environments/env-1/turns", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}
