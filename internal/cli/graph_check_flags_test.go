package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// §3.7's graph has a deliverable {check(out) → bool, describe?}: a
// check is code, which a JSON file cannot hold, so a graph file with a
// deliverable member is refused (it is not silently dropped), and the
// refusal says where agentrt graph takes the check from.
func TestGraphFileDeliverableSaysWhereTheCheckGoes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(reviewGraph)
	if err != nil {
		t.Fatal(err)
	}
	var g map[string]any
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	g["deliverable"] = map[string]any{"describe": "a patch whose tests pass"}
	with, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "graph.json")
	if err := os.WriteFile(file, with, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "", "graph", file, "--directives", directives, "--task", "x", "--run-dir", t.TempDir(),
		"--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1 (an invalid graph)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	for _, w := range []string{"deliverable", "--expect"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
}

// agentrt graph takes its deliverable's check as agentrt supervise does:
// --expect TEXT and/or --check-cmd CMD (the result on stdin, exit 0
// passes), so the check a graph file cannot hold has a place. A result
// the command refuses is not delivered (no winner, exit 1); an empty
// command is refused before the run. §3.7 (deliverable mandatory).
func TestGraphCheckCmdJudgesTheResult(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, check string
		code        int
		kind        string
	}{
		{"passes", "grep -q 'Done'", 0, "winner"},
		{"refuses", "grep -q 'never in any result'", 1, "no-winner"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := run(t, "", "graph", reviewGraph, "--directives", directives, "--task", "Make the login tests pass.",
				"--check-cmd", tc.check, "--run-dir", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			if got := member(decode(t, out), "kind").Str(); got != tc.kind {
				t.Errorf("kind %q, want %q\n%s", got, tc.kind, out)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		out, errOut, code := run(t, "", "graph", reviewGraph, "--directives", directives, "--task", "x", "--check-cmd", " ",
			"--run-dir", t.TempDir(), "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
		refusedAsUsage(t, out, errOut, code, "--check-cmd is empty")
	})
}
