package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 run cancellation, "unknown is never zero": a run cancel nobody
// acknowledged (no supervisor holds the run) prints its record with no
// observedAt — the run never observed it — rather than observedAt 0, a
// time. Before, `agentrt cancel RUN-DIR --json` printed "observedAt": 0.
func TestRunCancelNobodyAnsweredHasNoObservedAt(t *testing.T) {
	dir := t.TempDir() // a run dir no supervisor holds (its lock released)
	if err := os.WriteFile(filepath.Join(dir, supervise.LockFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "", "cancel", dir, "--operation-id", "op-1", "--wait", "0", "--json")
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatalf("stdout is not one JSON record: %v\n%s", err, stdout)
	}
	if v, ok := rec["observedAt"]; ok {
		t.Errorf("observedAt = %v in a record no run wrote; want it absent", v)
	}
	if rec["effect"] != "cancel_requested" {
		t.Errorf("effect = %v, want cancel_requested (requested, not waited for)", rec["effect"])
	}
}
