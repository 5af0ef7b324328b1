package supervise_test

// Shared scaffolding of the tests that SIGKILL a re-executed test binary
// and resume its run in this process (RES-03, behaviour 46): the journals
// a run is killed over, the child run to its kill, and the resume retried
// while the killed process's lease holds the spawn log.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// killJournal names a journal a killed run can keep its records in, and
// makes its spec as openJournalStore and the children (finishedJournal)
// read it: the run dir's file, SQLite or PostgreSQL.
type killJournal struct {
	name string
	spec func(t *testing.T) string
}

// killJournals are the journals every kill-and-resume test runs over.
var killJournals = []killJournal{
	{"file", func(*testing.T) string { return "file" }},
	{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "runs.db") }},
	{"postgres", func(t *testing.T) string { return "postgres:" + pgtest.Schema(t) }},
}

// runChildUntilKilled re-executes the test binary with env added to this
// one's and waits for it under ctx; it fails the test unless the child
// ended by SIGKILL (killed itself at its kill point). where completes the
// failure's "the child was not killed…" (e.g. " mid-tree").
func runChildUntilKilled(t *testing.T, ctx context.Context, where string, env ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed%s (%v); stderr:\n%s", where, err, stderr.String())
	}
}

// killThenResume runs the child env names (set to "1"), on a fresh run
// dir and journal j, until its SIGKILL (where: see runChildUntilKilled),
// then resumes its run in this process with the options opts makes for
// that run dir — j's store, when it has one, as their spawn store with
// the shortest lease — and returns the resumed run's result; it fails
// the test when the resume fails. The whole is bounded by three minutes.
func killThenResume(t *testing.T, j killJournal, where, env string, manager *profile.Profile, opts func(dir string) (supervise.Options, error)) supervise.SupervisedResult {
	t.Helper()
	spec, dir := j.spec(t), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runChildUntilKilled(t, ctx, where, env+"=1", childDir+"="+dir, finishedJournal+"="+spec)
	st, closeStore, err := openJournalStore(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	o, err := opts(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st != nil {
		o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	}
	got, err := superviseWhileHeld(ctx, time.Time{}, manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// superviseWhileHeld runs Supervise(ctx, manager, task, o) again, 100 ms
// apart, for as long as it is refused ErrSpawnLogHeld — held only while
// the killed process's lease lasts — and ctx lives and deadline (when
// not zero) has not passed; it returns the last run's result.
func superviseWhileHeld(ctx context.Context, deadline time.Time, manager *profile.Profile, task string, o supervise.Options) (supervise.SupervisedResult, error) {
	for {
		res, err := supervise.Supervise(ctx, manager, task, o)
		if !errors.Is(err, supervise.ErrSpawnLogHeld) || ctx.Err() != nil || !deadline.IsZero() && time.Now().After(deadline) {
			return res, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// superviseTakenOver runs Supervise(manager, o) on journal (o's spawn
// store), waits up to a minute for started (what names the worker or
// turn that closes it, for failures), then takes the journal over as
// another process would (the next generation, another owner) and fails
// the test unless Supervise ends within a minute with ErrSpawnLogLost.
func superviseTakenOver(t *testing.T, manager *profile.Profile, o supervise.Options, journal store.Store, started <-chan struct{}, what string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := supervise.Supervise(context.Background(), manager, "t", o)
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Supervise returned before %s started: %v", what, err)
	case <-time.After(time.Minute):
		t.Fatalf("%s never started", what)
	}
	// Another process takes the journal over: the next generation.
	if _, err := journal.UpdateRun(context.Background(), "run1", func(r *store.Run) error {
		r.Generation++
		r.Owner = "successor"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("Supervise still runs a minute after its journal was taken over")
	}
	if !errors.Is(err, supervise.ErrSpawnLogLost) {
		t.Fatalf("Supervise: %v; want ErrSpawnLogLost", err)
	}
}

// cutJournalAtTranscript truncates the run dir dir's spawn journal at the
// first transcript record of node that match accepts (match sees node's
// transcript records in journal order): keeping that record when keep,
// as a process that died right after its append, or not, as one that
// died before it landed. Nothing journaled later survives. It reports
// whether a record matched (the journal is left whole when none did).
func cutJournalAtTranscript(t *testing.T, dir string, node supervise.NodeID, keep bool, match func(supervise.Record) bool) bool {
	t.Helper()
	path := filepath.Join(dir, supervise.SpawnJournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i, line := range lines {
		var r supervise.Record
		if json.Unmarshal(line, &r) != nil || r.Kind != supervise.KindTranscript || r.Node != node || !match(r) {
			continue
		}
		n := i
		if keep {
			n++
		}
		if err := os.WriteFile(path, bytes.Join(lines[:n], nil), 0o600); err != nil {
			t.Fatal(err)
		}
		return true
	}
	return false
}

// runDirRecordsOfKind are the run dir dir's journaled records of kind,
// in journal order.
func runDirRecordsOfKind(t *testing.T, dir, kind string) []supervise.Record {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []supervise.Record
	for _, r := range recs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}
