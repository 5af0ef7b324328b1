package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 Cancellation through the CLI, for a run whose supervisor is gone:
// agentrt supervise is SIGKILLed mid-run, so nobody will acknowledge a
// run cancellation. agentrt supervise cancel RUN-DIR --json then prints
// one JSON document saying the effect is unknown (never success) and
// exits 1, as the text form and a worker's cancellation do — not a
// conversion error with the usage exit status.
func TestSuperviseCancelRunJSONWithoutAcknowledgement(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	script := managerScript(t, `{"turns": [`+spawnNote+`, {"hang": true}]}`)
	child := exec.Command(os.Args[0], superviseArgsDB(script, dir, db)...)
	child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, dir, supervise.KindSpawned)
	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = child.Wait()

	out, errOut, code := run(t, "", "supervise", "cancel", dir, "--operation-id", "stop-dead", "--reason", "gone", "--wait", "300ms", "--json")
	if code != 1 {
		t.Errorf("cancel --json of a run nobody acknowledges: exit %d, want 1\n%s%s", code, out, errOut)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), "{") {
		t.Fatalf("cancel --json printed no JSON object:\n%s%s", out, errOut)
	}
	ack := decode(t, out)
	if member(ack, "operationId").Str() != "stop-dead" || member(ack, "effect").Str() != "unknown" ||
		member(ack, "reason").Str() != "gone" || member(ack, "detail").Str() == "" {
		t.Errorf("cancel --json: %s", out)
	}
	// The text form says the same.
	out, errOut, code = run(t, "", "supervise", "cancel", dir, "--operation-id", "stop-dead", "--reason", "gone", "--wait", "300ms")
	if code != 1 || !strings.Contains(out, "cancel stop-dead of the run: ") {
		t.Errorf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	// A steer nobody acknowledges: --json says acknowledgement null,
	// with the request, and exits 1.
	out, errOut, code = run(t, "", "steer", dir, "note", "Stop.", "--operation-id", "steer-dead", "--wait", "300ms", "--json")
	if code != 1 {
		t.Errorf("steer --json of a run nobody acknowledges: exit %d, want 1\n%s%s", code, out, errOut)
	}
	st := decode(t, out)
	if a, ok := st.Get("acknowledgement"); !ok || a.Kind() != canonjson.Null {
		t.Errorf("steer --json: acknowledgement %v (present %v), want null: %s", a, ok, out)
	}
	if member(member(st, "request"), "operationId").Str() != "steer-dead" {
		t.Errorf("steer --json: %s", out)
	}
}
