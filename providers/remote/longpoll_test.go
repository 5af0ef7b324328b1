package remote

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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
