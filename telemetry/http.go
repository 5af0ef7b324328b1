package telemetry

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// HTTP server span attribute keys (OpenTelemetry HTTP semantic
// conventions).
const (
	KeyHTTPMethod = "http.request.method"
	KeyHTTPRoute  = "http.route"
	KeyHTTPStatus = "http.response.status_code"
)

// Handler traces every request next serves as a server span continuing
// the W3C traceparent the request carries (a remote provider's turn
// sends its inference span's), or rooting a trace of its own without
// one. The span is named by the method and the route pattern of the
// http.ServeMux that served it ("POST /v1/environments/{id}/turns"; the
// method alone when no pattern matched) and carries the method, the route
// and the status; a 5xx status is an error. Neither the path's values,
// the headers nor the bodies are exported. A nil Tracing returns next.
func (t *Tracing) Handler(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String(KeyHTTPMethod, r.Method)))
		defer span.End()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		next.ServeHTTP(rec, r)
		// The mux that matched the request set its pattern on r.
		if r.Pattern != "" {
			span.SetName(r.Method + " " + routeOf(r.Pattern))
			span.SetAttributes(attribute.String(KeyHTTPRoute, routeOf(r.Pattern)))
		}
		span.SetAttributes(attribute.Int(KeyHTTPStatus, rec.status))
		if rec.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(rec.status))
		}
	})
}

// routeOf is a ServeMux pattern without its method and host: the path
// template.
func routeOf(pattern string) string {
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == '/' {
			return pattern[i:]
		}
	}
	return pattern
}

// statusRecorder records the status a handler wrote; Unwrap lets
// http.ResponseController reach the real writer (Flush for event
// streams).
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusRecorder) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Flush flushes the real writer when it can.
func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }
