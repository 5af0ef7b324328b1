package openai_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/openai"
)

// A transient refusal is retried, on both APIs, and each retry is yielded
// as a ChatRetry event before its wait: the attempt, the wait the
// endpoint asked for, the status and a summary without the endpoint's
// message. Only the accepted attempt's usage is reported. A 400 is not
// retried.
func TestRetriesAreEvents(t *testing.T) {
	usage := &contract.TokenUsage{InputTokens: 19, OutputTokens: 2, TotalTokens: i64(21)}
	tests := []struct {
		transcript string
		retries    []contract.ModelRetry
		status     int // the refusal returned, 0 for none
	}{
		{"ratelimit", []contract.ModelRetry{{Attempt: 2, Delay: time.Second, Status: 429, Reason: "HTTP 429 Too Many Requests (rate_limit_exceeded)"}}, 0},
		{"unavailable", []contract.ModelRetry{{Attempt: 2, Delay: 20 * time.Millisecond, Status: 503, Reason: "HTTP 503 Service Unavailable (server_error)"}}, 0},
		{"bad_request", nil, http.StatusBadRequest},
	}
	for _, api := range []openai.API{openai.APIChatCompletions, openai.APIResponses} {
		for _, tc := range tests {
			t.Run(string(api)+"/"+tc.transcript, func(t *testing.T) {
				name := tc.transcript
				if api == openai.APIResponses {
					name = resp(name)
				}
				start := time.Now()
				evs, _, srv, err := play(t, name, openai.Options{API: api})
				var retries []contract.ModelRetry
				for i, e := range evs {
					if e.Kind != contract.ChatRetry {
						continue
					}
					if i != len(retries) {
						t.Errorf("retry event %d comes after other events", i)
					}
					retries = append(retries, *e.Retry)
				}
				if d := cmp.Diff(tc.retries, retries); d != "" {
					t.Errorf("retries (-want +got):\n%s", d)
				}
				if srv.Requests() != len(tc.retries)+1 {
					t.Errorf("%d requests; want %d", srv.Requests(), len(tc.retries)+1)
				}
				if tc.status != 0 {
					apiErr, ok := errors.AsType[*openai.APIError](err)
					if !ok || apiErr.StatusCode != tc.status || apiErr.Retryable {
						t.Fatalf("err %v; want a non-retryable HTTP %d", err, tc.status)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range tc.retries {
					if waited := time.Since(start); waited < r.Delay {
						t.Errorf("done after %v; the endpoint asked to wait %v", waited, r.Delay)
					}
				}
				if u := usages(evs); len(u) != 1 || !cmp.Equal(usage, u[0].Usage) {
					t.Errorf("usage events %+v; want one, the accepted attempt's %+v", u, usage)
				}
				if text(evs) != "Hello!" {
					t.Errorf("text %q", text(evs))
				}
			})
		}
	}
}

// A connection failure is retried after a backoff bounded by
// MaxRetryWait, each retry an event without a status; the last failure is
// the turn's error.
func TestConnectionFailureRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1/"
	ln.Close() // nothing listens: every attempt is refused
	m, err := openai.New(openai.Options{BaseURL: base, APIKey: testKey, Model: "gpt-5.2", MaxRetries: 2, MaxRetryWait: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := collect(m.Turn(t.Context(), hello(), nil))
	if err == nil || errors.As(err, new(*openai.APIError)) {
		t.Fatalf("err %v; want the connection failure", err)
	}
	if len(evs) != 2 {
		t.Fatalf("events %+v; want two retries", evs)
	}
	for i, e := range evs {
		r := e.Retry
		if e.Kind != contract.ChatRetry || r.Attempt != i+2 || r.Status != 0 || r.Delay <= 0 || r.Delay > 10*time.Millisecond ||
			!strings.HasPrefix(r.Reason, "connection failed: ") || strings.Contains(r.Reason, testKey) {
			t.Errorf("event %d: %+v %+v", i, e, r)
		}
	}
}

// Many retries wait a backoff that stops at MaxRetryWait: never a
// negative or overflowed wait (nor a panic).
func TestManyRetriesStayBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1/"
	ln.Close()
	m, err := openai.New(openai.Options{BaseURL: base, APIKey: testKey, Model: "gpt-5.2", MaxRetries: 70, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := collect(m.Turn(t.Context(), hello(), nil))
	if err == nil || len(evs) != 70 {
		t.Fatalf("%d events, err %v; want 70 retries and the connection failure", len(evs), err)
	}
	for _, e := range evs {
		// The bound, less at most a quarter of jitter.
		if e.Retry == nil || e.Retry.Delay < 750*time.Microsecond || e.Retry.Delay > time.Millisecond {
			t.Fatalf("retry %+v", e.Retry)
		}
	}
}
