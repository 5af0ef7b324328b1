package otlptest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// TracesPath and MetricsPath are the paths an OTLP/HTTP exporter posts
// traces and metrics to.
const (
	TracesPath  = "/v1/traces"
	MetricsPath = "/v1/metrics"
)

// Span is one received span, flattened for comparison.
type Span struct {
	Name    string
	TraceID string
	SpanID  string
	// ParentID is "" for a root span.
	ParentID string
	// Kind is the OTLP span kind number (1 internal, 3 client).
	Kind int32
	// StatusCode is the OTLP status code number (0 unset, 1 ok, 2 error).
	StatusCode int32
	// Attributes maps each key to its value: string, bool, int64,
	// float64 or []any.
	Attributes map[string]any
	// Resource holds the resource's attributes and Scope the
	// instrumentation scope's name.
	Resource map[string]any
	Scope    string
}

// Collector is a running OTLP/HTTP trace collector.
type Collector struct {
	// URL is the server's base URL; the traces endpoint is URL+TracesPath.
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	spans    []Span
	metrics  []string
	headers  []http.Header
	rejected int64
}

// New starts a collector. Close stops it.
func New() *Collector {
	c := &Collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	c.URL = c.srv.URL
	return c
}

// Close stops the collector.
func (c *Collector) Close() { c.srv.Close() }

// RejectSpans makes every later answer a partial success that rejects n
// spans of the request (all its spans are still kept here).
func (c *Collector) RejectSpans(n int64) {
	c.mu.Lock()
	c.rejected = n
	c.mu.Unlock()
}

// Spans returns the spans received so far, in order.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// MetricNames returns the names of the metrics received so far, in order
// (a metric exported twice is listed twice).
func (c *Collector) MetricNames() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.metrics...)
}

// Headers returns the headers of every export request so far.
func (c *Collector) Headers() []http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]http.Header(nil), c.headers...)
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || (r.URL.Path != TracesPath && r.URL.Path != MetricsPath) || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Path == MetricsPath {
		c.serveMetrics(w, body)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.headers = append(c.headers, r.Header.Clone())
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Kind: int32(s.GetKind()), StatusCode: int32(s.GetStatus().GetCode()),
					Attributes: attrs(s.GetAttributes()), Resource: res, Scope: ss.GetScope().GetName(),
				})
			}
		}
	}
	var resp coltracepb.ExportTraceServiceResponse
	if c.rejected > 0 {
		resp.PartialSuccess = &coltracepb.ExportTracePartialSuccess{RejectedSpans: c.rejected, ErrorMessage: "rejected by the test collector"}
	}
	c.mu.Unlock()
	out, err := proto.Marshal(&resp)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	}
	return nil
}

func (c *Collector) serveMetrics(w http.ResponseWriter, body []byte) {
	var req colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rm := range req.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				c.metrics = append(c.metrics, m.GetName())
			}
		}
	}
	c.mu.Unlock()
	out, err := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}
