package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeOpencodeOnPath puts an "opencode" on a fresh PATH directory that
// counts its runs in dir/count and keeps each prompt in dir/prompt.<n>:
// its first run dies (stderr, exit 1), the others answer with nothing
// delegated, as a harness that ends its turn early does. It returns the
// PATH to run with.
func fakeOpencodeOnPath(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	count, prompts := filepath.Join(dir, "count"), filepath.Join(dir, "prompt")
	script := fmt.Sprintf(`#!/bin/sh
n=$(cat %[1]q 2>/dev/null || echo 0)
n=$((n+1))
echo "$n" > %[1]q
cat > %[2]q."$n"
if [ "$n" = 1 ]; then
  echo "pi exit unknown: the harness process died" >&2
  exit 1
fi
echo '{"type":"text","sessionID":"ses_fake","part":{"sessionID":"ses_fake","id":"prt_text","messageID":"msg_1","type":"text","text":"nothing to delegate"}}'
echo '{"type":"step_finish","sessionID":"ses_fake","part":{"sessionID":"ses_fake","id":"prt_1","messageID":"msg_1","type":"step-finish","reason":"stop","tokens":{"input":40,"output":10},"cost":0}}'
`, count, prompts)
	if err := os.WriteFile(filepath.Join(bin, "opencode"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// §3.6 driverRetry and repromptOnUnmet through the real binary: an
// opencode manager whose first turn dies is driven again (stderr says
// so), its next turn ends with nothing delivered and is re-prompted
// once (--reprompt 1), and --json carries the continuation: 3 attempts,
// 1 failure retry, 1 re-prompt, not re-prompted again for
// reprompts-exhausted. The run has no winner (exit 1).
func TestSuperviseHarnessManagerRetriedAndRepromptedBinary(t *testing.T) {
	dir := t.TempDir()
	path := fakeOpencodeOnPath(t, dir)
	mgr := filepath.Join(dir, "manager.json")
	if err := os.WriteFile(mgr, []byte(`{"name": "manager", "harness": "opencode", "model": {"default": "fake/oc"},
		"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	out, errOut, code := agentrtBinary(t, []string{"PATH=" + path}, "supervise", mgr, "--task", "write alpha", "--worker", noteWriter,
		"--provider", "opencode", "--reprompt", "1", "--run-dir", runDir, "--db", filepath.Join(dir, "s.db"), "--json")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (no winner)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var res struct {
		Status       string `json:"status"`
		Reason       string `json:"reason"`
		Continuation struct {
			Attempts          int    `json:"attempts"`
			Reprompts         int    `json:"reprompts"`
			FailureRetries    int    `json:"failureRetries"`
			Ended             string `json:"ended"`
			RepromptRefusedBy string `json:"repromptRefusedBy"`
		} `json:"continuation"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	c := res.Continuation
	if c.Attempts != 3 || c.FailureRetries != 1 || c.Reprompts != 1 || c.Ended != "completed" || c.RepromptRefusedBy != "reprompts-exhausted" {
		t.Errorf("continuation %+v, want 3 attempts, 1 failure retry, 1 re-prompt, then reprompts-exhausted\nstderr: %s", c, errOut)
	}
	if res.Reason == "driver-failed" {
		t.Errorf("reason driver-failed: the retried turn completed")
	}
	for _, want := range []string{"manager turn 1 failed (transient): ", "pi exit unknown", "driven again in",
		"manager turn 2 ended with nothing delivered; re-prompted", "manager turn 3 ended with nothing delivered; not re-prompted: reprompts-exhausted"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	third, err := os.ReadFile(filepath.Join(dir, "prompt.3"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(third), "re-prompt 1") || !strings.Contains(string(third), "write alpha") {
		t.Errorf("the re-prompted turn's prompt:\n%s", third)
	}
}

// --driver-attempts and --reprompt apply to an external-harness
// manager only, and --reprompt until-complete needs --timeout: usage
// errors (exit 2) that say what to do.
func TestSuperviseDriverLoopFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--reprompt", "2"}, "external-harness manager"},
		{[]string{"--driver-attempts", "3"}, "external-harness manager"},
		{[]string{"--provider", "opencode", "--reprompt", "until-complete"}, "needs --timeout"},
		{[]string{"--provider", "opencode", "--reprompt", "lots"}, "give a count"},
		{[]string{"--provider", "opencode", "--driver-attempts", "-1"}, "cannot be negative"},
		{[]string{"--child-settle-grace", "-1s"}, "--child-settle-grace cannot be negative"},
		{[]string{"--child-settle-grace", "soon"}, "want a duration such as 30s, or wait"},
		{[]string{"--stop-after-settles", "-2"}, "cannot be negative"},
	}
	for _, tc := range cases {
		args := append([]string{"supervise", supManager, "--task", "x", "--worker", noteWriter, "--db", filepath.Join(dir, "s.db")}, tc.args...)
		_, errOut, code := agentrtBinary(t, nil, args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", tc.args, code, errOut, tc.want)
		}
	}
}

// §3.6 stopRule (the no-progress bound) through the real binary: a
// manager that keeps spawning workers whose results never improve on
// the first is stopped by --stop-after-settles 1 once a second worker
// settled with nothing better; the first worker's delivery still wins,
// and both the human output and --json say what stopped the run.
func TestSuperviseStopAfterSettlesBinary(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "manager-script.json")
	spawn := func(task string) string {
		return fmt.Sprintf(`{"verb": "spawn_worker", "args": {"profile": "note-writer", "task": %q}}`, task)
	}
	await := `{"verb": "await_event", "args": {"timeoutMs": 60000}}`
	turns := fmt.Sprintf(`{"turns": [{"calls": [%s]}, {"calls": [%s]}, {"calls": [%s]}, {"calls": [%s]}, {"calls": [%s]}, {"calls": [%s]}, {"text": "done"}]}`,
		spawn("note one"), await, spawn("note two"), await, spawn("note three"), await)
	if err := os.WriteFile(script, []byte(turns), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"supervise", supManager, "--task", "write notes", "--worker", noteWriter, "--manager-script", script,
		"--stop-after-settles", "1", "--db", filepath.Join(dir, "s.db")}
	out, errOut, code := agentrtBinary(t, nil, append(common, "--run-dir", filepath.Join(dir, "run1"), "--json")...)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (the first worker delivered)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var res struct {
		Status       string `json:"status"`
		ProgressStop struct {
			Reason string `json:"reason"`
		} `json:"progressStop"`
		Workers []struct {
			ID string `json:"id"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	if res.Status != "winner" || !strings.Contains(res.ProgressStop.Reason, "no-progress: 1 settlements with no improvement") {
		t.Errorf("status %s, progressStop %+v; want a winner stopped by the bound\n%s", res.Status, res.ProgressStop, out)
	}
	if len(res.Workers) != 2 {
		t.Errorf("%d workers ran, want 2: the bound stopped the manager before its third spawn\n%s", len(res.Workers), out)
	}
	out, errOut, code = agentrtBinary(t, nil, append(common, "--run-dir", filepath.Join(dir, "run2"))...)
	if code != 0 || !strings.Contains(out, "stopped   by the no-progress bound: no-progress") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant the no-progress line", code, out, errOut)
	}
}

// §3.6 childSettleGraceMs through the real binary: a manager that
// spawns a slow worker and answers without awaiting it. With
// --child-settle-grace wait (the spec's null) the worker finishes and
// its delivery wins (exit 0); without a grace it is cancelled at once
// and the run has no winner.
func TestSuperviseChildSettleGraceWaitBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in child processes")
	}
	dir := t.TempDir()
	slow := writeFile(t, "slow.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"delayMs": 500}, {"text": "Done: the note."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+answerDone+`]}`)
	common := []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", script, "--script", slow, "--worker-tokens", "1000", "--expect", "Done", "--db", filepath.Join(dir, "s.db"), "--json"}
	out, errOut, code := agentrtBinary(t, nil, append(common, "--run-dir", filepath.Join(dir, "wait"), "--child-settle-grace", "wait")...)
	var res struct {
		Status string `json:"status"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "winner" {
		t.Errorf("--child-settle-grace wait: exit %d, stdout %s\nstderr %s\nwant 0 and the slow worker's delivery winning", code, out, errOut)
	}
	out, errOut, code = agentrtBinary(t, nil, append(common, "--run-dir", filepath.Join(dir, "none"))...)
	if code == 0 || json.Unmarshal([]byte(out), &res) != nil || res.Status != "no-winner" {
		t.Errorf("no grace: exit %d, stdout %s\nstderr %s\nwant no winner, the worker cancelled at once", code, out, errOut)
	}
}
