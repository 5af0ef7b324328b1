package cli_test

import (
	"strings"
	"testing"
	"time"
)

// Issue 14 (runs events --after on fleet runs): the cursor each JSON
// line of a fleet run's events carries resumes after that event, as a
// local run's does: `runs events RUN --after CURSOR` prints exactly the
// lines after it. A store cursor alone (naming no attempt) or a cursor
// of an attempt the run does not have is a usage error that says what
// to give.
func TestRunsEventsAfterOnAFleetRun(t *testing.T) {
	t.Parallel()
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "note.json", `{"turns":[{"repeat":true,"steps":[{"text":"one "},{"text":"two "},{"text":"three"}]}]}`)
	_, logs := startWorkerProcess(t, conn, schema, "events-worker", script)
	out, errOut, code := run(t, "", append([]string{"fleet", "submit", noteWriter, "--task", "Count."}, db...)...)
	runID := strings.TrimSpace(out)
	if code != 0 || runID == "" {
		t.Fatalf("fleet submit: %d %q %s", code, out, errOut)
	}
	out, errOut, code = runWithin(t, 2*time.Minute, "runs", "events", runID, "--follow", "--json", "--database", conn)
	if code != 0 {
		t.Fatalf("runs events --follow: %d %s %s\nworker:\n%s", code, out, errOut, logs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 {
		t.Fatalf("the fleet run recorded %d events:\n%s", len(lines), out)
	}
	for i, line := range lines {
		cursor := member(decode(t, line), "cursor").Str()
		if !strings.HasPrefix(cursor, "g1/c") {
			t.Fatalf("event %d's cursor %q is not a fleet cursor", i+1, cursor)
		}
		after, errOut, code := run(t, "", "runs", "events", runID, "--after", cursor, "--json", "--database", conn)
		if code != 0 {
			t.Fatalf("runs events --after %s: %d %s", cursor, code, errOut)
		}
		if want := strings.Join(lines[i+1:], "\n"); strings.TrimSpace(after) != want {
			t.Fatalf("runs events --after %s printed\n%s\nwant\n%s", cursor, after, want)
		}
	}
	for _, bad := range []string{"c0000000000000000001", "g7/c0000000000000000001", "g1/nonsense"} {
		if _, errOut, code := run(t, "", "runs", "events", runID, "--after", bad, "--database", conn); code != 2 || !strings.Contains(errOut, "g<generation>/<event cursor>") {
			t.Errorf("runs events --after %s on a fleet run: %d %s; want a usage error showing the cursor's form", bad, code, errOut)
		}
	}
}
