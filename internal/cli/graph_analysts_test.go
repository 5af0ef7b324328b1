package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// A lens of --analysts whose id is a built-in lens's is refused before
// anything runs as a bad lens file is: exit 1, naming the file and the
// lens (graph.Validate refuses it as RunGraph does).
func TestGraphAnalystsFileLensAlreadyOnTheMenu(t *testing.T) {
	lenses := writeFile(t, "lenses.json", `[{"id": "failure-triage", "description": "d", "area": "a", "question": "q", "instructions": "i", "toolGroup": "all"}]`)
	dir := t.TempDir()
	out, errOut, code := run(t, "", "graph", reviewGraph, "--task", "t", "--directives", directives, "--analysts", lenses,
		"--run-dir", dir, "--db", filepath.Join(t.TempDir(), "runs.db"))
	if code != 1 || out != "" || !strings.Contains(errOut, lenses) || !strings.Contains(errOut, `"failure-triage" is already on the menu`) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 naming the file and the lens", code, out, errOut)
	}
}
