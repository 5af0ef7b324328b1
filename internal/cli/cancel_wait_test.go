package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// agentrt cancel RUN [WORKER] --wait 0 writes the request and does not
// wait: its effect is cancel_requested (or the run's answer, when it
// already gave one) and it exits 0. With --wait D and no confirmation
// within D the effect is unknown, exit 1, and stderr says the run did
// not confirm within D. agentrt steer --wait 0 likewise only records
// its request (exit 0).
func TestCancelWaitZeroIsRequested(t *testing.T) {
	dir := t.TempDir()
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 30000}, {"text": " done."}]}]}`)
	// The manager hangs after its await, so only the run's cancellation
	// ends the run: a manager that answered once its worker was cancelled
	// could end the run (no winner) before the run's own cancellation was
	// read, which then answered not_live (seen under -race).
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"hang": true}]}`)
	done := make(chan int, 1)
	go func() {
		_, _, code := run(t, "", superviseArgs(t, script, dir, "--script", slow, "--json")...)
		done <- code
	}()
	waitJournal(t, dir, supervise.KindSpawned)

	out, errOut, code := run(t, "", "steer", dir, "note", "Be brief.", "--operation-id", "steer-0", "--wait", "0")
	if code != 0 || !strings.Contains(out, "steer steer-0 to note: requested") {
		t.Errorf("steer --wait 0: exit %d, want 0 and requested\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "note", "--operation-id", "cancel-note", "--wait", "0", "--json")
	if effect := member(decode(t, out), "effect").Str(); code != 0 || (effect != "cancel_requested" && effect != "cancelled") {
		t.Errorf("cancel WORKER --wait 0: exit %d, effect %q; want 0 and cancel_requested\n%s%s", code, effect, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "--operation-id", "cancel-run", "--wait", "0")
	if code != 0 || !(strings.Contains(out, "of the run: cancel_requested") || strings.Contains(out, "of the run: cancelled")) {
		t.Errorf("cancel --wait 0: exit %d, want 0 and cancel_requested\n%s%s", code, out, errOut)
	}
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("the supervising invocation: exit %d, want 1 (no winner)", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the supervising invocation did not end after the run's cancel")
	}
	// Retried now, the same requests report the run's answers.
	out, errOut, code = run(t, "", "cancel", dir, "--operation-id", "cancel-run", "--wait", "0")
	if code != 0 || !strings.Contains(out, "of the run: cancelled") {
		t.Errorf("cancel again: exit %d, want 0 and cancelled\n%s%s", code, out, errOut)
	}

	// A run directory no supervisor holds (its process was killed: the
	// lock file stays, no one holds it): nobody confirms.
	idle := filepath.Join(t.TempDir(), "idle")
	if err := os.Mkdir(idle, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(idle, supervise.LockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = run(t, "", "cancel", idle, "--operation-id", "stop", "--wait", "0")
	if code != 0 || !strings.Contains(out, "of the run: cancel_requested") {
		t.Errorf("cancel idle --wait 0: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", idle, "--operation-id", "stop", "--wait", "200ms")
	if code != 1 || !strings.Contains(out, "of the run: unknown") || !strings.Contains(errOut, "did not confirm the cancellation within 200ms") {
		t.Errorf("cancel idle --wait 200ms: exit %d, want 1, unknown and why\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", idle, "w", "--operation-id", "stop-w", "--wait", "200ms")
	if code != 1 || !strings.Contains(out, "of w: unknown") || !strings.Contains(errOut, "did not confirm the cancellation within 200ms") {
		t.Errorf("cancel idle WORKER --wait 200ms: exit %d, want 1, unknown and why\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "steer", idle, "w", "hi", "--operation-id", "steer-w", "--wait", "200ms")
	if code != 1 || !strings.Contains(errOut, "did not acknowledge the steer within 200ms") {
		t.Errorf("steer idle --wait 200ms: exit %d, want 1 and why\n%s%s", code, out, errOut)
	}
}
