package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// A supervise run directory given where a run id goes (runs show, runs
// events) is not in the store; the failure says where that run is shown
// instead of only "no run in the store".
func TestRunsGivenARunDirSayWhereItIsShown(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runDir, supervise.SpawnJournalFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "runs.db")
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, args := range [][]string{{"runs", "show", runDir}, {"runs", "events", runDir}} {
		_, errOut, code := run(t, "", append(args, "--db", db)...)
		if code != 1 || !strings.Contains(errOut, "is a supervise run directory") || !strings.Contains(errOut, "agentrt top --once --run-dir "+runDir) {
			t.Errorf("agentrt %s: exit %d, stderr %q; want 1 and where the run is shown", strings.Join(args, " "), code, errOut)
		}
	}
	// Any other id keeps the plain answer.
	if _, errOut, code := run(t, "", "runs", "show", "nope", "--db", db); code != 1 || !strings.Contains(errOut, `no run "nope" in the store (agentrt runs list`) {
		t.Errorf("runs show nope: exit %d, stderr %q", code, errOut)
	}
}
