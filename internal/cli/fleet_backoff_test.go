package cli_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/store"
)

// TestWorkerBacksOffWhileItsServerIsDown (issue 14): an `agentrt worker`
// process whose remote server (`agentrt serve`) is down hands the run
// back — nothing ran, no environment exists — and waits before trying
// again, longer after each refusal in a row (jittered between half and
// all of --backoff doubled, up to --max-backoff), instead of hammering
// the dead address; once the server is up, the run completes.
func TestWorkerBacksOffWhileItsServerIsDown(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a worker's backoff (about 15s)")
	}
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	// An address where nothing listens: the server is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	// The lease outlasts a refused attempt: on a dead server the remote
	// provider's Name reads the server's capabilities (1.5s of retries)
	// each time the kernel builds the run's record, once after its
	// heartbeat stopped, so a lease under about 5s lapses first and the
	// attempt reads lease-lost instead of refused.
	const base, most = time.Second, 2 * time.Second
	worker := startProc(t, "worker", nil, append([]string{"worker", "--id", "w1", "--provider", "remote", "--base-url", "http://" + addr,
		"--backoff", base.String(), "--max-backoff", most.String(), "--rescue-after", "10s", "--lease", "10s",
		"--poll-interval", "50ms", "--concurrency", "2", "--log-format", "json"}, db...)...)
	out, errOut, code := run(t, "", append([]string{"run", noteWriter, "--task", "write a note", "--enqueue", "--provider", "remote"}, db...)...)
	if code != 0 {
		t.Fatalf("run --enqueue: %d %s", code, errOut)
	}
	runID := strings.TrimSpace(out)
	f := openTestFleet(t, conn, schema)

	// Wait for four refusals in a row.
	var r *fleet.Run
	for deadline := time.Now().Add(90 * time.Second); ; {
		if r, err = f.Get(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		if len(r.Attempts) >= 4 && r.Attempts[3].Status != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d attempts within 90s: %+v\nworker:\n%s", len(r.Attempts), r.Attempts, worker.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Status != store.StatusPending {
		t.Errorf("the run while its server is down: %s; want pending (handed back)", r.Status)
	}
	// Between the end of one refused attempt and the start of the next,
	// the worker waited its backoff: at least half of base·2^(i-1), capped.
	for i, a := range r.Attempts[:4] {
		rec, err := f.Store().GetRun(t.Context(), a.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if a.Status != "released" || !strings.Contains(a.Note, "unreachable") || rec.Status != store.StatusFailed {
			t.Errorf("attempt %d: %+v, its kernel run %s; want handed back as unreachable", i+1, a, rec.Status)
		}
		if env, ok := rec.Doc.Get("environmentId"); ok && env.Str() != "" {
			t.Errorf("attempt %d created environment %s on a server that was down", i+1, env.Str())
		}
		if i == 3 {
			break
		}
		next, err := time.Parse(time.RFC3339Nano, r.Attempts[i+1].StartedAt)
		if err != nil {
			t.Fatal(err)
		}
		want := min(base<<i, most) / 2
		if idle := next.Sub(rec.UpdatedAt); idle < want-50*time.Millisecond {
			t.Errorf("attempt %d started %s after refusal %d ended; want at least %s (backoff)", i+2, idle, i+1, want)
		}
	}

	// The server comes up at that address: the run completes.
	url := make(chan string, 1)
	server := startProc(t, "server", url, "serve", "--listen", addr, "--provider", "scripted")
	select {
	case <-url:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not start:\n%s", server.logs)
	}
	for deadline := time.Now().Add(90 * time.Second); ; {
		if r, err = f.Get(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end within 90s of its server coming up: %+v\nworker:\n%s", r, worker.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered || r.Attempts[len(r.Attempts)-1].Status != string(store.StatusCompleted) {
		t.Errorf("after the server came up: %s, outcome %+v, attempts %+v; want completed by the last attempt", r.Status, r.Outcome, r.Attempts)
	}
	if !strings.Contains(worker.logs.String(), "retry_after") {
		t.Errorf("the worker did not log its backoff:\n%s", worker.logs)
	}
	worker.stop(t)
	server.stop(t)
	t.Logf("%d attempts: %d refused while the server was down, then completed", len(r.Attempts), len(r.Attempts)-1)
}

// Issue 14: a worker whose token `agentrt serve` refuses (401) has not
// run anything, so the run is no worse for it: the worker hands it back
// (never fails it), says its credentials were refused and how to fix
// that (never the token), and backs off as from a server that is down;
// a worker the server accepts then completes the run.
func TestWorkerWithARefusedTokenHandsTheRunBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server and two worker processes")
	}
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	urls := make(chan string, 1)
	server := startProc(t, "server", urls, "serve", "--listen", "127.0.0.1:0", "--provider", "scripted", "--db", ":memory:")
	var base string
	select {
	case base = <-urls:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not start:\n%s", server.logs)
	}
	const wrongToken = "a-token-the-server-refuses"
	workerArgs := func(id string) []string {
		return append([]string{"worker", "--id", id, "--provider", "remote", "--base-url", base, "--backoff", "500ms", "--max-backoff", "1s",
			"--rescue-after", "10s", "--lease", "10s", "--poll-interval", "50ms", "--log-format", "json"}, db...)
	}
	refused := startProcWith(t, "refused", nil, []string{"AGENTRT_SERVE_TOKEN=" + wrongToken}, workerArgs("refused")...)
	out, errOut, code := run(t, "", append([]string{"run", noteWriter, "--task", "write a note", "--enqueue", "--provider", "remote"}, db...)...)
	if code != 0 {
		t.Fatalf("run --enqueue: %d %s", code, errOut)
	}
	runID := strings.TrimSpace(out)
	f := openTestFleet(t, conn, schema)
	var r *fleet.Run
	for deadline := time.Now().Add(90 * time.Second); ; {
		var err error
		if r, err = f.Get(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		if len(r.Attempts) >= 2 && r.Attempts[1].Status != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d attempts within 90s: %+v\nworker:\n%s", len(r.Attempts), r.Attempts, refused.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Status != store.StatusPending {
		t.Errorf("the run its worker's token was refused for: %s; want pending (handed back)", r.Status)
	}
	for i, a := range r.Attempts[:2] {
		if a.Status != "released" || !strings.Contains(a.Note, "refused this worker's credentials (HTTP 401") {
			t.Errorf("attempt %d: %+v; want handed back, saying the credentials were refused", i+1, a)
		}
	}
	refused.stop(t)
	logs := refused.logs.String()
	if !strings.Contains(logs, "give the worker the token the server reads") || strings.Contains(logs, wrongToken) {
		t.Errorf("the refused worker's log does not say what to do, or carries its token:\n%s", logs)
	}

	accepted := startProc(t, "accepted", nil, workerArgs("accepted")...)
	for deadline := time.Now().Add(90 * time.Second); ; {
		var err error
		if r, err = f.Get(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end within 90s of a worker with the right token: %+v\nworker:\n%s", r, accepted.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Status != store.StatusCompleted || r.Outcome == nil || !r.Outcome.Delivered {
		t.Errorf("with the right token: %s, outcome %+v; want completed", r.Status, r.Outcome)
	}
	accepted.stop(t)
	server.stop(t)
}
