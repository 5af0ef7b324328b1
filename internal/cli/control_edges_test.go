package cli_test

import (
	"path/filepath"
	"testing"
)

// CL16 item 2: a --resume whose --run-id is not the run its --run-dir
// holds is the flags of another run, the user's mistake about which run
// to continue, as a --resume at the other command's run or at a run
// journaled elsewhere is: a usage error (exit 2) naming the dir and the
// run it holds, nothing on stdout even with --json, nothing written
// into the dir. RES-03 (a resume continues the journaled run with the
// flags that started it), §3.6 "Persistence & resume".
func TestResumeWithAnotherRunIDIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"supervise", "graph"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
			args := []string{"supervise", supManager, "--worker", noteWriter}
			if command == "graph" {
				args = []string{"graph", reviewGraph, "--directives", directives}
			}
			args = append(args, "--task", "Write release notes.", "--run-dir", dir, "--db", db)
			if _, errOut, code := run(t, "", append(args, "--run-id", "first")...); code != 0 {
				t.Fatalf("the first run: exit %d\n%s", code, errOut)
			}
			before := dirContents(t, dir)
			out, errOut, code := run(t, "", append(args, "--run-id", "second", "--resume", "--json")...)
			refusedAsUsage(t, out, errOut, code, dir, `"first"`, `"second"`, "--run-id first")
			checkUnchanged(t, dir, before)
			// A new run under another id in the dir: the same mistake,
			// the same exit status.
			out, errOut, code = run(t, "", append(args, "--run-id", "second", "--json")...)
			refusedAsUsage(t, out, errOut, code, dir, `"first"`, `"second"`, "another --run-dir")
			checkUnchanged(t, dir, before)
		})
	}
}
