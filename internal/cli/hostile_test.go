package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
)

// TestInputAtCapWithTooManyValues feeds commands a 64 MiB array of
// one-digit numbers, as large as the command line reads: it is refused
// with exit 1 and a message saying why, not decoded at a cost of
// gigabytes.
func TestInputAtCapWithTooManyValues(t *testing.T) {
	const size = 64 << 20
	data := make([]byte, 0, size)
	data = append(data, '[')
	for len(data) < size-2 {
		if len(data) > 1 {
			data = append(data, ',')
		}
		data = append(data, '7')
	}
	data = append(data, ']')
	path := filepath.Join(t.TempDir(), "wide.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"profile", "validate", path},
		{"check", "--kind", "AgentProfile", path},
	} {
		out, errOut, code := run(t, "", args...)
		if code != 1 || !strings.Contains(out+errOut, "more than 1048576 values") {
			t.Errorf("%s: exit %d, want 1 with the reason\nstdout: %.300s\nstderr: %.300s", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestReadingRunsNeedsAStore: runs list, show and events given a --db with
// no store behind it exit 1 naming the path, and create nothing; run
// still creates its store.
func TestReadingRunsNeedsAStore(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "nodir")
	tests := []struct {
		name, db, want string
	}{
		{"missing directory", filepath.Join(notDir, "runs.db"), "the directory " + notDir + " does not exist"},
		{"missing file", filepath.Join(dir, "runs.db"), "the file does not exist"},
		{"directory", dir, "it is not a file"},
	}
	for _, tc := range tests {
		for _, args := range [][]string{{"runs", "list"}, {"runs", "show", "r1"}, {"runs", "events", "r1"}} {
			args = append(args, "--db", tc.db)
			_, errOut, code := run(t, "", args...)
			if code != 1 || !strings.Contains(errOut, tc.db) || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--db") {
				t.Errorf("%s: %s: exit %d, stderr %q; want 1 naming the path and %q", tc.name, strings.Join(args, " "), code, errOut, tc.want)
			}
		}
	}
	for _, p := range []string{notDir, filepath.Join(dir, "runs.db")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after reading commands (%v)", p, err)
		}
	}
	// Recording a run still creates the store, directory and all.
	db := filepath.Join(notDir, "runs.db")
	if out, errOut, code := run(t, "", "run", "--json", "--db", db, noteWriter, "--task", "t"); code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "", "runs", "list", "--db", db); code != 0 || !strings.Contains(out, "completed") {
		t.Errorf("runs list after run: exit %d\n%s%s", code, out, errOut)
	}
}

// failingReader fails every read, as a broken pipe or device would.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("input/output error") }

// TestCandidateScanUnreadableInput: scan's help promises exit 2 for input
// it cannot read, whatever the reason.
func TestCandidateScanUnreadableInput(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked.json")
	if err := os.WriteFile(locked, []byte(`{}`), 0o000); err != nil {
		t.Fatal(err)
	}
	tooLarge := filepath.Join(dir, "large.json")
	if err := os.WriteFile(tooLarge, bytes.Repeat([]byte(" "), 64<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing file", filepath.Join(dir, "missing.json"), "no such file"},
		{"directory", dir, "is a directory"},
		{"permission denied", locked, "permission denied"},
		{"too large", tooLarge, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "permission denied" {
				if f, err := os.Open(tc.path); err == nil {
					f.Close()
					t.Skip("this user reads files whatever their mode (root)")
				}
			}
			_, errOut, code := run(t, "", "candidate", "scan", tc.path)
			if code != cli.ExitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
	t.Run("stdin read error", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := cli.Main(context.Background(), []string{"candidate", "scan", "-"}, cli.IO{In: failingReader{}, Out: &out, Err: &errb})
		if code != cli.ExitUsage || !strings.Contains(errb.String(), "input/output error") {
			t.Errorf("exit %d, stderr %q; want 2", code, errb.String())
		}
	})
}
