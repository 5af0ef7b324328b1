package cli_test

import (
	"os"
	"strings"
	"testing"
)

// Two file arguments given as - on one command line: standard input is
// read for the first, and the second is refused as a usage error
// naming the clash — not read as an empty file and judged "not a JSON
// object" (CL14's report).
func TestStandardInputIsReadForOneFileOnly(t *testing.T) {
	for _, args := range [][]string{
		{"graph", "-", "--task", "t", "--directives", "-"},
		{"graph", "-", "--task", "t", "--analysts", "-"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			graph, err := os.ReadFile(reviewGraph)
			if err != nil {
				t.Fatal(err)
			}
			_, stderr, code := run(t, string(graph), args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage); stderr: %s", code, stderr)
			}
			if !strings.Contains(stderr, "at most one file as -") {
				t.Errorf("stderr does not name the clash: %s", stderr)
			}
		})
	}
}
