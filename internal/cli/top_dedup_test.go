package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A graph run recorded in the run store and journaled in the workspace's
// run directory is one run: agentrt top --db DB WORKSPACE shows it once,
// as the run-dir row (its workers, totals and tail), not once per
// source.
func TestTopShowsAGraphRunOnce(t *testing.T) {
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "graph", reviewGraph, "--task", "Make the login tests pass.", "--directives", directives,
		"--workspace", ws, "--run-id", "login", "--db", db)
	if code != 0 {
		t.Fatalf("graph: exit %d\n%s%s", code, out, errOut)
	}
	frame, errOut, code := run(t, "", "top", "--once", "--no-color", "--db", db, ws)
	if code != 0 {
		t.Fatalf("top: exit %d\n%s", code, errOut)
	}
	var rows []string
	for line := range strings.SplitSeq(frame, "\n") {
		if f := strings.Fields(line); len(f) > 1 && (f[0] == "login" || f[1] == "login") {
			rows = append(rows, line)
		}
	}
	if len(rows) != 1 {
		t.Fatalf("top shows run login in %d rows, want 1:\n%s", len(rows), frame)
	}
	if !strings.Contains(rows[0], "winner") || !strings.Contains(frame, "login:s1") {
		t.Errorf("the run's one row is not its run directory's (status winner, its workers):\n%s", frame)
	}
}
