package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// --timeout is the run's deadline (spec §3.6, §6: absolute, journaled,
// never slides on restore): a manager that hangs past it ends the run
// budget-exhausted (no winner, exit 1), not as a cancelled context; the
// deadline is in the journal's run-started record; and a resume refuses
// a new --timeout (exit 2), keeping the one it was started with.
func TestSuperviseTimeoutIsTheRunsDeadline(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	hang := managerScript(t, `{"turns": [{"hang": true}]}`)
	began := time.Now()
	out, errOut, code := run(t, "", superviseArgs(t, hang, dir, "--timeout", "1s", "--json", "--db", db)...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (no winner)\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if s, r := member(res, "status").Str(), member(res, "reason").Str(); s != "no-winner" || r != "budget-exhausted" {
		t.Errorf("status %q reason %q, want no-winner budget-exhausted\n%s", s, r, out)
	}
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil || len(recs) == 0 || recs[0].Kind != supervise.KindRunStarted {
		t.Fatalf("journal: %v %+v", err, recs)
	}
	deadline := time.UnixMilli(recs[0].DeadlineMS)
	if d := deadline.Sub(began); recs[0].DeadlineMS == 0 || d < time.Second || d > time.Minute {
		t.Errorf("journaled deadline %v after the start, want about 1s", d)
	}
	out, errOut, code = run(t, "", "supervise", supManager, "--worker", noteWriter, "--manager-script", hang,
		"--run-dir", dir, "--resume", "--db", db, "--timeout", "1h")
	if code != 2 || !strings.Contains(errOut, "keeps the deadline it was started with") {
		t.Errorf("resume with a new --timeout: exit %d, want 2\n%s%s", code, out, errOut)
	}
}
