package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphResumeRefusalAdvisesTheGraphFile: agentrt graph --resume with
// a graph file whose budget or edges differ from the run's journal is a
// usage error (exit 2) that names the graph file's key and its JSON
// pointer and says to resume with the graph file that started the run.
// Before, it advised "omit budget.maxTokens to continue with the
// journaled value", which a graph file cannot do (§2.1: maxTokens and
// maxIterations are required), so following the advice failed again.
// §3.6 (resume keeps the run's options), behaviour 46.
func TestGraphResumeRefusalAdvisesTheGraphFile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(reviewGraph)
	if err != nil {
		t.Fatal(err)
	}
	directives := filepath.Join("testdata", "graph", "directives.json")
	cases := []struct {
		name    string
		change  func(g map[string]any)
		pointer string
	}{
		{"budget tokens", func(g map[string]any) { g["budget"] = map[string]any{"tokens": 9999, "iterations": 6} }, "/budget/tokens"},
		{"budget maxIterations", func(g map[string]any) {
			g["budget"] = map[string]any{"tokens": 5000, "iterations": 7}
		}, "/budget/iterations"},
		{"edge cap", func(g map[string]any) {
			g["edges"].([]any)[0].(map[string]any)["maxTraversals"] = 5
		}, "/edges/0/maxTraversals"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "r.db")
			if _, errOut, code := run(t, "", "graph", reviewGraph, "--task", "x", "--directives", directives,
				"--workspace", dir, "--db", db, "--run-id", "g1"); code != 0 {
				t.Fatalf("first run: exit %d\n%s", code, errOut)
			}
			var g map[string]any
			if err := json.Unmarshal(data, &g); err != nil {
				t.Fatal(err)
			}
			tc.change(g)
			b, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			changed := filepath.Join(dir, "changed.json")
			if err := os.WriteFile(changed, b, 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := run(t, "", "graph", changed, "--resume", "--directives", directives,
				"--workspace", dir, "--db", db, "--run-id", "g1")
			if code != 2 || out != "" || strings.Contains(errOut, "omit ") ||
				!strings.Contains(errOut, "(at "+tc.pointer+")") || !strings.Contains(errOut, "graph file that started the run") {
				t.Errorf("exit %d, stdout %d bytes, stderr %q; want a usage error naming %s and the graph file that started the run, advising no omission",
					code, len(out), errOut, tc.pointer)
			}
		})
	}
}
