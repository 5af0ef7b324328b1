package cli_test

import (
	"path/filepath"
	"testing"
)

// A graph process killed before it wrote its run's first journal record
// leaves no run: the same command with --resume starts it, as agentrt
// supervise --resume does (TestSuperviseResumeOfAnUnstartedRunStartsIt),
// with the journal in the run dir and in the store alike — never a bare
// "store: not found". RES-03.
func TestGraphResumeOfAnUnstartedRunStartsIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		inStore bool
	}{{"file journal", false}, {"sqlite journal in store", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"graph", reviewGraph, "--directives", directives, "--task", "Make the login tests pass.",
				"--run-dir", t.TempDir(), "--run-id", "unstarted", "--db", filepath.Join(t.TempDir(), "runs.db"), "--resume", "--json"}
			if tc.inStore {
				args = append(args, "--journal-in-store", "--lease", "1s")
			}
			out, errOut, code := run(t, "", args...)
			if code != 0 {
				t.Fatalf("--resume of a graph run with no journal yet: exit %d\n%s", code, errOut)
			}
			if got := member(decode(t, out), "kind").Str(); got != "winner" {
				t.Errorf("kind %q, want winner\n%s", got, out)
			}
		})
	}
}
