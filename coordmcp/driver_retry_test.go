package coordmcp_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/supervise"
)

// countedOpencode is a harness brain on the fake opencode in mode, each
// invocation counted and its prompt written to <dir>/prompt.txt.<n>.
func countedOpencode(t *testing.T, dir, mode, failText string) supervise.Brain {
	t.Helper()
	prov, err := clibridge.New(clibridge.Options{Harness: harness.OpenCode, Binary: os.Args[0], WorkRoot: filepath.Join(dir, "work"),
		Env: map[string]string{fakeModeEnv: mode, fakePromptFileEnv: filepath.Join(dir, "prompt.txt"),
			fakeCountFileEnv: filepath.Join(dir, "count"), fakeFailTextEnv: failText}})
	if err != nil {
		t.Fatal(err)
	}
	brain, err := coordmcp.NewHarnessBrain(reentryProfile(t), prov, coordmcp.HarnessOptions{Relay: []string{"/bin/false"}})
	if err != nil {
		t.Fatal(err)
	}
	return brain
}

func invocations(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "count"))
	if err != nil {
		t.Fatalf("the fake harness never ran: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func attemptRecords(t *testing.T, runDir string) []supervise.Record {
	t.Helper()
	rows, _, err := supervise.ReadRunDir(context.Background(), runDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []supervise.Record
	for _, r := range rows {
		if r.Kind == supervise.KindDriverAttempt {
			out = append(out, r)
		}
	}
	return out
}

// §3.6 driverRetry: a harness manager whose turn failed (the process
// exited with an error, a transient accident) is driven again, in a new
// session told why — the same run, the same journal — and the run goes
// on; the result counts one failure retry and the journal holds both
// attempts.
func TestHarnessManagerFailedTurnIsDrivenAgain(t *testing.T) {
	dir, runDir := t.TempDir(), t.TempDir()
	brain := countedOpencode(t, dir, "fail-once", "pi exit unknown: the harness process died")
	o := runOptions(t, runDir, brain)
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Millisecond}
	var seen []supervise.DriverAttempt
	o.OnDriverAttempt = func(a supervise.DriverAttempt) { seen = append(seen, a) }
	res, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := invocations(t, dir); n != 2 {
		t.Fatalf("the harness ran %d times, want 2 (the failed turn and its retry)", n)
	}
	if res.Reason == supervise.ReasonDriverFailed {
		t.Fatalf("the run ended driver-failed (%+v) although its retry completed", res.Error)
	}
	c := res.Continuation
	if c == nil || c.Attempts != 2 || c.FailureRetries != 1 || c.Reprompts != 0 || c.Ended != supervise.StopCompleted {
		t.Fatalf("continuation %+v, want 2 attempts, 1 failure retry, ended completed", c)
	}
	if len(seen) != 2 || seen[0].Class != supervise.FailureTransient || seen[0].RetryInMS == nil ||
		!strings.Contains(seen[0].Error, "pi exit unknown") || seen[1].Reentry != supervise.ReentryDriverFailure {
		t.Errorf("attempts %+v, want a transient failure then a completed re-entry after it", seen)
	}
	if recs := attemptRecords(t, runDir); len(recs) != 2 {
		t.Errorf("the journal holds %d driver-attempt records, want 2", len(recs))
	}
	second := readPrompt(t, filepath.Join(dir, "prompt.txt.2"))
	for _, want := range []string{"write alpha", "You are re-entering run run1", "the earlier session failed (retry 1)", "pi exit unknown"} {
		if !strings.Contains(second, want) {
			t.Errorf("the retried turn's prompt lacks %q:\n%s", want, second)
		}
	}
	if first := readPrompt(t, filepath.Join(dir, "prompt.txt.1")); strings.Contains(first, "re-entering") {
		t.Errorf("the first turn's prompt carries a re-entry note:\n%s", first)
	}
}

// §3.6 driverRetry: Disabled restores the first-failure-ends-the-run
// behaviour: one attempt, driver-failed, the harness's own failure.
func TestHarnessManagerRetryDisabledEndsAtTheFirstFailure(t *testing.T) {
	dir, runDir := t.TempDir(), t.TempDir()
	o := runOptions(t, runDir, countedOpencode(t, dir, "fail-once", "pi exit unknown"))
	o.DriverRetry = supervise.DriverRetry{Disabled: true}
	res, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := invocations(t, dir); n != 1 {
		t.Errorf("the harness ran %d times, want 1", n)
	}
	if res.Reason != supervise.ReasonDriverFailed || res.Error == nil || res.Continuation == nil ||
		res.Continuation.Ended != supervise.StopRetryDisabled {
		t.Errorf("reason %s error %+v continuation %+v, want driver-failed, stopped retry-disabled", res.Reason, res.Error, res.Continuation)
	}
}

// §3.6 driverRetry: an upstream out of capacity (a harness printing its
// provider's 429) pauses the driver and enters it again, telling it so;
// a pause spends no attempt.
func TestHarnessManagerUnavailableUpstreamPauses(t *testing.T) {
	dir, runDir := t.TempDir(), t.TempDir()
	o := runOptions(t, runDir, countedOpencode(t, dir, "fail-once", "upstream error: status code 429 (rate_limit_error)"))
	o.DriverRetry = supervise.DriverRetry{UnavailablePause: time.Millisecond, MaxAttempts: 1}
	o.Deadline = time.Now().Add(2 * time.Minute)
	res, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Continuation
	if c == nil || c.Attempts != 2 || c.UnavailablePauses != 1 || c.FailureRetries != 0 || c.Ended != supervise.StopCompleted {
		t.Fatalf("continuation %+v (reason %s, error %+v), want a pause then a completed attempt", c, res.Reason, res.Error)
	}
	if second := readPrompt(t, filepath.Join(dir, "prompt.txt.2")); !strings.Contains(second, "refused it for capacity (rate_limit_error)") {
		t.Errorf("the turn after the pause:\n%s\nwant it told of the capacity refusal", second)
	}
}

// §3.6 repromptOnUnmet: a harness that ends its turn while the run has
// delivered nothing is entered again with what is still owed (the
// deliverable's description), up to Reprompt.Max; then the run ends on
// its finalizer as before, the refusal named.
func TestHarnessManagerUnmetContractIsReprompted(t *testing.T) {
	dir, runDir := t.TempDir(), t.TempDir()
	o := runOptions(t, runDir, countedOpencode(t, dir, "fail-once", "pi exit unknown"))
	// fail-once's later turns finish delivering nothing: here the first
	// fails, so take a fresh counter past it.
	if err := os.WriteFile(filepath.Join(dir, "count"), []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Reprompt = supervise.Reprompt{Max: 1}
	res, err := supervise.Supervise(deadline(t), reentryProfile(t), "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := invocations(t, dir); n != 3 { // the counter started at 1
		t.Fatalf("the harness ran %d more times, want 2 (the turn and one re-prompt)", n-1)
	}
	c := res.Continuation
	if c == nil || c.Attempts != 2 || c.Reprompts != 1 || c.RepromptRefusedBy != supervise.RepromptsExhausted {
		t.Fatalf("continuation %+v, want 2 attempts, 1 re-prompt, then reprompts-exhausted", c)
	}
	if res.Status == supervise.StatusWinner || res.Reason == supervise.ReasonDriverFailed {
		t.Errorf("status %s reason %s: nothing was delivered and no driver failed", res.Status, res.Reason)
	}
	second := readPrompt(t, filepath.Join(dir, "prompt.txt.3"))
	for _, want := range []string{"write alpha", "re-prompt 1", "The completion check has not passed", "a result that says DONE"} {
		if !strings.Contains(second, want) {
			t.Errorf("the re-prompted turn lacks %q:\n%s", want, second)
		}
	}
}
