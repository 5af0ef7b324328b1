package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// Behaviour 48, root steer through the CLI (§3.6 "Root steer: pass runId
// as worker. Router roots read steers between turns"): while the router
// manager waits in await_event, agentrt steer RUN RUNID MESSAGE is held
// (unknown) or, if it lands between turns, delivered; once the await
// returns (its worker cancelled by a third invocation) the manager's next
// turn takes it, and asking again shows delivered.
func TestSteerRootManagerFromAnotherInvocationBehaviour48(t *testing.T) {
	dir := t.TempDir()
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 30000}, {"text": " done."}]}]}`)
	// A steer the last answer's turn takes adds one turn: the spare.
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"text": "Steered."}, {"text": " Spare."}]}`)
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--script", slow, "--json")...)
		done <- result{out, errOut, code}
	}()
	waitJournal(t, dir, supervise.KindSpawned)

	const msg = "ROOT-STEER: keep the note short"
	out, errOut, code := run(t, "", "steer", dir, "rel", msg, "--wait", "1s")
	if !strings.Contains(out, "to rel: unknown after 1s") && !(code == 0 && strings.Contains(out, "to rel: delivered")) {
		t.Fatalf("steer while the manager awaits: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "supervise", "cancel", dir, "note", "--operation-id", "cancel-1", "--wait", "10s")
	if code != 0 {
		t.Fatalf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	var first result
	select {
	case first = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the supervising invocation did not end after the cancel")
	}
	if !strings.Contains(first.errOut, "steer acknowledged") {
		t.Errorf("progress lacks the steer's acknowledgement:\n%s", first.errOut)
	}
	out, errOut, code = run(t, "", "steer", dir, "rel", msg, "--wait", "1s")
	if code != 0 || !strings.Contains(out, "to rel: delivered") {
		t.Errorf("asking again after the run: exit %d\n%s%s", code, out, errOut)
	}
	recs, _, err := supervise.ReadInbox(t.Context(), dir, "rel")
	if err != nil || len(recs) != 2 || recs[0].Message != msg || recs[1].Kind != supervise.InboxTaken {
		t.Errorf("the manager's inbox projection: %+v, %v; want the steer posted and taken", recs, err)
	}
}
