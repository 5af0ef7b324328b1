package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphGivenAProfileSaysWhatAGraphIs: agentrt graph given a file that
// holds none of a graph's members (a profile, given by mistake) is the
// invalid graph it is (exit 1, nothing on stdout), and says what a graph
// file is and where one is; before, it named only the profile's first
// unknown member ("invalid description ... unknown field"). A graph with
// one wrong member keeps the plain error. §3.7 (validation before spend).
func TestGraphGivenAProfileSaysWhatAGraphIs(t *testing.T) {
	t.Parallel()
	const hint = "is not a graph file (a graph is {nodes, edges, budget}; see examples/graph/review.json)"
	cases := []struct {
		name, file string
		hinted     bool
	}{
		{"a profile", filepath.Join("..", "..", "examples", "profiles", "note-writer.json"), true},
		{"a graph with a stray member", writeFile(t, "graph.json", `{"nodes": [], "edges": [], "budget": {"maxTokens": 1, "maxIterations": 1}, "extra": 1}`), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, errOut, code := run(t, "", "graph", tc.file, "--task", "x", "--json", "--workspace", dir, "--db", filepath.Join(dir, "r.db"))
			if code != 1 || out != "" || strings.Contains(errOut, hint) != tc.hinted {
				t.Errorf("%s: exit %d, stdout %d bytes, stderr %q; want exit 1, hinted %v", tc.file, code, len(out), errOut, tc.hinted)
			}
		})
	}
}
