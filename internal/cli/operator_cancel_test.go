package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/supervise"
)

// Behaviour 49 and §3.6 "Cancellation" (labels are resolved by the root
// manager against its direct children; an unresolved request is unknown,
// never success; run end expires open requests), across invocations: a
// cancellation of a label no worker has yet stays open — unknown — and
// is applied when the manager spawns a worker under that label, which
// then ends cancelled at once instead of running its 30 s turn; the
// record names the worker and reads cancelled. A label no worker ever
// takes is expired at run end.
func TestCancelOfALabelNotYetSpawnedAppliesWhenItIsBehaviour49(t *testing.T) {
	dir := t.TempDir()
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 30000}, {"text": " done."}]}]}`)
	spawnFirst := strings.Replace(spawnNote, `"label": "note"`, `"label": "first"`, 1)
	script := managerScript(t, `{"turns": [`+spawnFirst+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, {"text": "Both were cancelled."}]}`)
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--script", slow, "--worker-tokens", "20000", "--json")...)
		done <- result{out, errOut, code}
	}()
	waitJournal(t, dir, supervise.KindSpawned)

	out, errOut, code := run(t, "", "cancel", dir, "note", "--operation-id", "cancel-note", "--wait", "0")
	if code != 0 || !strings.Contains(out, "cancel_requested") && !strings.Contains(out, "unknown") {
		t.Fatalf("cancel of the label no worker has yet: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, "", "cancel", dir, "nobody", "--operation-id", "cancel-nobody", "--wait", "0"); code != 0 {
		t.Fatalf("cancel of a label no worker ever has: exit %d\n%s%s", code, out, errOut)
	}
	// Several scans pass while nothing answers to "note".
	time.Sleep(5 * supervise.ControlScanInterval)
	rec, err := supervise.ReadWorkerCancellation(t.Context(), dir, "cancel-note")
	if err != nil || rec.Effect != kernel.EffectUnknown {
		t.Fatalf("before any worker is labelled note: %+v, %v; want unknown", rec, err)
	}
	out, errOut, code = run(t, "", "cancel", dir, "first", "--operation-id", "cancel-first", "--wait", "10s")
	if code != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("cancel of the first worker: exit %d\n%s%s", code, out, errOut)
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the supervising invocation did not end")
	}
	if took := time.Since(start); took > 25*time.Second {
		t.Errorf("the run took %s: the worker labelled note ran its 30 s turn despite the open cancellation", took)
	}
	rec, err = supervise.ReadWorkerCancellation(t.Context(), dir, "cancel-note")
	if err != nil || rec.Effect != kernel.EffectCancelled || rec.WorkerID != "rel:s2" {
		t.Errorf("the cancellation once note was spawned: %+v, %v; want cancelled, worker rel:s2\n%s", rec, err, res.errOut)
	}
	// Run end expires the request no worker ever answered: unknown (a
	// name the run never had is no settled worker), final.
	rec, err = supervise.ReadWorkerCancellation(t.Context(), dir, "cancel-nobody")
	if want := "the run ended before the request was applied; the run has no worker nobody"; err != nil || rec.Effect != kernel.EffectUnknown || rec.Detail != want {
		t.Errorf("the cancellation of nobody at run end: %+v, %v; want unknown, %q", rec, err, want)
	}
}

// Behaviour 49 (retry-safe by operation id; a changed body fails loud):
// an operation id reused with the same worker but another reason is a
// conflict, and the error says what differs — the reason first asked —
// not that another worker was asked.
func TestCancelConflictNamesWhatDiffersBehaviour49(t *testing.T) {
	dir := t.TempDir()
	// A run dir no supervisor holds: the lock file a killed one leaves.
	if err := os.WriteFile(filepath.Join(dir, supervise.LockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := supervise.CancelWorker(t.Context(), dir, "note", "c-1", supervise.CancelOptions{Reason: "too slow"}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "", "cancel", dir, "note", "--operation-id", "c-1", "--reason", "other", "--wait", "0")
	if code == 0 || !strings.Contains(errOut, `reason "too slow"`) || strings.Contains(errOut, "worker note was asked first") {
		t.Errorf("a reused operation id with another reason: exit %d\n%s%s", code, out, errOut)
	}
}
