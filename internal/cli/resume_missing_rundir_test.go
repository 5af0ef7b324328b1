package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refusedAsUsage checks a refusal of a user's mistake: exit 2, nothing on
// stdout (even with --json), one line on stderr holding each of want.
func refusedAsUsage(t *testing.T, out, errOut string, code int, want ...string) {
	t.Helper()
	if code != 2 {
		t.Errorf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing: the run never started", out)
	}
	if n := strings.Count(strings.TrimRight(errOut, "\n"), "\n"); n != 0 {
		t.Errorf("stderr is %d lines, want one:\n%s", n+1, errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
}

// --resume names an earlier run: a --run-dir (or --run-id in the
// workspace) that does not exist holds none, so the command is refused
// naming the directory and the way to a new run, instead of silently
// starting (and paying for) a fresh one. RES-03 (a coordinator that died
// is continued with its run dir; a mistyped one is not a new run).
func TestResumeOfAMissingRunDirIsRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]func(missing, ws, db string) []string{
		"supervise --run-dir": func(missing, _, db string) []string {
			return []string{"supervise", supManager, "--task", "x", "--worker", noteWriter, "--run-dir", missing, "--resume", "--db", db, "--json"}
		},
		"supervise --run-id": func(_, ws, db string) []string {
			return []string{"supervise", supManager, "--task", "x", "--worker", noteWriter, "--workspace", ws, "--run-id", "no-such-run", "--resume", "--db", db, "--json"}
		},
		"graph --run-dir": func(missing, _, db string) []string {
			return []string{"graph", reviewGraph, "--directives", directives, "--task", "x", "--run-dir", missing, "--resume", "--db", db, "--json"}
		},
		"graph --run-id": func(_, ws, db string) []string {
			return []string{"graph", reviewGraph, "--directives", directives, "--task", "x", "--workspace", ws, "--run-id", "no-such-run", "--resume", "--db", db, "--json"}
		},
		// A journal kept in the store is resumed from any machine, where
		// the run dir need not exist; a run id the store does not hold
		// either names no run.
		"supervise --journal-in-store": func(_, ws, db string) []string {
			return []string{"supervise", supManager, "--task", "x", "--worker", noteWriter, "--workspace", ws, "--run-id", "no-such-run", "--journal-in-store", "--resume", "--db", db, "--json"}
		},
		"graph --journal-in-store": func(_, ws, db string) []string {
			return []string{"graph", reviewGraph, "--directives", directives, "--task", "x", "--workspace", ws, "--run-id", "no-such-run", "--journal-in-store", "--resume", "--db", db, "--json"}
		},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			missing, ws := filepath.Join(t.TempDir(), "no-such-run"), t.TempDir()
			out, errOut, code := run(t, "", args(missing, ws, filepath.Join(t.TempDir(), "runs.db"))...)
			refusedAsUsage(t, out, errOut, code, "no-such-run", "does not exist", "drop --resume")
			for _, dir := range []string{missing, filepath.Join(ws, ".agent", "supervisor", "no-such-run")} {
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("the refused resume made %s (%v)", dir, err)
				}
			}
		})
	}
}
