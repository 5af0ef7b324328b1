package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// failingOpencodeOnPath puts an "opencode" on a fresh PATH directory
// that fails every run at once (stderr text, exit 1), counting its runs
// in dir/count.
func failingOpencodeOnPath(t *testing.T, dir, text string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(dir, "count")
	script := fmt.Sprintf(`#!/bin/sh
n=$(cat %[1]q 2>/dev/null || echo 0)
echo $((n+1)) > %[1]q
cat > /dev/null
echo %[2]q >&2
exit 1
`, count, text)
	if err := os.WriteFile(filepath.Join(bin, "opencode"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// §3.6 driverRetry with the defaults, through the real binary: a
// harness that fails at once on every turn, changing nothing, ends the
// run in seconds, not minutes — three attempts (MaxConsecutiveFailures
// 3), waits of 2 s and 4 s between them — driver-failed (exit 1), the
// error naming the attempts and the stop, --json's continuation
// counting them, stderr saying each.
func TestSuperviseHarnessThatAlwaysFailsEndsInSecondsBinary(t *testing.T) {
	dir := t.TempDir()
	path := failingOpencodeOnPath(t, dir, "opencode: cannot start: bad credential")
	mgr := filepath.Join(dir, "manager.json")
	if err := os.WriteFile(mgr, []byte(`{"name": "manager", "harness": "opencode", "model": {"default": "fake/oc"},
		"tools": {"agent_runtime_coordination_spawn_worker": true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	buildAgentrt(t) // built before the clock starts
	start := time.Now()
	out, errOut, code := agentrtBinary(t, []string{"PATH=" + path}, "supervise", mgr, "--task", "write alpha", "--worker", noteWriter,
		"--provider", "opencode", "--run-dir", filepath.Join(dir, "run"), "--db", filepath.Join(dir, "s.db"), "--json")
	took := time.Since(start)
	t.Logf("an always-failing harness with the default driver retry ended in %s", took)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if took < 6*time.Second || took > 40*time.Second {
		t.Errorf("the run took %s; want the default backoffs (2 s + 4 s) and no more than seconds of overhead", took)
	}
	var res struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
		Error  struct {
			Name    string `json:"name"`
			Message string `json:"message"`
		} `json:"error"`
		Continuation struct {
			Attempts       int    `json:"attempts"`
			FailureRetries int    `json:"failureRetries"`
			Ended          string `json:"ended"`
		} `json:"continuation"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if res.Status != "no-winner" || res.Reason != "driver-failed" || !strings.Contains(res.Error.Message, "after 3 attempt(s), stopped by no-progress") ||
		!strings.Contains(res.Error.Message, "bad credential") {
		t.Errorf("result %+v, want driver-failed after 3 attempts stopped by no-progress naming the cause", res)
	}
	if c := res.Continuation; c.Attempts != 3 || c.FailureRetries != 2 || c.Ended != "no-progress" {
		t.Errorf("continuation %+v, want 3 attempts, 2 failure retries, ended no-progress", c)
	}
	if n, _ := os.ReadFile(filepath.Join(dir, "count")); strings.TrimSpace(string(n)) != "3" {
		t.Errorf("the harness ran %q times, want 3", n)
	}
	for _, want := range []string{"manager turn 1 failed (transient): ", "driven again in 2s", "manager turn 2 failed (transient): ",
		"driven again in 4s", "manager turn 3 failed (transient): ", "stopped by no-progress"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// agentrt supervise --help says what the driver loop does as it does
// it: a provider out of capacity pauses only under --timeout (without a
// deadline it counts as a failure), and failures that change nothing
// end the run after three.
func TestSuperviseHelpDescribesTheDriverLoop(t *testing.T) {
	out, errOut, code := agentrtBinary(t, nil, "supervise", "--help")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	text := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"pauses without spending an attempt under --timeout",
		"three failures in a row that change nothing end it", "--child-settle-grace"} {
		if !strings.Contains(text, want) {
			t.Errorf("--help lacks %q:\n%s", want, out)
		}
	}
}
