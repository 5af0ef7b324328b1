package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// agentrt top reads a supervised run's store record as runs list does:
// its task shows, never "record unreadable" (docs/top.md: "For each run it
// shows the status, the task, the budget and the spend"). A supervised
// run's record is not an exact run's, so reading it as one was a defect
// a user meets on the README's first screen (supervise, then top).
func TestTopOnceSupervisedRunRecord(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"supervise", "../../examples/profiles/delegation-manager.json",
		"--task", "Write a release note", "--worker", "../../examples/profiles/note-writer.json",
		"--db", db, "--workspace", dir, "--run-id", "sup-top"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != 0 {
		t.Fatalf("supervise exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	code = Main(context.Background(), []string{"top", "--once", "--db", db, t.TempDir()},
		IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != 0 {
		t.Fatalf("top exit %d, stderr %q", code, errb.String())
	}
	frame := out.String()
	if strings.Contains(frame, "record unreadable") {
		t.Errorf("top cannot read a supervised run's record:\n%s", frame)
	}
	var row string
	for line := range strings.SplitSeq(frame, "\n") {
		if strings.Contains(line, "sup-top ") && strings.Contains(line, "supervise ") {
			row = line
		}
	}
	if !strings.Contains(row, `"Write a release note"`) {
		t.Errorf("the supervised run's row does not show its task: %q\n%s", row, frame)
	}
}
