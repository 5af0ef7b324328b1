package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// A file the user named that cannot be read (it does not exist) is a
// usage error, exit 2, whatever the command and whichever flag names it,
// and the message says which file and what to do; a file that reads but
// whose content is refused stays exit 1 (the input was refused).
func TestNamedFileUnreadableIsUsage(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	graphFile := reviewGraph
	tests := map[string][]string{
		"supervise manager":  {"supervise", missing, "--task", "x", "--worker", noteWriter, "--db", filepath.Join(dir, "s.db")},
		"supervise worker":   {"supervise", supManager, "--task", "x", "--worker", missing, "--db", filepath.Join(dir, "s.db")},
		"supervise analysts": {"supervise", supManager, "--task", "x", "--worker", noteWriter, "--analysts", missing, "--db", filepath.Join(dir, "s.db")},
		"supervise script":   {"supervise", supManager, "--task", "x", "--worker", noteWriter, "--manager-script", missing, "--db", filepath.Join(dir, "s.db")},
		"graph":              {"graph", missing, "--task", "x", "--db", filepath.Join(dir, "g.db")},
		"graph directives":   {"graph", graphFile, "--task", "x", "--directives", missing, "--db", filepath.Join(dir, "g.db")},
		"directives list":    {"graph", "directives", "--directives", missing},
		"run":                {"run", missing, "--task", "x", "--db", filepath.Join(dir, "r.db")},
		"run script":         {"run", noteWriter, "--task", "x", "--script", missing, "--db", filepath.Join(dir, "r.db")},
		"run seats":          {"run", filepath.Join("..", "..", "examples", "profiles", "research-seats.json"), "--task", "x", "--seats", missing, "--db", filepath.Join(dir, "r.db")},
		"serve token file":   {"serve", "--listen", "127.0.0.1:0", "--token-file", missing},
		"check":              {"check", "--kind", "AgentProfile", missing},
		"profile validate":   {"profile", "validate", missing},
		"profile digest":     {"profile", "digest", missing},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			_, errOut, code := run(t, "", args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, missing) || !strings.Contains(errOut, "no such file") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %s", code, errOut, missing)
			}
		})
	}
}

// A --check-cmd that is given but empty (or blank) names no check: a
// usage error, never a run whose delivery check silently became "not
// empty".
func TestEmptyCheckCmdIsUsage(t *testing.T) {
	dir := t.TempDir()
	for _, check := range []string{"", "  "} {
		for name, args := range map[string][]string{
			"supervise":    {"supervise", supManager, "--task", "x", "--worker", noteWriter, "--check-cmd", check, "--run-dir", filepath.Join(dir, "r"), "--db", filepath.Join(dir, "s.db")},
			"mcp delegate": {"mcp", "delegate", "--manager", supManager, "--worker", noteWriter, "--check-cmd", check, "--db", filepath.Join(dir, "s.db")},
		} {
			out, errOut, code := run(t, "", args...)
			if code != cli.ExitUsage || !strings.Contains(errOut, "--check-cmd is empty") {
				t.Errorf("%s --check-cmd %q: exit %d, want 2 and why\n%s%s", name, check, code, out, errOut)
			}
		}
	}
}
