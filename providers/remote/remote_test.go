package remote_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/agentrt/agentrt/providers/remote"
)

// The end-to-end tests live in sidecar (the server) and internal/cli (a
// real serve process); a layer-2 test may not import them.

func TestNewRefusesBadBaseURLs(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:8080", "ftp://h", "http://user:pw@127.0.0.1:1", "http://127.0.0.1:1/?q=1", "http://"} {
		_, err := remote.New(remote.Options{BaseURL: u})
		if err == nil {
			t.Errorf("New(%q) accepted it", u)
			continue
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("New(%q): the error %q carries the password", u, err)
		}
	}
	if _, err := remote.New(remote.Options{BaseURL: "http://127.0.0.1:8080/"}); err != nil {
		t.Fatalf("a loopback base URL: %v", err)
	}
}

// Spec runtime §10: a traced caller's trace context reaches the server as
// W3C traceparent; an untraced caller sends none.
func TestTraceContextPropagated(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer srv.Close()
	p, err := remote.New(remote.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled})
	p.Capabilities(trace.ContextWithSpanContext(t.Context(), sc))
	p.Capabilities(t.Context())
	want := []string{"00-01020300000000000000000000000000-0405060000000000-01", ""}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("traceparent headers %q, want %q", got, want)
	}
}
