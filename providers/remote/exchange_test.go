package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/profile"
)

// exchangeServer is a real HTTP server that answers every request with
// status and body, after holding it for hold (or until the client
// left), and counts the requests and records the last body it read.
type exchangeServer struct {
	srv  *httptest.Server
	hits atomic.Int32
	last atomic.Value // string
	cred atomic.Value // string
	p    *Provider
}

func newExchangeServer(t *testing.T, status int, body string, hold time.Duration) *exchangeServer {
	t.Helper()
	s := &exchangeServer{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		s.last.Store(string(b))
		s.cred.Store(r.Header.Get(wire.HeaderCredentialRequest))
		if hold > 0 {
			select {
			case <-time.After(hold):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", wire.ContentTypeJSON)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(s.srv.Close)
	p, err := New(Options{BaseURL: s.srv.URL, MaxRetries: 2, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.p = p
	return s
}

// parseWord accepts the answer "ok" and refuses anything else.
func parseWord(b []byte) (string, error) {
	if string(b) != `"ok"` {
		return "", errors.New("not the word")
	}
	return "ok", nil
}

// roundTrip encodes, bounds, sends, decodes and names its failures the
// same way for every call of the package; a request it cannot send never
// reaches the server (runtime §15: strict at the boundary, bounded).
func TestRoundTrip(t *testing.T) {
	errBadInput := errors.New("bad input")
	tests := []struct {
		name     string
		status   int
		answer   string
		x        exchange
		parse    func([]byte) (string, error)
		want     string
		wantErr  string // a substring of the error; "" for none
		wantIs   error
		wantWire int // the *wire.Error status the error carries, 0: none
		wantHits int32
		wantSent string // the body the server read ("" when not checked)
	}{
		{name: "answer decoded", status: 200, answer: `"ok"`,
			x:     exchange{method: http.MethodPost, path: "/x", body: map[string]int{"a": 1}, what: "the x request", answer: "x answer", retry: true},
			parse: parseWord, want: "ok", wantHits: 1, wantSent: `{"a":1}`},
		{name: "no body for a nil value", status: 200, answer: `"ok"`,
			x:     exchange{method: http.MethodGet, path: "/x", answer: "x answer", retry: true},
			parse: parseWord, want: "ok", wantHits: 1, wantSent: ""},
		{name: "nil parse ignores the answer", status: 204,
			x:        exchange{method: http.MethodDelete, path: "/x", retry: true},
			wantHits: 1},
		{name: "an unencodable request is refused before sending", status: 200, answer: `"ok"`,
			x:       exchange{method: http.MethodPost, path: "/x", body: map[string]any{"c": make(chan int)}, what: "the x request"},
			parse:   parseWord,
			wantErr: "remote: the x request has no JSON form: ", wantHits: 0},
		{name: "an oversized request is refused before sending", status: 200, answer: `"ok"`,
			x:       exchange{method: http.MethodPost, path: "/x", body: strings.Repeat("a", 64), what: "the x request", max: 32},
			parse:   parseWord,
			wantErr: "remote: the x request is larger than 32 bytes", wantHits: 0},
		{name: "a refusal wraps the caller's sentinel", status: 200, answer: `"ok"`,
			x:       exchange{method: http.MethodPost, path: "/x", body: strings.Repeat("a", 64), what: "the x request", max: 32, refusal: errBadInput},
			parse:   parseWord,
			wantErr: "bad input: the x request is larger than 32 bytes", wantIs: errBadInput, wantHits: 0},
		{name: "an unparsable answer is named", status: 200, answer: `"no"`,
			x:       exchange{method: http.MethodGet, path: "/x", answer: "x answer", retry: true},
			parse:   parseWord,
			wantErr: "remote: the server's x answer: not the word", wantHits: 1},
		{name: "a refusal answer is not re-sent", status: 404, answer: `{"error":{"code":"not_found","message":"gone"}}`,
			x:      exchange{method: http.MethodGet, path: "/x", answer: "x answer", retry: true},
			parse:  parseWord,
			wantIs: wire.ErrNotFound, wantWire: 404, wantHits: 1},
		{name: "a 5xx answer is re-sent, bounded", status: 503, answer: `{"error":{"code":"unavailable","message":"busy"}}`,
			x:        exchange{method: http.MethodGet, path: "/x", answer: "x answer", retry: true},
			parse:    parseWord,
			wantWire: 503, wantHits: 3},
		{name: "a call that may have had its effect is sent once", status: 503, answer: `{"error":{"code":"unavailable","message":"busy"}}`,
			x:        exchange{method: http.MethodPost, path: "/x", body: 1, what: "the x request", answer: "x answer"},
			parse:    parseWord,
			wantWire: 503, wantHits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newExchangeServer(t, tt.status, tt.answer, 0)
			var attempts int
			tt.x.attempts = &attempts
			tt.x.timeout = time.Minute
			got, err := roundTrip(t.Context(), s.p, tt.x, tt.parse)
			if hits := s.hits.Load(); hits != tt.wantHits {
				t.Errorf("the server saw %d requests, want %d", hits, tt.wantHits)
			}
			if tt.wantHits > 0 && int32(attempts) != tt.wantHits {
				t.Errorf("attempts %d, want %d", attempts, tt.wantHits)
			}
			if tt.wantHits > 0 && tt.wantSent != "" {
				if sent, _ := s.last.Load().(string); sent != tt.wantSent {
					t.Errorf("the server read %q, want %q", sent, tt.wantSent)
				}
			}
			wantFail := tt.wantErr != "" || tt.wantIs != nil || tt.wantWire != 0
			if !wantFail {
				if err != nil {
					t.Fatalf("roundTrip: %v", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
				return
			}
			if err == nil {
				t.Fatalf("roundTrip succeeded with %q, want a failure", got)
			}
			if tt.wantErr != "" && !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("error %q, want it to start with %q", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not match %v", err, tt.wantIs)
			}
			var we *wire.Error
			if tt.wantWire != 0 && (!errors.As(err, &we) || we.Status != tt.wantWire) {
				t.Errorf("error %v is not a *wire.Error with status %d", err, tt.wantWire)
			}
		})
	}
}

// A server that stops answering is left at the exchange's timeout, well
// before the caller's own deadline; with no timeout of its own (a long
// poll) the caller's context bounds it.
func TestRoundTripTimeout(t *testing.T) {
	s := newExchangeServer(t, 200, `"ok"`, time.Minute)
	start := time.Now()
	_, err := roundTrip(t.Context(), s.p, exchange{method: http.MethodGet, path: "/x", answer: "x answer", timeout: 200 * time.Millisecond}, parseWord)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the exchange's deadline", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the exchange took %v, past its 200ms bound", d)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := roundTrip(ctx, s.p, exchange{method: http.MethodGet, path: "/x", answer: "x answer"}, parseWord); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the caller's deadline", err)
	}
}

// A seat stage's credential request travels in its header, never in the
// body (RG-07).
func TestRoundTripCredentialInHeader(t *testing.T) {
	s := newExchangeServer(t, 200, `"ok"`, 0)
	team := "team-b"
	cred := &contract.CredentialRequest{Stage: 1, Harness: "cli-base", Provider: "scripted", Model: "scripted/second",
		Selector: profile.SeatSelector{Kind: profile.SelectorSeat, ID: &team}, Occasion: contract.CredentialOnTurn}
	if _, err := roundTrip(t.Context(), s.p, exchange{method: http.MethodPost, path: "/x", body: 1, what: "the x request",
		answer: "x answer", timeout: time.Minute, cred: cred}, parseWord); err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	if err := wire.SetCredentialRequest(h, cred); err != nil {
		t.Fatal(err)
	}
	if h.Get(wire.HeaderCredentialRequest) == "" {
		t.Fatal("the credential request has no header form")
	}
	if got, _ := s.cred.Load().(string); got != h.Get(wire.HeaderCredentialRequest) {
		t.Errorf("the server's credential header %q, want %q", got, h.Get(wire.HeaderCredentialRequest))
	}
	if sent, _ := s.last.Load().(string); sent != "1" {
		t.Errorf("the server read %q, want the body alone", sent)
	}
}

// BenchmarkRoundTrip is one small exchange with a loopback server,
// encode to decode.
func BenchmarkRoundTrip(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `"ok"`)
	}))
	defer srv.Close()
	p, err := New(Options{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	x := exchange{method: http.MethodPost, path: "/x", body: map[string]int{"a": 1}, what: "the x request", answer: "x answer",
		timeout: time.Minute, retry: true}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := roundTrip(b.Context(), p, x, parseWord); err != nil {
			b.Fatal(err)
		}
	}
}
