package cli_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/store/sqlite"
)

// A run that agentrt supervise writes to its default place in the
// workspace, WORKSPACE/.agent/supervisor/RUN-ID, is what agentrt top
// WORKSPACE shows, with the run's totals taken from the journal and the
// worker logs the supervisor really wrote (runtime spec §11).
func TestTopShowsSuperviseRunsOfTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	for _, id := range []string{"first", "second"} {
		out, errOut, code := run(t, "", "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
			"--manager-script", script, "--workspace", ws, "--run-id", id, "--db", db, "--json")
		if code != 0 {
			t.Fatalf("supervise %s: exit %d\n%s%s", id, code, out, errOut)
		}
	}
	out, errOut, code := run(t, "", "top", "--once", "--db", db, ws)
	if code != 0 || errOut != "" {
		t.Fatalf("top: exit %d\n%s%s", code, out, errOut)
	}
	first, second := strings.Index(out, "\n  first "), strings.Index(out, "second ")
	if first < 0 || second < 0 || second > first {
		t.Errorf("want both workspace runs, the newer (second) first:\n%s", out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`second:s1 +note +done `),
		regexp.MustCompile(`TOTALS  1 worker\(s\): 1 done; 0 in flight, 1 settled`),
		// The worker ran its turn and settled: its latency is known.
		regexp.MustCompile(`latency n=1 min \S+ median \S+ p90 \S+ max \S+`),
	} {
		if !want.MatchString(out) {
			t.Errorf("frame lacks %s:\n%s", want, out)
		}
	}
	// With a store of its own, the newest run is the workspace's newest.
	empty := filepath.Join(t.TempDir(), "empty.db")
	s, err := sqlite.Open(context.Background(), empty, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, _, code = run(t, "", "top", "--once", "--db", empty, "--log", ws)
	if code != 0 || !strings.Contains(out, "log of run second") || !strings.Contains(out, "finished") {
		t.Errorf("top --log: exit %d, want the newest run's journal:\n%s", code, out)
	}
}
