package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphZeroIterationBudgetNamesTheGraphsKey: a graph whose budget
// holds no worker iteration (§2.1 allows maxIterations 0) can run no
// worker; agentrt graph refuses it as the invalid graph it is for this
// command (exit 1, nothing on stdout), naming the graph file's own key
// and JSON pointer. Before, the refusal blamed an option the graph file
// cannot hold: "supervise: invalid options: PerWorker.Iterations (1)
// exceeds Budget.Iterations (0) ... (/perWorker/iterations)". §3.7
// (validation before spend), behaviour 52.
func TestGraphZeroIterationBudgetNamesTheGraphsKey(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "graph", "review.json"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		budget  map[string]any
		pointer string
	}{
		{"spec keys", map[string]any{"maxTokens": 5000, "maxIterations": 0}, "/budget/maxIterations"},
		{"old keys", map[string]any{"tokens": 5000, "iterations": 0}, "/budget/iterations"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var g map[string]any
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatal(err)
			}
			g["budget"] = tc.budget
			b, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "graph.json")
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := run(t, "", "graph", file, "--task", "x", "--json",
				"--directives", filepath.Join("testdata", "graph", "directives.json"),
				"--workspace", dir, "--db", filepath.Join(dir, "r.db"))
			if code != 1 || out != "" || !strings.Contains(errOut, "(at "+tc.pointer+")") || strings.Contains(errOut, "perWorker") {
				t.Errorf("budget %v: exit %d, stdout %d bytes, stderr %q; want exit 1 naming %s, not perWorker", tc.budget, code, len(out), errOut, tc.pointer)
			}
		})
	}
}
