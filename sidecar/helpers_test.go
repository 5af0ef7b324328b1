package sidecar_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/sidecar"
)

const testToken = "s3cret-token-for-tests"

// testScript: "slow" emits three texts with pauses (a turn a client can
// drop mid-way); "live" runs until cancelled; anything else says hello
// with usage.
const testScript = `{"turns":[
 {"match":"slow","repeat":true,"steps":[{"text":"one"},{"delayMs":150},{"text":"two"},{"delayMs":150},{"text":"three"}]},
 {"match":"live","repeat":true,"steps":[{"text":"working"},{"delayMs":60000},{"text":"done"}]},
 {"repeat":true,"steps":[{"text":"Hello."},{"usage":{"inputTokens":12,"outputTokens":3},"mode":"delta"}]}]}`

func newScripted(t testing.TB) *scripted.Provider {
	t.Helper()
	s, err := scripted.ParseScript([]byte(testScript))
	if err != nil {
		t.Fatal(err)
	}
	return scripted.New(s, scripted.Options{})
}

// serve starts a loopback test server for p.
func serve(t testing.TB, p contract.Provider, opts sidecar.Options) (*httptest.Server, *sidecar.Server) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	s, err := sidecar.New(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts, s
}

// do sends one request with the test token and returns status and body.
func do(t testing.TB, ts *httptest.Server, method, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// wantError checks an error answer's status, code and path.
func wantError(t testing.TB, status int, body []byte, wantStatus int, code string, path *string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d (body %s)", status, wantStatus, body)
	}
	eb, err := wire.ParseErrorBody(body)
	if err != nil {
		t.Fatalf("the error body %s is not an ErrorBody: %v", body, err)
	}
	if eb.Error.Code != code {
		t.Errorf("code %q, want %q (%s)", eb.Error.Code, code, body)
	}
	if path != nil && (eb.Error.Path == nil || *eb.Error.Path != *path) {
		t.Errorf("path %v, want %q (%s)", eb.Error.Path, *path, body)
	}
}

func ptr[T any](v T) *T { return &v }

// sseEvents reads every frame of an SSE body.
func sseEvents(t testing.TB, body []byte) []wire.SSEEvent {
	t.Helper()
	r := wire.NewSSEReader(bytes.NewReader(body))
	var out []wire.SSEEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading SSE: %v", err)
		}
		out = append(out, ev)
	}
}
