package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
