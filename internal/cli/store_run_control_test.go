package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// A run whose journal is in the store (--journal-in-store) keeps its
// control files in its run dir as any run does: agentrt steer and
// agentrt cancel aimed at that dir reach the live supervisor — a steer
// of a worker is delivered, a cancel of the whole run ends it cancelled
// — and the run's result says so. Behaviours 48-50, §3.6 "Cancellation",
// §9.
func TestSteerAndCancelReachAStoreJournaledRun(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 60000}, {"text": " done."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"text": "Stopped."}, {"text": " Spare."}]}`)
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		out, errOut, code := run(t, "", "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
			"--manager-script", script, "--script", slow, "--run-dir", dir, "--run-id", "ctl", "--db", db,
			"--journal-in-store", "--lease", "6s", "--json")
		done <- result{out, errOut, code}
	}()
	st := graphStoreBackends[0].open(t, []string{"--db", db})
	defer st.Close()
	awaitStoreJournal(t, st, "ctl", func(recs []supervise.Record) bool { return slicesContainsKind(recs, supervise.KindExecutionBound) },
		func() string { return "no worker was bound" })

	// The worker is inside its 60 s turn: the supervisor takes the
	// steer and holds it for the worker's next turn (unknown within the
	// wait, never refused as a run nobody holds).
	out, errOut, code := run(t, "", "steer", dir, "ctl:s1", "keep it short", "--wait", "3s")
	if !strings.Contains(out, "to ctl:s1: unknown after 3s") && !(code == 0 && strings.Contains(out, "delivered")) {
		t.Errorf("steer of the store-journaled run's worker: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "--wait", "20s")
	if code != 0 || !strings.Contains(out, "cancelled") {
		t.Errorf("cancel of the store-journaled run: exit %d\n%s%s", code, out, errOut)
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the supervising invocation did not end after the cancel")
	}
	if took := time.Since(start); took > 50*time.Second {
		t.Errorf("the run took %s: the cancel did not stop its 60 s worker", took)
	}
	v := decode(t, res.out)
	if kind, reason := member(v, "kind").Str(), member(v, "reason").Str(); res.code == 0 || kind != "no-winner" || reason != "cancelled" {
		t.Errorf("the run's result: exit %d, kind %q, reason %q; want no-winner, cancelled\n%s", res.code, kind, reason, res.errOut)
	}
	if !strings.Contains(res.errOut, "steer requested ctl:s1") {
		t.Errorf("the supervisor never took the steer:\n%s", res.errOut)
	}
}
