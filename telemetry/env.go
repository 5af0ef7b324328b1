package telemetry

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Export bounds of the OTLP/HTTP exporters (spec runtime §10): a failed
// request is retried after RetryInitial, doubling up to RetryMax, for at
// most RetryElapsed; a collector's answer longer than MaxResponseBytes
// fails the export. Each request times out after 10 s, the exporters'
// default, unless OTEL_EXPORTER_OTLP_[TRACES_|METRICS_]TIMEOUT says
// otherwise.
const (
	RetryInitial     = time.Second
	RetryMax         = 30 * time.Second
	RetryElapsed     = time.Minute
	MaxResponseBytes = 64 << 10
)

// Config is where an OTLP/HTTP exporter sends spans.
type Config struct {
	// Endpoint is the full traces URL (http or https, with its path).
	Endpoint string
	// Headers go with every export request; they may hold credentials
	// and are never logged.
	Headers map[string]string
	// JSON selects OTLP/JSON instead of OTLP/protobuf.
	JSON bool
	// ServiceName is the resource's service.name ("" means
	// DefaultServiceName).
	ServiceName string
	// MetricsEndpoint is the full metrics URL, "" for no metrics, with
	// MetricsHeaders; metrics are always OTLP/protobuf.
	MetricsEndpoint string
	MetricsHeaders  map[string]string
}

// ConfigFromEnv reads the standard OpenTelemetry variables through
// getenv: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
// OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended),
// OTEL_EXPORTER_OTLP_[TRACES_]HEADERS, OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL
// (http/protobuf, the default, or http/json) and OTEL_SERVICE_NAME. It
// returns nil — tracing off — when no endpoint is set, when
// OTEL_SDK_DISABLED is true, or when OTEL_TRACES_EXPORTER is none.
// Metrics go to OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (as is) or the base
// endpoint's /v1/metrics, with OTEL_EXPORTER_OTLP_[METRICS_]HEADERS,
// unless OTEL_METRICS_EXPORTER is none.
func ConfigFromEnv(getenv func(string) string) (*Config, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") || strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")) == "none" {
		return nil, nil
	}
	base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	endpoint, err := signalEndpoint(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), base, "/v1/traces")
	if err != nil || endpoint == "" {
		return nil, err
	}
	c := &Config{Endpoint: endpoint, ServiceName: strings.TrimSpace(getenv("OTEL_SERVICE_NAME"))}
	if c.Headers, err = parseHeaders(cmp.Or(getenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS"), getenv("OTEL_EXPORTER_OTLP_HEADERS"))); err != nil {
		return nil, err
	}
	if strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")) != "none" {
		if c.MetricsEndpoint, err = signalEndpoint(getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"), base, "/v1/metrics"); err != nil {
			return nil, err
		}
		if c.MetricsHeaders, err = parseHeaders(cmp.Or(getenv("OTEL_EXPORTER_OTLP_METRICS_HEADERS"), getenv("OTEL_EXPORTER_OTLP_HEADERS"))); err != nil {
			return nil, err
		}
	}
	switch p := cmp.Or(strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")), strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")), "http/protobuf"); p {
	case "http/protobuf":
	case "http/json":
		c.JSON = true
	default:
		return nil, fmt.Errorf("telemetry: OTLP protocol %q is not supported (use http/protobuf or http/json)", p)
	}
	return c, nil
}

// signalEndpoint is a signal's URL: its own variable's value as is, or
// the base endpoint with the signal's path; "" when neither is set.
func signalEndpoint(own, base, path string) (string, error) {
	endpoint := strings.TrimSpace(own)
	if endpoint == "" {
		if base == "" {
			return "", nil
		}
		endpoint = strings.TrimRight(base, "/") + path
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Never echo the value: it may carry credentials.
		return "", errors.New("telemetry: an OTLP endpoint is not an http or https URL")
	}
	return u.String(), nil
}

// parseHeaders parses the W3C-baggage-like list of OTEL_EXPORTER_OTLP_HEADERS:
// key=value pairs separated by commas, values percent-encoded.
func parseHeaders(raw string) (map[string]string, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	h := map[string]string{}
	for i, pair := range strings.Split(raw, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("telemetry: OTLP header %d is not key=value", i+1)
		}
		value, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("telemetry: OTLP header %q has a malformed value", k)
		}
		h[k] = value
	}
	return h, nil
}

// NewExporter returns an OTLP/HTTP exporter for c. It refuses redirects:
// a redirect could carry the headers' credentials to another host. Its
// requests are bounded as RetryInitial, RetryMax, RetryElapsed and
// MaxResponseBytes say.
func NewExporter(ctx context.Context, c Config) (*otlptrace.Exporter, error) {
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(c.Endpoint), otlptracehttp.WithHTTPClient(noRedirects()),
		otlptracehttp.WithMaxResponseSize(MaxResponseBytes),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: RetryInitial, MaxInterval: RetryMax, MaxElapsedTime: RetryElapsed})}
	if len(c.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
	}
	if c.JSON {
		opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: creating the OTLP exporter: %w", err)
	}
	return exp, nil
}

// noRedirects is an HTTP client that refuses redirects.
func noRedirects() *http.Client {
	return &http.Client{
		Transport: http.DefaultTransport.(*http.Transport).Clone(),
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the OTLP endpoint redirected; redirects are refused")
		},
	}
}

// newMeterProvider returns a meter provider exporting to c's metrics
// endpoint, read when flushed and every minute.
func newMeterProvider(ctx context.Context, c Config) (*sdkmetric.MeterProvider, error) {
	opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpointURL(c.MetricsEndpoint), otlpmetrichttp.WithHTTPClient(noRedirects()),
		otlpmetrichttp.WithMaxResponseSize(MaxResponseBytes),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: RetryInitial, MaxInterval: RetryMax, MaxElapsedTime: RetryElapsed})}
	if len(c.MetricsHeaders) > 0 {
		opts = append(opts, otlpmetrichttp.WithHeaders(c.MetricsHeaders))
	}
	exp, err := otlpmetrichttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: creating the OTLP metric exporter: %w", err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithResource(serviceResource(c.ServiceName)), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp))), nil
}

// FromEnv returns a Tracing exporting over OTLP/HTTP as the environment
// (read through getenv, see ConfigFromEnv) says, or nil, nil when it
// configures no endpoint: tracing off. o.Exporter is ignored.
func FromEnv(ctx context.Context, getenv func(string) string, o Options) (*Tracing, error) {
	c, err := ConfigFromEnv(getenv)
	if err != nil || c == nil {
		return nil, err
	}
	exp, err := NewExporter(ctx, *c)
	if err != nil {
		return nil, err
	}
	o.Exporter = exp
	o.ServiceName = cmp.Or(c.ServiceName, o.ServiceName)
	c.ServiceName = o.ServiceName
	var mp *sdkmetric.MeterProvider
	if c.MetricsEndpoint != "" && o.MeterProvider == nil {
		if mp, err = newMeterProvider(ctx, *c); err != nil {
			return nil, err
		}
		o.MeterProvider = mp
	}
	t, err := New(o)
	if err != nil {
		return nil, err
	}
	t.ownMeter = mp
	return t, nil
}
