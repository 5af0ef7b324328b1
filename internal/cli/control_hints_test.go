package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// agentrt steer and agentrt cancel (and their supervise spellings) print
// the result on stdout and nothing else: a hint (run this again with the
// same --operation-id) and progress (waiting up to …) go to stderr, so a
// script reading stdout gets the outcome alone and --json stays one JSON
// value whose detail is data, not advice (§15 behaviours 48-50: the
// acknowledgement is the result). Asked of a run dir no supervisor holds
// (its supervisor was killed), which nobody answers.
func TestControlHintsGoToStderr(t *testing.T) {
	idle := filepath.Join(t.TempDir(), "idle")
	if err := os.Mkdir(idle, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(idle, supervise.LockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const again = "run this again"
	tests := []struct {
		name     string
		args     []string
		wantOut  string // stdout, exactly; "" for --json (decoded instead)
		wantCode int
		wantErr  string // in stderr
	}{
		{"steer --wait 0", []string{"steer", idle, "w", "hi", "--operation-id", "s0", "--wait", "0"},
			"steer s0 to w: requested\n", 0, again},
		{"supervise steer --wait 0", []string{"supervise", "steer", idle, "w", "--message", "hi", "--operation-id", "s1", "--wait", "0"},
			"steer s1 to w: requested\n", 0, again},
		{"steer unacknowledged", []string{"steer", idle, "w", "hi", "--operation-id", "s2", "--wait", "200ms"},
			"steer s2: no acknowledgement within 200ms\n", 1, again},
		{"cancel --wait 0", []string{"cancel", idle, "--operation-id", "c0", "--wait", "0"},
			"cancel c0 of the run: cancel_requested (not waited for (--wait 0))\n", 0, again},
		{"cancel WORKER --wait 0", []string{"cancel", idle, "w", "--operation-id", "c1", "--wait", "0"},
			"cancel c1 of w: cancel_requested (not waited for (--wait 0))\n", 0, again},
		{"supervise cancel --wait 0", []string{"supervise", "cancel", idle, "--operation-id", "c0", "--wait", "0"},
			"cancel c0 of the run: cancel_requested (not waited for (--wait 0))\n", 0, again},
		{"cancel unconfirmed", []string{"cancel", idle, "w", "--operation-id", "c2", "--wait", "200ms"},
			"cancel c2 of w: unknown (not confirmed by the run within 200ms)\n", 1, again},
		{"cancel --wait 0 --json", []string{"cancel", idle, "--operation-id", "c0", "--wait", "0", "--json"}, "", 0, again},
		{"cancel WORKER --wait 0 --json", []string{"cancel", idle, "w", "--operation-id", "c1", "--wait", "0", "--json"}, "", 0, again},
		{"steer --wait 0 --json", []string{"steer", idle, "w", "hi", "--operation-id", "s0", "--wait", "0", "--json"}, "", 0, again},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, "", tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			if tt.wantOut != "" && out != tt.wantOut {
				t.Errorf("stdout %q, want %q (stderr %q)", out, tt.wantOut, errOut)
			}
			if tt.wantOut == "" {
				decode(t, out) // one JSON value, nothing else
			}
			if strings.Contains(out, again) || strings.Contains(out, "waiting up to") {
				t.Errorf("a hint on stdout:\n%s", out)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tt.wantErr)
			}
		})
	}
}
