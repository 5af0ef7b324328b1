package supervise_test

// Shared scaffolding of the tests that SIGKILL a re-executed test binary
// and resume its run in this process (RES-03, behaviour 46): the journals
// a run is killed over, the child run to its kill, and the resume retried
// while the killed process's lease holds the spawn log.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/profile"
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
