package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// agentrt steer and agentrt cancel on a directory that holds no supervised
// run (a typo'd path that happens to exist, a workspace given as RUN) are
// usage errors at once: nothing is written into it and nothing waits
// --wait for a supervisor that cannot be there.
func TestSteerCancelRefuseADirectoryThatHoldsNoRun(t *testing.T) {
	t.Parallel()
	notRun := t.TempDir()
	for name, args := range map[string][]string{
		"steer":         {"steer", notRun, "note", "Be brief.", "--wait", "20s"},
		"steer --json":  {"steer", notRun, "note", "Be brief.", "--json"},
		"cancel":        {"cancel", notRun, "--wait", "20s"},
		"cancel WORKER": {"cancel", notRun, "note", "--json"},
		"supervise steer": {"supervise", "steer", notRun, "note", "--message", "Be brief.",
			"--operation-id", "s1", "--wait", "20s"},
		"supervise cancel": {"supervise", "cancel", notRun, "--operation-id", "c1", "--wait", "20s"},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := run(t, "", args...)
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v: a directory that holds no run is refused at once, not waited on", took)
			}
			if code != 2 || out != "" || !strings.Contains(errOut, "holds no supervised run") ||
				!strings.Contains(errOut, ".agent/supervisor/RUN-ID") {
				t.Errorf("exit %d, want 2, nothing on stdout and why on stderr\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		})
	}
	if ents, err := os.ReadDir(notRun); err != nil || len(ents) != 0 {
		t.Errorf("the directory holds %v (%v), want nothing written into it", ents, err)
	}
}

// agentrt top --run-dir naming no directory is a usage error, as a ROOT
// that is not a directory is, not a frame that exits 0 with an open error
// inside it.
func TestTopRunDirMissingIsUsageError(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "nosuch")
	out, errOut, code := run(t, "", "top", "--run-dir", missing, "--once", "--db", filepath.Join(t.TempDir(), "r.db"))
	if code != 2 || out != "" || !strings.Contains(errOut, "--run-dir") || !strings.Contains(errOut, "not a directory") ||
		strings.Contains(errOut, "no such file or directory") {
		t.Errorf("exit %d, want 2, nothing on stdout and a one-line why\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// agentrt supervise steer given the message as agentrt steer takes it (a
// third argument) says where the message goes instead of cobra's
// "accepts 2 arg(s), received 3".
func TestSuperviseSteerMessageAsArgumentSaysWhere(t *testing.T) {
	t.Parallel()
	out, errOut, code := run(t, "", "supervise", "steer", t.TempDir(), "note", "Be brief.")
	if code != 2 || out != "" || !strings.Contains(errOut, "--message TEXT") || !strings.Contains(errOut, "agentrt steer RUN WORKER MESSAGE") {
		t.Errorf("exit %d, want 2 and where the message goes\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
