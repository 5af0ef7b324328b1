package cli_test

import (
	"testing"
)

// A supervise process SIGKILLed before it wrote its run's first journal
// record (found by TestSuperviseKillAnywhereKeepsTheBooks: a kill 8–80 ms
// after start) leaves no run to continue: the same command with --resume
// starts the run, as --resume does for a run dir with no journal
// (journaledStart: "nil when the run has no journal yet, which --resume
// then starts") — with the journal in the run dir and in the store
// (SQLite, PostgreSQL) alike, never a bare "store: not found". RES-03.
func TestSuperviseResumeOfAnUnstartedRunStartsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs supervise end to end")
	}
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	for _, tt := range []struct {
		name    string
		inStore bool
		backend int
	}{{"file journal", false, 0}, {"sqlite journal in store", true, 0}, {"postgres journal in store", true, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			storeFlags := graphStoreBackends[tt.backend].flags(t)
			args := append([]string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
				"--manager-script", script, "--run-dir", t.TempDir(), "--run-id", "unstarted", "--expect", "Done", "--resume", "--json"}, storeFlags...)
			if tt.inStore {
				args = append(args, "--journal-in-store", "--lease", "1s")
			}
			out, errOut, code := run(t, "", args...)
			if code != 0 {
				t.Fatalf("--resume of a run with no journal yet: exit %d\n%s", code, errOut)
			}
			if got := member(decode(t, out), "kind").Str(); got != "winner" {
				t.Errorf("kind %q, want winner\n%s", got, out)
			}
		})
	}
}
