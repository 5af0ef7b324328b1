package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/providers/remote"
)

// heldScript's turn says "working", then "done" four seconds later: a
// turn that is still live when its reader leaves it.
const heldScript = `{"turns":[{"repeat":true,"steps":[{"text":"working"},{"delayMs":4000},{"text":"done"}]}]}`

// streamCutter stands between a client and a real `agentrt serve`. While
// cutting, a turn stream is cut right after its first text event and every
// later stream connection is dropped (a broken transport the client's
// reconnects cannot get through); every other call — the turn cancel
// above all — passes, so a cancel the client sends reaches the server.
type streamCutter struct {
	URL     string
	cutting atomic.Bool
	cancels atomic.Int32
	// relayed: a stream relayed its first event; later ones are dropped.
	relayed atomic.Bool
}

func newStreamCutter(t *testing.T, base string) *streamCutter {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c := &streamCutter{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/cancel") {
			c.cancels.Add(1)
		}
		stream := r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/turns")
		if !stream || !c.cutting.Load() {
			rp.ServeHTTP(w, r)
			return
		}
		if c.relayed.Load() {
			panic(http.ErrAbortHandler) // the connection drops
		}
		// Until a stream relayed its first event, each one is relayed
		// (a stream that broke before its event on a loaded machine is
		// not the cut under test), and cut after that event.
		ctx, cut := context.WithCancel(r.Context())
		defer cut()
		rp.ServeHTTP(&cutAfterEvent{ResponseWriter: w, cut: cut, relayed: &c.relayed}, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// cutAfterEvent relays a stream and cuts its upstream once the whole
// frame of the turn's first text went through (a frame may come in
// pieces, and other events may come before it): the proxy then
// drops the client's connection. The cut waits a moment after that frame
// (or comes with the next bytes, which are not relayed), so that the
// client reads the event before its connection is torn down: a connection
// aborted at once may take the unread frame with it.
type cutAfterEvent struct {
	http.ResponseWriter
	cut     context.CancelFunc
	sent    []byte // what went through, up to the first whole event
	cutting bool
	relayed *atomic.Bool
}

func (c *cutAfterEvent) Write(b []byte) (int, error) {
	if c.cutting {
		c.cut()
		return 0, context.Canceled
	}
	n, err := c.ResponseWriter.Write(b)
	c.Flush()
	if len(c.sent) < 1<<20 {
		c.sent = append(c.sent, b...)
	}
	// The event the test waits for is the turn's first text: a stream
	// may open with other events (a frame of its own each), and a cut
	// after one of those, with the text's bytes next, took the text
	// with it (seen: texts [] after three lost reconnects).
	if i := bytes.Index(c.sent, []byte(`"working"`)); i >= 0 && bytes.Contains(c.sent[i:], []byte("\n\n")) {
		c.cutting = true
		c.relayed.Store(true)
		time.AfterFunc(200*time.Millisecond, c.cut)
	}
	return n, err
}

func (c *cutAfterEvent) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// The rule of leaving a live turn (providers/remote leave; spec/runtime.md
// §5: work in doubt is settled, never killed by a process that merely
// lost sight of it), through a real `agentrt serve`: a stream lost for
// good (the transport broke past the reconnects) and a caller whose
// context ended because it lost its run's lease (contract.ErrLeaseLost)
// send no cancel, and the server's turn goes on: re-attaching to it (the
// same turn id, RES-01) replays it and follows it to its completed end.
// A caller that cancels its context, or stops reading, still cancels the
// turn: re-attaching finds it ended cancelled.
func TestLeavingALiveTurnCancelsOnlyWhenMeant(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(heldScript), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := servetest.Serve(t, []string{"AGENTRT_SERVE_TOKEN=" + serveToken}, "--provider", "scripted", "--script", script)
	for _, tc := range []struct {
		name string
		// cut breaks the transport after the first event.
		cut bool
		// leave ends the reading after the first event: cancel ends ctx
		// with its cause, stop stops reading.
		cause error
		stop  bool
		// wantCancel: the client sends the server a cancel, and the turn
		// ends cancelled; otherwise it completes.
		wantCancel bool
	}{
		{name: "transport broken", cut: true},
		{name: "lease lost", cause: fmt.Errorf("fleet: %w", contract.ErrLeaseLost)},
		{name: "caller cancelled", cause: context.Canceled, wantCancel: true},
		{name: "reader walked away", stop: true, wantCancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			deadline, stop := context.WithTimeout(context.Background(), 2*time.Minute)
			defer stop()
			proxy := newStreamCutter(t, base)
			p, err := remote.New(remote.Options{BaseURL: proxy.URL, Token: serveToken, MaxRetries: 2, RetryBackoff: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			env := create(t, deadline, p)
			proxy.cutting.Store(tc.cut)
			ctx, cancel := context.WithCancelCause(deadline)
			defer cancel(nil)
			prompt, turn := "hold", "turn-"+strings.ReplaceAll(tc.name, " ", "-")
			in := &contract.TurnInput{Prompt: &prompt, TurnID: &turn}
			var texts []string
			var streamErr error
			for ev, err := range env.Stream(ctx, in) {
				if err != nil {
					streamErr = err
					break
				}
				if d := delta(ev); d != "" {
					texts = append(texts, d)
					if tc.stop {
						break
					}
					if tc.cause != nil {
						cancel(tc.cause)
					}
				}
			}
			if strings.Join(texts, "|") != "working" {
				t.Fatalf("texts %q (stream error %v); want the turn's first text only", texts, streamErr)
			}
			if tc.cut && (streamErr == nil || errors.Is(streamErr, context.Canceled)) {
				t.Fatalf("the cut stream ended with %v; want the client's giving up", streamErr)
			}
			if n := proxy.cancels.Load(); (n > 0) != tc.wantCancel {
				t.Fatalf("the client sent %d cancels; want a cancel: %v", n, tc.wantCancel)
			}

			// Re-attach from another client, straight to the server, as a
			// recovering process would.
			direct, err := remote.New(remote.Options{BaseURL: base, Token: serveToken})
			if err != nil {
				t.Fatal(err)
			}
			again, err := direct.Get(deadline, env.ID())
			if err != nil || again == nil {
				t.Fatalf("the environment after the client left its turn: %v, %v", again, err)
			}
			var kind contract.TerminalKind
			texts = texts[:0]
			for ev, err := range again.Stream(deadline, in) {
				if err != nil {
					t.Fatalf("re-attaching to the turn: %v", err)
				}
				if d := delta(ev); d != "" {
					texts = append(texts, d)
				}
				if k, ok := contract.EnvironmentEventTerminal(ev); ok {
					kind = k
					break
				}
			}
			want, wantTexts := contract.TerminalCompleted, "working|done"
			if tc.wantCancel {
				want, wantTexts = contract.TerminalCancelled, "working"
			}
			if kind != want || strings.Join(texts, "|") != wantTexts {
				t.Errorf("the re-attached turn ended %q with texts %q; want %q with %q", kind, texts, want, wantTexts)
			}
		})
	}
}

// delta is an event's text delta, "" when it has none.
func delta(ev contract.EnvironmentEvent) string {
	if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
		return *n.MessagePartUpdated.Delta
	}
	return ""
}

// A turn left running in doubt lives on the server only while someone
// reads it or for `agentrt serve --abandon-after` unread: a server with
// --abandon-after 1s cancels a turn whose only client lost its lease and
// left, and the client that re-attaches later finds it ended cancelled
// (with the default, two minutes, TestLeavingALiveTurnCancelsOnlyWhenMeant
// re-attaches to it live).
func TestServeAbandonAfterCancelsAnUnreadTurn(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"repeat":true,"steps":[{"text":"working"},{"delayMs":60000},{"text":"done"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	base, _ := servetest.Serve(t, []string{"AGENTRT_SERVE_TOKEN=" + serveToken}, "--provider", "scripted", "--script", script, "--abandon-after", "1s")
	deadline, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	p, err := remote.New(remote.Options{BaseURL: base, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	env := create(t, deadline, p)
	ctx, cancel := context.WithCancelCause(deadline)
	defer cancel(nil)
	prompt, turn := "hold", "turn-abandoned"
	in := &contract.TurnInput{Prompt: &prompt, TurnID: &turn}
	for ev, err := range env.Stream(ctx, in) {
		if err != nil {
			break
		}
		if delta(ev) != "" {
			cancel(fmt.Errorf("test: %w", contract.ErrLeaseLost))
		}
	}
	time.Sleep(5 * time.Second) // well past --abandon-after, far short of the turn
	follow, stopFollow := context.WithTimeout(deadline, 30*time.Second)
	defer stopFollow()
	var kind contract.TerminalKind
	for ev, err := range env.Stream(follow, in) {
		if err != nil {
			t.Fatalf("re-attaching to the abandoned turn: %v", err)
		}
		if k, ok := contract.EnvironmentEventTerminal(ev); ok {
			kind = k
			break
		}
	}
	if kind != contract.TerminalCancelled {
		t.Errorf("the turn nobody read for 5s on a server abandoning after 1s ended %q; want cancelled", kind)
	}
}
