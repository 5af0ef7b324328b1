package cli_test

import (
	"testing"
)

// TestRunsCancelEndsAPendingFleetRunAtOnce is issue 14's `agentrt runs
// cancel` on a fleet run no worker has claimed: it ends cancelled at
// once through fleet.CancelRun (no worker needs to notice a request),
// and a retried cancel is answered cancelled again.
func TestRunsCancelEndsAPendingFleetRunAtOnce(t *testing.T) {
	conn, schema := fleetDB(t)
	t.Setenv("AGENTRT_DATABASE_URL", "")
	if out, errOut, code := run(t, "", "fleet", "migrate", "--database", conn, "--river-schema", schema); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	out, errOut, code := run(t, "", "run", noteWriter, "--enqueue", "--river-schema", schema, "--database", conn, "--task", "write a note", "--json")
	if code != 0 {
		t.Fatalf("run --enqueue: %d %s %s", code, out, errOut)
	}
	runID := member(decode(t, out), "runId").Str()

	out, errOut, code = run(t, "", "runs", "cancel", runID, "--database", conn, "--json", "--reason", "not needed")
	if code != 0 {
		t.Fatalf("runs cancel on a pending fleet run: %d %s %s; want 0", code, out, errOut)
	}
	if v := decode(t, out); member(v, "effect").Str() != "cancelled" || member(v, "status").Str() != "cancelled" {
		t.Fatalf("runs cancel --json printed %s; want effect and status cancelled", out)
	}
	out, errOut, code = run(t, "", "runs", "show", runID, "--json", "--database", conn)
	if code != 0 || member(decode(t, out), "status").Str() != "cancelled" {
		t.Fatalf("runs show after the cancel: %d %s %s; want cancelled", code, out, errOut)
	}
	// Retried, the cancel is answered with the same effect: the run ended
	// cancelled, nothing changes.
	out, errOut, code = run(t, "", "runs", "cancel", runID, "--database", conn, "--json", "--wait", "0")
	if v := decode(t, out); code != 0 || member(v, "effect").Str() != "cancelled" || member(v, "status").Str() != "cancelled" {
		t.Fatalf("a second cancel: exit %d, %s %s; want cancelled again", code, out, errOut)
	}
}
