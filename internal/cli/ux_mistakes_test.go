package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A user's mistakes on supervise, steer, cancel and top are refused before
// anything runs, as one line on stderr that says what to do, exit 2 (a
// usage error), and nothing on stdout even with --json (as agentrt run
// --json refuses a missing profile).
func TestSuperviseMistakesSayWhatToDo(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	base := func(extra ...string) []string {
		return append([]string{"supervise", supManager, "--task", "x", "--worker", noteWriter, "--run-dir", t.TempDir(), "--db", db, "--json"}, extra...)
	}
	cases := map[string]struct {
		args     []string
		want     []string // each in stderr
		mustNot  []string // none in stderr
		wantCode int
	}{
		// A worker profile given as the manager: say what a manager
		// profile is and where one is, not the router brain's internals.
		"worker profile as manager": {
			args:    []string{"supervise", noteWriter, "--task", "x", "--worker", noteWriter, "--run-dir", t.TempDir(), "--db", db, "--json"},
			want:    []string{"is not a manager profile", "read_file", "agent_runtime_coordination_", "examples/profiles/delegation-manager.json"},
			mustNot: []string{"router brain", "invalid options"},
		},
		// A value of the wrong type for a flag: which flag, what it takes,
		// no Go parser's error text.
		"--max-live abc": {
			args:    base("--max-live", "abc"),
			want:    []string{`--max-live`, `"abc"`, "whole number", "agentrt supervise --help"},
			mustNot: []string{"strconv", "ParseInt", "invalid syntax"},
		},
		// A whole number too large for its flag: say it is too large,
		// not that it is no whole number.
		"--max-live out of range": {
			args:    base("--max-live", "99999999999999999999"),
			want:    []string{`--max-live`, `"99999999999999999999"`, "out of range"},
			mustNot: []string{"must be a whole number", "strconv", "ParseInt"},
		},
		"--budget-usd out of range": {
			args:    base("--budget-usd", "1e999"),
			want:    []string{`--budget-usd`, `"1e999"`, "out of range"},
			mustNot: []string{"must be a number", "strconv", "ParseFloat"},
		},
		"--check-timeout soon": {
			args:    base("--check-timeout", "soon"),
			want:    []string{`--check-timeout`, `"soon"`, "duration", "30s"},
			mustNot: []string{"time: invalid duration"},
		},
		// A checker that is not installed (or mistyped): refused before
		// a worker spends anything, not every result judged "exited 127".
		"--check-cmd not installed": {
			args:    base("--check-cmd", "agentrt-no-such-checker --strict"),
			want:    []string{"--check-cmd", `"agentrt-no-such-checker"`, "cannot find", "PATH"},
			mustNot: []string{"exited 127"},
		},
		// WORKER=PROVIDER without its =PROVIDER: say so, not "unknown
		// provider" of a worker's name.
		"--worker-provider WORKER alone": {
			args:    base("--worker-provider", "note-writer"),
			want:    []string{`--worker-provider note-writer names worker "note-writer" but no provider`, "note-writer=PROVIDER"},
			mustNot: []string{"unknown provider"},
		},
		"--budget-usd lots": {
			args:    base("--budget-usd", "lots"),
			want:    []string{`--budget-usd`, `"lots"`, "number"},
			mustNot: []string{"strconv", "ParseFloat"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := run(t, "", tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing: the run never started", out)
			}
			if n := strings.Count(strings.TrimRight(errOut, "\n"), "\n"); n != 0 {
				t.Errorf("stderr is %d lines, want one:\n%s", n+1, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			for _, w := range tc.mustNot {
				if strings.Contains(errOut, w) {
					t.Errorf("stderr has %q:\n%s", w, errOut)
				}
			}
		})
	}
}
