package remote_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/remote"
)

// A turn stream whose server accepts the open and never answers its
// headers (a paused `agentrt serve`, a black hole) ends, for a caller
// without a deadline, with a typed error after the bounded reconnects
// (each open bounded by IdleTimeout), never hangs; the turn is left in
// doubt (spec/runtime.md §5), not cancelled. The client once set its
// idle bound only after the headers arrived, so this stream hung.
func TestStreamOpenOnASilentServerEndsTyped(t *testing.T) {
	base, _ := serveScripted(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	var silent atomic.Bool
	var opens, cancels atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if silent.Load() && strings.HasSuffix(r.URL.Path, "/turns") {
			opens.Add(1)
			// Read the whole request, so the server notices the client
			// leaving (its context ends), then never answer.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		if strings.HasSuffix(r.URL.Path, "/cancel") {
			cancels.Add(1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	const idle = time.Second
	p, err := remote.New(remote.Options{BaseURL: ts.URL, Token: serveToken, RetryBackoff: 10 * time.Millisecond, MaxRetries: 2,
		CallTimeout: 5 * time.Second, IdleTimeout: idle})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	env := create(t, ctx, p)
	cancel()
	silent.Store(true)
	// A context without a deadline, cancelled only when the test ends
	// (before the proxy closes), so a hung stream cannot outlive it.
	sctx, scancel := context.WithCancel(context.Background())
	t.Cleanup(scancel)
	done := make(chan error, 1)
	go func() {
		prompt := "hi"
		var last error
		for _, err := range env.Stream(sctx, &contract.TurnInput{Prompt: &prompt}) {
			last = err
		}
		done <- last
	}()
	select {
	case err := <-done:
		var te *remote.TimeoutError
		if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) || te.After != idle {
			t.Fatalf("the stream ended with %v, want a *remote.TimeoutError after %v", err, idle)
		}
		if n := opens.Load(); n != 3 {
			t.Errorf("the stream was opened %d times, want 3 (MaxRetries 2)", n)
		}
		if n := cancels.Load(); n != 0 {
			t.Errorf("the turn in doubt was cancelled %d times, want it left running", n)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("the stream still blocked after 45s on a server that never answered (idle 1s, 2 retries)")
	}
}
