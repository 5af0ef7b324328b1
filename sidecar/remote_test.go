package sidecar_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/sidecar"
)

// faulty wraps h: the first matching request runs to its end on the
// server, then its connection is cut before the client reads the answer
// (create), or after the first event (a turn stream).
func faulty(h http.Handler, match func(*http.Request) bool, afterWrites int) (http.Handler, *atomic.Int32) {
	var hits atomic.Int32
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !match(r) || hits.Add(1) != 1 {
			h.ServeHTTP(w, r)
			return
		}
		if afterWrites == 0 {
			h.ServeHTTP(httptest.NewRecorder(), r) // the effect happens, the answer is lost
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(&cutWriter{ResponseWriter: w, left: afterWrites}, r)
	}), &hits
}

// cutWriter aborts the connection once it wrote left frames.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (c *cutWriter) Write(b []byte) (int, error) {
	if strings.HasPrefix(string(b), "id: ") {
		if c.left == 0 {
			panic(http.ErrAbortHandler)
		}
		c.left--
	}
	return c.ResponseWriter.Write(b)
}

func (c *cutWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

func newRemote(t *testing.T, url string) *remote.Provider {
	t.Helper()
	p, err := remote.New(remote.Options{BaseURL: url, Token: testToken, RetryBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func createInput(key string) *contract.CreateInput {
	in := &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}}
	if key != "" {
		in.IdempotencyKey = &key
	}
	return in
}

// ENV-10: a create whose answer is lost after the server made the
// environment is retried with the same key: one environment, same id.
func TestRemoteAmbiguousCreateRetriesSameKey(t *testing.T) {
	for _, key := range []string{"caller-key", ""} {
		p := newScripted(t)
		s, err := sidecar.New(p, sidecar.Options{Token: testToken})
		if err != nil {
			t.Fatal(err)
		}
		h, hits := faulty(s, func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/v1/environments" }, 0)
		ts := httptest.NewServer(h)
		env, err := newRemote(t, ts.URL).Create(context.Background(), createInput(key))
		if err != nil {
			t.Fatalf("key %q: Create: %v", key, err)
		}
		if hits.Load() != 2 || p.Creates() != 1 {
			t.Errorf("key %q: %d create requests, %d environments; want 2 requests and 1 environment", key, hits.Load(), p.Creates())
		}
		want := contract.Creation("") // a caller's key may have been used before
		if key == "" {
			want = contract.CreationCreated
		}
		if env.Creation() != want {
			t.Errorf("key %q: creation %q, want %q", key, env.Creation(), want)
		}
		if st, err := env.Status(context.Background()); err != nil || st != contract.EnvironmentRunning {
			t.Errorf("key %q: status %q, %v", key, st, err)
		}
		s.Close()
		ts.Close()
	}
}

// A turn stream cut after its first event reconnects with Last-Event-ID:
// every event arrives once, in order, and the turn ran once.
func TestRemoteStreamReconnects(t *testing.T) {
	p := newScripted(t)
	s, err := sidecar.New(p, sidecar.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h, hits := faulty(s, func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/turns") }, 1)
	ts := httptest.NewServer(h)
	defer ts.Close()
	rp := newRemote(t, ts.URL)
	env, err := rp.Create(context.Background(), createInput(""))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var texts []string
	prompt := "slow"
	for ev, err := range env.Stream(ctx, &contract.TurnInput{Prompt: &prompt}) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
			texts = append(texts, *n.MessagePartUpdated.Delta)
		}
	}
	if hits.Load() < 2 {
		t.Fatalf("the stream was opened %d times; the cut did not happen", hits.Load())
	}
	if got := strings.Join(texts, "|"); got != "one|two|three" {
		t.Fatalf("texts %q, want one|two|three exactly once each", got)
	}
	if n := p.Turns(); n != 1 {
		t.Fatalf("the provider ran %d turns, want 1", n)
	}
}
