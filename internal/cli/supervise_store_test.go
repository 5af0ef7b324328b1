package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// With --journal-in-store the spawn journal and the results live in the
// run store, not the run dir: a supervising process killed after its
// worker settled is resumed by another with an empty run dir of its own
// (another machine's) and the same --run-id; the settled worker is
// replayed with its output, not run again, the run ends with the winner,
// and the second process's progress comes from the store.
func TestSuperviseJournalInStoreResumesElsewhere(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	here, elsewhere := t.TempDir(), t.TempDir()
	first := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"hang": true}]}`)
	child := exec.Command(os.Args[0], "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", first, "--run-dir", here, "--run-id", "rel", "--db", db, "--journal-in-store", "--lease", "1s")
	child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	awaitStoreJournal(t, st, "rel", settledIn, func() string {
		child.Process.Kill()
		child.Wait()
		return "the first process never journaled its worker's settlement"
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if _, err := os.Stat(filepath.Join(here, supervise.SpawnJournalFile)); err == nil {
		t.Error("the run dir holds a spawn journal file; the store holds the journal")
	}

	second := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	args := []string{"supervise", supManager, "--worker", noteWriter, "--manager-script", second,
		"--run-dir", elsewhere, "--run-id", "rel", "--resume", "--db", db, "--journal-in-store", "--lease", "1s", "--json"}
	// Refused while the killed process's lease lasts (1 s).
	out, errOut, code := resumeOnceLeaseLapsed(t, args...)
	if code != 0 {
		t.Fatalf("resuming elsewhere: exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if !member(res, "resumed").Bool() || member(res, "status").Str() != "winner" {
		t.Errorf("not a resumed winner: %s", out)
	}
	if got := member(member(res, "winner"), "text").Str(); got != "Done: Write a note." {
		t.Errorf("the winner's text %q: the output did not travel with the journal", got)
	}
	workers := member(res, "workers").Items()
	if len(workers) != 1 || !member(workers[0], "replayed").Bool() {
		t.Errorf("the settled worker was not replayed: %s", out)
	}
	if !strings.Contains(errOut, "resuming run rel in the store") {
		t.Errorf("stderr does not say where the journal was read:\n%s", errOut)
	}
}
