package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// §3.6 workerRetry: agentrt supervise --worker-retry N sets
// Options.WorkerRetry.MaxAttempts; a negative N is a usage error (exit
// 2) before anything runs.
func TestSuperviseWorkerRetryFlagRefusesNegative(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	dir := t.TempDir()
	manager := writeFile(t, "manager.json", `{"name": "m", "harness": "cli-base", "model": {"default": "scripted/manager"},
  "prompt": {"systemPrompt": "Spawn."}, "tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	_, errOut, code := agentrtBinary(t, nil, "supervise", manager, "--task", "x", "--worker", manager, "--worker-retry", "-1",
		"--db", filepath.Join(dir, "neg.db"))
	if code != 2 || !strings.Contains(errOut, "--worker-retry cannot be negative") {
		t.Errorf("--worker-retry -1: exit %d, stderr %q; want a usage error (2)", code, errOut)
	}
}
