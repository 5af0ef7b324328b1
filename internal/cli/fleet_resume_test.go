package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// TestFleetResumesADeadWorkersRemoteTurn (issue 14; spec/runtime.md §5,
// "initiating process" died): a worker process executing a run on a
// remote server (`agentrt serve`) is SIGKILLed mid-turn; the server, and
// the environment and turn the dead worker made there, live on. The
// worker that takes the run over re-attaches to that environment and
// turn instead of running the work again: its attempt records the same
// environment and the same events (the server replays the turn, then
// goes on with it), and the run completes once.
func TestFleetResumesADeadWorkersRemoteTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a worker and waits for River's rescuer (about 30s)")
	}
	// Serial: its surviving worker holds a 2 s lease, which a busy
	// machine running parallel tests can starve (as TestFleetEndToEnd).
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "script.json", e2eScript)
	url := make(chan string, 1)
	server := startProc(t, "server", url, "serve", "--listen", "127.0.0.1:0", "--provider", "scripted", "--script", script)
	var base string
	select {
	case base = <-url:
	case <-time.After(time.Minute):
		t.Fatalf("the server did not start:\n%s", server.logs)
	}
	workerArgs := func(id string) []string {
		return append([]string{"worker", "--id", id, "--provider", "remote", "--base-url", base, "--lease", "2s", "--rescue-after", "2s",
			"--poll-interval", "100ms", "--log-format", "json"}, db...)
	}
	victim := startProc(t, "victim", nil, workerArgs("victim")...)
	out, errOut, code := run(t, "", append([]string{"run", noteWriter, "--task", "slow note", "--enqueue", "--provider", "remote"}, db...)...)
	if code != 0 {
		t.Fatalf("run --enqueue: %d %s", code, errOut)
	}
	runID := strings.TrimSpace(out)
	f := openTestFleet(t, conn, schema)
	first := runID + ".g1"

	// Kill the victim mid-turn: its attempt recorded the turn's first
	// text, and the turn has 3s to go.
	for deadline := time.Now().Add(time.Minute); ; {
		evs, err := f.Store().Events(t.Context(), first, "", 0)
		if err == nil && len(evs) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the victim's attempt never began its turn:\n%s", victim.logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim.kill(t)
	before, err := f.Store().Events(t.Context(), first, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	survivor := startProc(t, "survivor", nil, workerArgs("survivor")...)

	var r *fleet.Run
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if r, err = f.Get(t.Context(), runID); err != nil {
			t.Fatal(err)
		}
		if r.Status.Terminal() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end within 2 minutes of the kill: %+v\nsurvivor:\n%s\nserver:\n%s", r, survivor.logs, server.logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.Status != store.StatusCompleted || len(r.Attempts) != 2 || r.Outcome == nil || !r.Outcome.Delivered {
		t.Fatalf("run %s, attempts %+v, outcome %+v; want completed by a second attempt\nsurvivor:\n%s", r.Status, r.Attempts, r.Outcome, survivor.logs)
	}
	second := r.Attempts[1]
	if second.Worker != "survivor" || !strings.Contains(second.Note, "resumed environment") {
		t.Errorf("the takeover attempt %+v; want the survivor's, resuming the victim's environment", second)
	}
	dead, err := kernel.ReadRun(t.Context(), f.Store(), first)
	if err != nil {
		t.Fatal(err)
	}
	took, err := kernel.ReadRun(t.Context(), f.Store(), second.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if dead.Run.Status != store.StatusInterrupted || took.Exact == nil || dead.Exact == nil || took.Exact.EnvironmentID == "" || took.Exact.EnvironmentID != dead.Exact.EnvironmentID {
		t.Fatalf("the victim's attempt %s in environment %v, the survivor's in %v; want the same environment, re-attached", dead.Run.Status, dead.Exact, took.Exact)
	}
	// The same turn: the server replayed the events the victim had seen
	// (same ids, same order), then the rest of the turn.
	after, err := f.Store().Events(t.Context(), second.RunID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) <= len(before) {
		t.Fatalf("the survivor's attempt recorded %d events, the victim's %d; want the whole turn", len(after), len(before))
	}
	for i, e := range before {
		if after[i].ID != e.ID || after[i].Type != e.Type {
			t.Errorf("event %d: the victim saw %s %s, the survivor %s %s; want the same turn replayed, not run again", i+1, e.ID, e.Type, after[i].ID, after[i].Type)
		}
	}
	if !strings.Contains(r.Outcome.Text, "one two done") {
		t.Errorf("outcome text %q; want the slow turn's whole text", r.Outcome.Text)
	}
	survivor.stop(t)
	server.stop(t)
}
