package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/store"
)

// blipProxy stands between a worker and a live `agentrt serve`: while it
// is down, every connection is dropped, and the streams in flight when it
// went down are cut (a network blip; the server and its turns live on).
// With streamsOnly, only turn streams are dropped and cut: every other
// call (a turn cancel above all) still reaches the server.
type blipProxy struct {
	URL         string
	streamsOnly bool
	mu          sync.Mutex
	// down: connections are dropped; cuts end the requests in flight.
	down bool
	cuts map[*http.Request]context.CancelFunc
	// destroys counts environment destroys passed on to the server.
	destroys int
}

func (p *blipProxy) destroyed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.destroys
}

func newBlipProxy(t *testing.T, base string, streamsOnly bool) *blipProxy {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &blipProxy{streamsOnly: streamsOnly, cuts: map[*http.Request]context.CancelFunc{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
		p.mu.Lock()
		if p.down && (stream || !p.streamsOnly) {
			p.mu.Unlock()
			panic(http.ErrAbortHandler) // the connection drops
		}
		if r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/environments/") {
			p.destroys++
		}
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		if stream || !p.streamsOnly {
			p.cuts[r] = cancel
		}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.cuts, r)
			p.mu.Unlock()
			cancel()
		}()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// setDown takes the network down (cutting what is in flight) or up.
func (p *blipProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for _, cut := range p.cuts {
			cut()
		}
	}
}

// recoverScript's turn says "one ", then "two" 5s later, with its usage.
const recoverScript = `{"turns":[{"repeat":true,"steps":[{"text":"one "},{"delayMs":5000},{"text":"two"},{"usage":{"inputTokens":5,"outputTokens":3},"mode":"delta"}]}]}`

// Issue 14 end to end: a real worker process runs a turn on a real
// `agentrt serve` through a network that blips mid-turn for longer than
// the remote provider retries. The fleet ends the run interrupted in
// doubt and keeps the environment (the server still has it, nothing
// destroyed it); `agentrt fleet recover RUN` once the network is back
// follows the turn to its end and settles the run completed with the
// whole turn, never running it again; a second recover changes nothing.
// In "streams cut" only the turn's stream breaks while every other call
// gets through: the worker's remote provider, which gave up on the
// stream, must not cancel the turn the fleet keeps in doubt (spec
// runtime §5), or the recovery would find it cancelled.
func TestFleetRecoverSettlesARunInDoubt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server and a worker process through a network blip")
	}
	for _, tc := range []struct {
		name        string
		streamsOnly bool
	}{{"network down", false}, {"streams cut", true}} {
		t.Run(tc.name, func(t *testing.T) { recoverAfterBlip(t, tc.streamsOnly) })
	}
}

func recoverAfterBlip(t *testing.T, streamsOnly bool) {
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "script.json", recoverScript)
	urls := make(chan string, 1)
	server := startProc(t, "server", urls, "serve", "--listen", "127.0.0.1:0", "--provider", "scripted", "--script", script)
	var base string
	select {
	case base = <-urls:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not start:\n%s", server.logs)
	}
	net := newBlipProxy(t, base, streamsOnly)
	worker := startProc(t, "worker", nil, append([]string{"worker", "--id", "w1", "--provider", "remote", "--base-url", net.URL,
		"--lease", "5s", "--poll-interval", "100ms", "--log-format", "json"}, db...)...)
	out, errOut, code := run(t, "", append([]string{"run", noteWriter, "--task", "a note in doubt", "--enqueue", "--provider", "remote"}, db...)...)
	if code != 0 {
		t.Fatalf("run --enqueue: %d %s", code, errOut)
	}
	runID := strings.TrimSpace(out)
	f := openTestFleet(t, conn, schema)

	// The blip: once the attempt recorded the turn's first text, the
	// network goes down until the fleet gave the run up in doubt.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		evs, err := f.Store().Events(t.Context(), runID+".g1", "", 0)
		if err == nil && len(evs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempt never began its turn:\n%s", worker.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	net.setDown(true)
	var r *fleet.Run
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var err error
		if r, err = f.Get(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end during the blip: %+v\n%s", r, worker.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	net.setDown(false)
	if r.Status != store.StatusInterrupted || r.InDoubt == nil || r.Outcome == nil || !strings.Contains(r.Outcome.Error, "agentrt fleet recover "+runID) {
		t.Fatalf("run after the blip: %s, in doubt %+v, outcome %+v; want interrupted with its environment kept\n%s", r.Status, r.InDoubt, r.Outcome, worker.logs)
	}

	if n := net.destroyed(); n != 0 {
		t.Fatalf("the environment in doubt was destroyed %d times before its recovery", n)
	}
	want := "environment " + r.InDoubt.EnvironmentID + " kept: the turn is in doubt; agentrt fleet recover " + runID + " settles it"
	if out, errOut, code := run(t, "", append([]string{"fleet", "show", runID}, db...)...); code != 0 || !strings.Contains(out, want) {
		t.Errorf("fleet show of the run in doubt: %d\n%s\n%s\nwant it to say %q", code, out, errOut, want)
	}
	rec := append([]string{"fleet", "recover", runID, "--provider", "remote", "--base-url", net.URL, "--wait", "90s"}, db...)
	// A recovering process whose token the server refuses (401) is told
	// so, and what to do, not that the environment's fate is unknown;
	// nothing is recorded: the run stays in doubt, as it was.
	const wrongToken = "not-the-serve-token"
	t.Setenv("AGENTRT_SERVE_TOKEN", wrongToken)
	out, errOut, code = run(t, "", rec...)
	if code != cli.ExitFailed || !strings.Contains(errOut, "refused this process's bearer token (HTTP 401)") ||
		!strings.Contains(errOut, "set $AGENTRT_SERVE_TOKEN") || strings.Contains(errOut, "cannot tell") || strings.Contains(out+errOut, wrongToken) {
		t.Fatalf("fleet recover with a wrong token: %d\n%s\n%s\nwant exit 1 saying the token was refused", code, out, errOut)
	}
	if still, err := f.Get(t.Context(), runID); err != nil || still.Status != store.StatusInterrupted || still.InDoubt == nil || still.Recovery != nil || len(still.Attempts) != 1 {
		t.Fatalf("the run after a refused recover: %+v, %v; want it in doubt, untouched", still, err)
	}
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken) // the recovering process reaches the server as the worker does
	out, errOut, code = run(t, "", rec...)
	if code != 0 || !strings.Contains(out, "settled") || !strings.Contains(out, "status: completed") {
		t.Fatalf("fleet recover: %d\n%s\n%s\nworker:\n%s\nserver:\n%s", code, out, errOut, worker.logs, server.logs)
	}
	got, err := f.Get(t.Context(), runID)
	if err != nil || got.Status != store.StatusCompleted || got.Outcome == nil || got.Outcome.Text != "one two" || !got.Outcome.Delivered {
		t.Fatalf("recovered run: %+v (outcome %+v), %v; want completed with the whole turn", got, got.Outcome, err)
	}
	if len(got.Attempts) != 2 {
		t.Errorf("attempts %+v, want the cut one and the recovery", got.Attempts)
	}
	if n := net.destroyed(); n != 1 {
		t.Errorf("environment destroyed %d times after the settle, want once", n)
	}
	if out, _, code := run(t, "", append([]string{"fleet", "show", runID, "--json"}, db...)...); code != 0 || !strings.Contains(out, `"state": "settled"`) || strings.Contains(out, "kept: the turn") {
		t.Errorf("fleet show --json of the settled run: %d\n%s; want its recovery settled", code, out)
	}
	out, _, code = run(t, "", append(rec, "--json")...)
	if code != 0 || !strings.Contains(out, `"replayed": true`) {
		t.Errorf("second fleet recover: %d\n%s; want the settlement replayed", code, out)
	}
	if again, err := f.Get(t.Context(), runID); err != nil || len(again.Attempts) != 2 {
		t.Errorf("the second recover changed the run: %+v, %v", again, err)
	}
}
