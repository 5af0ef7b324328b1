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

// A --resume aimed at a directory that exists but holds nothing of a run
// (a project directory, a typo that happens to exist) is refused as a
// missing one is, instead of starting a new run and writing its journal
// among the directory's files. A directory with a run's traces but no
// journal yet (a process killed between creating blobs/ and its lock)
// is still resumed: TestSuperviseResumeOfAnUnstartedRunStartsIt. RES-03.
func TestResumeOfADirectoryHoldingNoRunIsRefused(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"supervise", "graph"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("my project\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			args := startArgs(command, "--task", "x", "--run-dir", dir, "--resume", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
			out, errOut, code := run(t, "", args...)
			refusedAsUsage(t, out, errOut, code, dir, "holds no run", "drop --resume")
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("the refused resume wrote into %s: %d entries", dir, len(entries))
			}
		})
	}
	t.Run("only blobs", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "blobs"), 0o700); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := run(t, "", "supervise", supManager, "--worker", noteWriter, "--task", "x", "--run-dir", dir, "--resume",
			"--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
		if code != 0 {
			t.Fatalf("exit %d, want 0: a run dir with blobs/ and no journal is a run killed before its first record\n%s%s", code, out, errOut)
		}
	})
}
