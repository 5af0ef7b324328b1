package supervise_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// Issue 13: RunDirFor is injective. Distinct run ids name distinct run
// directories (created here, for real, one per id: none finds its
// directory already there), a plain id ([A-Za-z0-9._-]) keeps the
// directory it always had (an existing run dir still resumes), and no
// other id's directory can be a plain id's.
func TestRunDirForIsInjective(t *testing.T) {
	root := t.TempDir()
	sup := filepath.Join(root, filepath.FromSlash(supervise.SupervisorDir))
	if err := os.MkdirAll(sup, 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 300)
	ids := []string{
		"a:b", "a b", "a_b", "a%3Ab", "a%3ab", "a\x00b", "a/b", `a\b`, "a\xffb", "a\u00ffb", "a_3Ab",
		".", "..", "_.", "_..", "...", "", "worker", "%", "run-1", "run1:s1", "run1_s1",
		long, long + ":", long + "_", strings.Repeat(":", 300), strings.Repeat("é", 200),
	}
	seen := map[string]string{}
	for _, id := range ids {
		dir := supervise.RunDirFor(root, id)
		if filepath.Dir(dir) != sup {
			t.Errorf("RunDirFor(%q) = %q, want a directory directly under %q", id, dir, sup)
			continue
		}
		if other, ok := seen[dir]; ok {
			t.Errorf("RunDirFor(%q) = RunDirFor(%q) = %s: two runs share one directory", id, other, dir)
			continue
		}
		seen[dir] = id
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Errorf("run %q: making its directory %s: %v", id, dir, err)
		}
	}
	for _, id := range []string{"run-1", "a_b", "_.", "worker", "A.b-c_9", long[:255]} {
		if got, want := supervise.RunDirFor(root, id), filepath.Join(sup, id); got != want {
			t.Errorf("plain id %q: RunDirFor = %s, want %s (where its run dir always was)", id, got, want)
		}
	}
}

// Issue 13: runs "a:b" and "a_b" in one workspace are two runs: the
// second starts (it is not refused as the first's journal), and each
// resumes its own.
func TestWorkspaceRootRunIDsDoNotCollide(t *testing.T) {
	root := t.TempDir()
	manager := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	for _, id := range []string{"a_b", "a:b"} {
		o := baseOptions(t, newCounting(t, workerProvider(t)), twoWorkerManager())
		o.WorkspaceRoot, o.RunID = root, id
		res, err := supervise.Supervise(context.Background(), manager, "ship a note", o)
		if err != nil || res.Status != supervise.StatusWinner {
			t.Fatalf("run %q: Supervise = %s, %v; want a winner of its own", id, res.Status, err)
		}
	}
	for _, id := range []string{"a_b", "a:b"} {
		st, err := supervise.ReadRunState(context.Background(), supervise.RunDirFor(root, id))
		if err != nil || st.RunID != id {
			t.Errorf("run %q: its state names run %q (%v)", id, st.RunID, err)
		}
	}
}

// Issue 13: a run directory's state.json names its run; a run opened on
// a directory whose state names another run is refused, and the other
// run's state is left as it was (not adopted, not overwritten).
func TestRunDirStateOfAnotherRunIsRefused(t *testing.T) {
	dir := t.TempDir()
	manager := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	o := baseOptions(t, newCounting(t, workerProvider(t)), twoWorkerManager())
	o.RunDir, o.RunID = dir, "first"
	if _, err := supervise.Supervise(context.Background(), manager, "ship a note", o); err != nil {
		t.Fatal(err)
	}
	// The journal is gone (kept elsewhere, or removed by hand); the
	// state still names run "first".
	if err := os.Remove(filepath.Join(dir, supervise.SpawnJournalFile)); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(dir, supervise.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	o = baseOptions(t, newCounting(t, workerProvider(t)), twoWorkerManager())
	o.RunDir, o.RunID = dir, "second"
	_, err = supervise.Supervise(context.Background(), manager, "ship a note", o)
	var mismatch *supervise.RunDirMismatchError
	if !errors.As(err, &mismatch) || mismatch.Recorded != "first" || mismatch.RunID != "second" {
		t.Fatalf("Supervise on another run's directory = %v, want a *RunDirMismatchError naming first and second", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, supervise.StateFile))
	if !bytes.Equal(before, after) {
		t.Errorf("the refused run changed the other run's state.json:\n%s\nwant\n%s", after, before)
	}
}

// Issue 13: a run started before the mapping became one-to-one lives in
// the directory its id made then ("a_b" for "a:b"). A resume in the
// workspace finds it there by its id, as its state records it, and
// replays it (nothing runs again); the run "a_b" never takes it.
func TestWorkspaceRootResumesARunInItsEarlierDirectory(t *testing.T) {
	root := t.TempDir()
	legacy := filepath.Join(root, filepath.FromSlash(supervise.SupervisorDir), "a_b")
	manager := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	exec := newCounting(t, workerProvider(t))
	o := baseOptions(t, exec, twoWorkerManager())
	o.RunDir, o.RunID = legacy, "a:b"
	first, err := supervise.Supervise(context.Background(), manager, "ship a note", o)
	if err != nil || first.Status != supervise.StatusWinner {
		t.Fatalf("the earlier run: %s, %v", first.Status, err)
	}
	if got := supervise.RunDirIn(root, "a:b"); got != legacy {
		t.Errorf("RunDirIn(a:b) = %s, want the run's earlier directory %s", got, legacy)
	}
	if got, want := supervise.RunDirIn(root, "a_b"), legacy; got != want {
		t.Errorf("RunDirIn(a_b) = %s, want %s (a plain id's own directory)", got, want)
	}
	if got, want := supervise.RunDirIn(root, "a b"), supervise.RunDirFor(root, "a b"); got != want {
		t.Errorf("RunDirIn(\"a b\") = %s, want %s: the earlier directory records run a:b", got, want)
	}
	o = baseOptions(t, exec, twoWorkerManager())
	o.WorkspaceRoot, o.RunID, o.Resume = root, "a:b", true
	again, err := supervise.Supervise(context.Background(), manager, "ship a note", o)
	if err != nil || !again.Resumed || again.Winner == nil || again.Winner.OutRef != first.Winner.OutRef {
		t.Fatalf("resume in the workspace = %+v, %v; want the earlier run's winner, resumed", again, err)
	}
	if exec.count("alpha") != 1 {
		t.Errorf("alpha ran %d times; the resume must replay it", exec.count("alpha"))
	}
}
