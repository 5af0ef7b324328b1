package sidecar_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/store"
)

// startAgentrtServe runs `agentrt serve --provider scripted` with the
// test script on a free loopback port and returns its address and its
// log (stderr). The server is interrupted, and must stop gracefully,
// when the test ends.
func startAgentrtServe(t *testing.T, token string) (string, *servetest.Log) {
	t.Helper()
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(testScript), 0o600); err != nil {
		t.Fatal(err)
	}
	return servetest.Serve(t, []string{"AGENTRT_SERVE_TOKEN=" + token}, "--provider", "scripted", "--script", script)
}

// tap is a reverse proxy that keeps every answer body it relays, by
// request path, so a test sees exactly the bytes a client received.
type tap struct {
	mu     sync.Mutex
	bodies map[string][]byte
	paths  []string
}

func newTap(t *testing.T, target string) (*tap, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{bodies: map[string][]byte{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // SSE frames go on at once
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &tapBody{ReadCloser: resp.Body, tap: tp, path: resp.Request.URL.Path}
		return nil
	}
	ts := httptest.NewServer(rp)
	t.Cleanup(ts.Close)
	return tp, ts.URL
}

type tapBody struct {
	io.ReadCloser
	tap  *tap
	path string
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.tap.mu.Lock()
	if _, seen := b.tap.bodies[b.path]; !seen {
		b.tap.paths = append(b.tap.paths, b.path)
	}
	b.tap.bodies[b.path] = append(b.tap.bodies[b.path], p[:n]...)
	b.tap.mu.Unlock()
	return n, err
}

// received is every body relayed for a path matching match.
func (tp *tap) received(match func(path string) bool) (bodies [][]byte, paths []string) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for _, p := range tp.paths {
		if match(p) {
			bodies, paths = append(bodies, tp.bodies[p]), append(paths, p)
		}
	}
	return bodies, paths
}

const servedWriter = `{"name":"writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/writer"}}`

// NSO-02 end to end: a run the kernel executes through providers/remote
// against a real `agentrt serve` process records the native session the
// served scripted provider observed — its session of the environment's
// first turn — in the run's record, as an in-process provider's run
// does, on SQLite and on PostgreSQL. NSO-03: the public SSE stream the
// client received (seen through a tap in front of the server) never
// carries the observation nor the id, the run's events never hold it,
// and neither the server's log nor the client's names it.
func TestServedRunRecordsTheNativeSessionNSO02(t *testing.T) {
	const token = "native-session-serve-token"
	forEachStore(t, func(t *testing.T, open func(t *testing.T) store.Store) {
		base, serverLog := startAgentrtServe(t, token) // builds agentrt first: the deadline is the run's own
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		tp, tapped := newTap(t, base)
		clientLog := &syncBuffer{}
		rp, err := remote.New(remote.Options{BaseURL: tapped, Token: token, RetryBackoff: 10 * time.Millisecond,
			Logger: slog.New(slog.NewJSONHandler(clientLog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		prof, err := profile.Parse([]byte(servedWriter))
		if err != nil {
			t.Fatal(err)
		}
		st := open(t)
		res, err := kernel.Execute(ctx, kernel.Request{Profile: prof, Task: "write a note", Provider: rp, Store: st, RunID: "served-native",
			Check: func(context.Context, kernel.Outcome) (kernel.Verdict, error) {
				return kernel.Verdict{Passed: true}, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != store.StatusCompleted || res.EnvironmentID == "" {
			t.Fatalf("the run: %+v", res)
		}
		want := scriptedNative(res.EnvironmentID, 1).NativeSessionID
		if res.NativeSessionID != want {
			t.Errorf("the run's native session %q, want the served provider's %q", res.NativeSessionID, want)
		}
		rec, err := kernel.ReadRun(ctx, st, "served-native")
		if err != nil || rec.Exact == nil {
			t.Fatalf("record %+v (%v)", rec, err)
		}
		if rec.Exact.NativeSessionID != want {
			t.Errorf("the run record's native session %q, want %q", rec.Exact.NativeSessionID, want)
		}

		events, err := st.Events(ctx, "served-native", "", 0)
		if err != nil || len(events) == 0 {
			t.Fatalf("%d events (%v)", len(events), err)
		}
		for _, e := range events {
			if body := string(canonjson.Marshal(e.Body)); e.Type == contract.EventTypeNativeSessionObserved || strings.Contains(body, want) {
				t.Errorf("the run's public event %s holds the native session: %s", e.Type, body)
			}
		}
		streams, paths := tp.received(func(p string) bool { return strings.HasSuffix(p, "/turns") })
		if len(streams) != 1 {
			t.Fatalf("%d turn streams relayed (%v), want 1", len(streams), paths)
		}
		sse := streams[0]
		if !bytes.Contains(sse, []byte("event: "+wire.EventEnd)) {
			t.Errorf("the relayed stream has no end frame:\n%s", sse)
		}
		if bytes.Contains(sse, []byte(contract.EventTypeNativeSessionObserved)) || bytes.Contains(sse, []byte(want)) {
			t.Errorf("the public SSE stream carries the native session:\n%s", sse)
		}
		answers, _ := tp.received(func(p string) bool { return strings.HasSuffix(p, "/native-session") })
		if len(answers) != 1 || !bytes.Contains(answers[0], []byte(want)) {
			t.Errorf("the private route was read %d times (%q), want once with the id", len(answers), answers)
		}
		for name, log := range map[string]string{"server": serverLog.String(), "client": clientLog.String()} {
			if strings.Contains(log, want) {
				t.Errorf("the %s's log names the native session:\n%s", name, log)
			}
			if strings.Contains(log, token) {
				t.Errorf("the %s's log carries the token", name)
			}
		}
	})
}
