package cli_test

import (
	"path/filepath"
	"testing"
)

// An empty --expect is contained in every result, so it would deliver
// whatever a worker returned: it is refused as --check-cmd "" is,
// saying what to give instead.
func TestEmptyExpectIsRefused(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	cases := map[string][]string{
		"supervise": {"supervise", supManager, "--task", "x", "--worker", noteWriter, "--run-dir", t.TempDir(), "--expect", "", "--db", db, "--json"},
		"graph":     {"graph", reviewGraph, "--directives", directives, "--task", "x", "--run-dir", t.TempDir(), "--expect=", "--db", db, "--json"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := run(t, "", args...)
			refusedAsUsage(t, out, errOut, code, "--expect is empty", "leave the flag out")
		})
	}
}
