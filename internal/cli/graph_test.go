package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

var (
	reviewGraph = filepath.Join("testdata", "graph", "review.json")
	directives  = filepath.Join("testdata", "graph", "directives.json")
)

// The root delegates once along its edge; the coder's result wins, and
// the JSON result carries the edge ledger beside the supervised result.
func TestGraphWinner(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := run(t, "", "graph", reviewGraph, "--task", "Make the login tests pass.", "--directives", directives,
		"--run-dir", dir, "--run-id", "login", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if member(res, "status").Str() != "winner" || member(member(res, "winner"), "node").Str() != "login:s1" {
		t.Errorf("result: %s", out)
	}
	ledger := member(res, "ledger").Items()
	if len(ledger) == 0 || member(ledger[0], "edge").Str() != "delegates:driver->coder" || member(ledger[0], "outcome").Str() != "delivered" {
		t.Errorf("ledger: %s", out)
	}
	if member(res, "runDir").Str() != dir || !strings.Contains(errOut, "spawned login:s1 coder") {
		t.Errorf("run dir or progress:\n%s%s", out, errOut)
	}
}

// A missing flag is a usage error (2); a graph that does not decode is
// refused (1).
func TestGraphRefusals(t *testing.T) {
	if _, errOut, code := run(t, "", "graph", reviewGraph, "--task", "t"); code != 2 {
		t.Errorf("no --directives: exit %d\n%s", code, errOut)
	}
	if _, errOut, code := run(t, "", "graph", reviewGraph, "--directives", directives); code != 2 {
		t.Errorf("no --task: exit %d\n%s", code, errOut)
	}
	_, errOut, code := run(t, "", "graph", "-", "--task", "t", "--directives", directives)
	if code != 1 || !strings.Contains(errOut, "agentrt:") {
		t.Errorf("empty graph: exit %d\n%s", code, errOut)
	}
}
