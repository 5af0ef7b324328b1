package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract/wire"
)

// silentServer never answers a request (a paused or black-holed
// server); it records the query of every request it received.
func silentServer(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), queries...)
	}
}

// An exact process's long polls (Wait, Stdout) on a server that never
// answers end with a *TimeoutError within about CallTimeout, for a
// caller without a deadline; each ask tells the server the wait it
// wants (wire.QueryWaitMs, a half CallTimeout). Both once asked with no
// bound at all ("a long poll the server bounds") and hung.
func TestExactLongPollsOnASilentServerEndTyped(t *testing.T) {
	base, queries := silentServer(t)
	const callTimeout = 2 * time.Second
	p, err := New(Options{BaseURL: base, CallTimeout: callTimeout, RetryBackoff: 10 * time.Millisecond, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
	proc := &exactProc{e: &exactEnv{p: p, doc: wire.ExactEnvironment{ID: "env-1"}}, pid: 7}
	// A context without a deadline, cancelled only when the test ends
	// (before the server closes), so a hung ask cannot outlive it.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"wait", func() error { _, err := proc.Wait(ctx); return err }},
		{"stdout", func() error {
			for _, err := range proc.Stdout(ctx) {
				if err != nil {
					return err
				}
			}
			return errors.New("stdout ended without an error")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- tc.run() }()
			select {
			case err := <-done:
				var te *TimeoutError
				if !errors.As(err, &te) || te.After != callTimeout || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("%s ended with %v, want a *TimeoutError after %v", tc.name, err, callTimeout)
				}
			case <-time.After(45 * time.Second):
				t.Fatalf("%s still blocked after 45s on a server that never answered (call timeout %v)", tc.name, callTimeout)
			}
		})
	}
	for _, q := range queries() {
		if !strings.Contains(q, wire.QueryWaitMs+"=1000") {
			t.Errorf("a long poll asked with query %q, want %s=1000", q, wire.QueryWaitMs)
		}
	}
}

// eagerServer answers every request at once, as a server that ignores
// the wait a long poll asks for: a session result "pending", an exact
// wait with no termination, an output chunk with no data. It counts
// the requests.
func eagerServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/result"):
			io.WriteString(w, `{"pending":true}`)
		case strings.Contains(r.URL.Path, "/output/"):
			io.WriteString(w, `{"offset":0,"data":"","end":false}`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, &n
}

// A long poll whose server answers at once with nothing (it ignores
// waitMs) pauses between asks, growing up to the wait it asked for,
// instead of asking in a hot loop; the pause ends with ctx. A session's
// result, an exact process's wait and its output each once asked tens
// of thousands of times a second.
func TestLongPollsPaceAnEagerServer(t *testing.T) {
	base, asked := eagerServer(t)
	// A half CallTimeout is the wait: 1s; RetryBackoff is the first pause,
	// and an answer sooner than it is one given at once.
	p, err := New(Options{BaseURL: base, CallTimeout: 2 * time.Second, RetryBackoff: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	env := &environment{p: p, doc: wire.Environment{ID: "env-1"}}
	proc := &exactProc{e: &exactEnv{p: p, doc: wire.ExactEnvironment{ID: "env-1"}}, pid: 7}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"session result", func(ctx context.Context) error { _, err := (&session{e: env, id: "s1"}).Result(ctx); return err }},
		{"exact wait", func(ctx context.Context) error { _, err := proc.Wait(ctx); return err }},
		{"exact output", func(ctx context.Context) error {
			for _, err := range proc.Stdout(ctx) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const window = 3 * time.Second
			before := asked.Load()
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tc.run(ctx) }()
			select {
			case err := <-done:
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("ended with %v; want the context's deadline", err)
				}
			case <-time.After(window + 30*time.Second):
				t.Fatalf("still polling %s after its context ended", window)
			}
			// Pauses of 200, 400, 800ms, then 1s: about 5 asks in 3s (an
			// answer slowed past 200ms on a loaded machine restarts the
			// pauses, which would still be far from a hot loop's
			// thousands).
			if n := asked.Load() - before; n > 12 {
				t.Errorf("asked %d times in %s of a server answering at once; want a paced poll (at most 12)", n, window)
			}
		})
	}
}
