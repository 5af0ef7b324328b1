package cli_test

import (
	"strings"
	"testing"
)

// agentrt mcp coordination on a dir with no live run exits 1 before
// serving and says what to do.
func TestMCPCoordinationNotLive(t *testing.T) {
	out, errOut, code := run(t, "", "mcp", "coordination", t.TempDir())
	if code != 1 || out != "" || !strings.Contains(errOut, "not live") || !strings.Contains(errOut, "agentrt supervise --run-dir") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1 saying the run is not live and how to start it", code, out, errOut)
	}
}

// supervise --provider claude-code runs the manager on that harness, so
// a manager profile declaring another harness is a usage error, before
// any harness binary is looked up.
func TestSuperviseHarnessProviderNeedsHarnessManager(t *testing.T) {
	_, errOut, code := run(t, "", "supervise", supManager, "--worker", noteWriter, "--task", "t", "--provider", "claude-code")
	if code != 2 || !strings.Contains(errOut, `"harness": "claude-code"`) {
		t.Errorf("exit %d, stderr %q; want 2 naming the harness the manager must declare", code, errOut)
	}
}
