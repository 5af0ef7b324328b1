package cli_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/flock"
	"github.com/agentrt/agentrt/supervise"
)

// dirContents is every file under dir, by its path relative to dir, as
// a digest of its content: what a refused command must leave as it was.
func dirContents(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			got[rel+"/"] = "dir"
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		got[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkUnchanged fails t when dir no longer holds exactly before.
func checkUnchanged(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	if after := dirContents(t, dir); !maps.Equal(before, after) {
		t.Errorf("the refused command wrote into %s:\nbefore %v\nafter  %v", dir, before, after)
	}
}

// holdRunDir takes dir's supervise.lock as a live supervisor on this
// host holds it (another open file of this process conflicts with it as
// another process's would), until the test ends.
func holdRunDir(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, supervise.LockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := flock.TryLock(f); err != nil {
		f.Close()
		t.Fatalf("taking %s: %v", supervise.LockFile, err)
	}
	t.Cleanup(func() {
		_ = flock.Unlock(f)
		f.Close()
	})
}

// CL15 item 1: `agentrt supervise --resume` (or graph --resume) of a run
// dir another live process holds is refused at its supervise.lock; the
// command must not first print "resuming DIR: N journaled records ...",
// which tells the user it resumed when it did not. The refusal names the
// dir and what to do (wait for the holder or stop it), exits non-zero,
// prints nothing on stdout (--json), and writes nothing into the dir.
// §3.6 "Persistence & resume" (supervise.lock, single-host ownership),
// behaviour 46, RES-03.
func TestResumeOfAHeldRunDirClaimsNoResume(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"supervise", "graph"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
			args := startArgs(command, "--task", "Write release notes.", "--run-dir", dir, "--run-id", "held", "--db", db)
			if _, errOut, code := run(t, "", args...); code != 0 {
				t.Fatalf("the first run: exit %d\n%s", code, errOut)
			}
			holdRunDir(t, dir)
			before := dirContents(t, dir)
			out, errOut, code := run(t, "", append(args, "--resume", "--json")...)
			if code == 0 {
				t.Errorf("the resume of a held run dir exited 0:\n%s", errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing: the resume was refused", out)
			}
			if strings.Contains(errOut, "resuming") {
				t.Errorf("stderr claims a resume that was refused:\n%s", errOut)
			}
			for _, want := range []string{dir, "is held by", "wait for it to end or stop it"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			checkUnchanged(t, dir, before)
		})
	}
}

// CL15 item 2: `agentrt graph --resume` aimed at an agentrt supervise
// run's dir (a journal without the graph's brief or topology), and
// `agentrt supervise --resume` aimed at a graph run's dir, are the wrong
// command for the run: each is refused as a usage error (exit 2, nothing
// on stdout even with --json) that says what kind of run the dir holds
// and which command resumes it — not a budget, task or profile mismatch
// that sends the user to change flags — and writes nothing into the dir.
// §3.6 (resume keeps the run's options), §3.7, RES-03.
func TestResumeWithTheOtherCommandIsRefused(t *testing.T) {
	t.Parallel()
	superviseRun := func(dir, db string) []string {
		return []string{"supervise", supManager, "--worker", noteWriter, "--run-dir", dir, "--run-id", "other", "--db", db}
	}
	graphRun := func(dir, db string) []string {
		return []string{"graph", reviewGraph, "--directives", directives, "--run-dir", dir, "--run-id", "other", "--db", db}
	}
	for _, tc := range []struct {
		name          string
		start, resume func(dir, db string) []string
		task          bool
		want          []string
	}{
		{"graph at a supervise run", superviseRun, graphRun, false, []string{"agentrt supervise run", "agentrt supervise", "--resume"}},
		{"graph at a supervise run, with --task", superviseRun, graphRun, true, []string{"agentrt supervise run", "agentrt supervise", "--resume"}},
		{"supervise at a graph run", graphRun, superviseRun, false, []string{"agentrt graph run", "agentrt graph", "--resume"}},
		{"supervise at a graph run, with --task", graphRun, superviseRun, true, []string{"agentrt graph run", "agentrt graph", "--resume"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
			if _, errOut, code := run(t, "", append(tc.start(dir, db), "--task", "Write release notes.")...); code != 0 {
				t.Fatalf("the first run: exit %d\n%s", code, errOut)
			}
			before := dirContents(t, dir)
			args := append(tc.resume(dir, db), "--resume", "--json")
			if tc.task {
				args = append(args, "--task", "Write release notes.")
			}
			out, errOut, code := run(t, "", args...)
			refusedAsUsage(t, out, errOut, code, append(tc.want, dir)...)
			checkUnchanged(t, dir, before)
		})
	}
}

// A --resume that forgets --journal-in-store, aimed at the dir of a run
// whose journal is in the store (the dir holds its coordination log,
// never a spawn-journal.jsonl), found no file journal there and started
// the run anew under the same id: its workers ran and spent again, a
// spawn-journal.jsonl was written into the store run's dir, and the run
// record then clashed with the store's journal (exit 1 after a "winner").
// And --journal-in-store given to resume a run journaled in its dir was
// refused as "run f in the store is a supervise run, not a spawn
// journal". Either is the user's mistake about where the journal is: a
// usage error saying where it is and which flag to add or drop, nothing
// written. RES-03 (a resume continues the journaled run, never a new
// one), §3.6 "Persistence & resume".
func TestResumeLooksForTheJournalWhereTheRunKeepsIt(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"supervise", "graph"} {
		for _, inStore := range []bool{true, false} {
			name := command + "/journal in the dir, resumed with --journal-in-store"
			if inStore {
				name = command + "/journal in the store, resumed without --journal-in-store"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
				args := startArgs(command, "--task", "Write release notes.", "--run-dir", dir, "--run-id", "where", "--db", db)
				first := args
				if inStore {
					first = append(first, "--journal-in-store")
				}
				if _, errOut, code := run(t, "", first...); code != 0 {
					t.Fatalf("the first run: exit %d\n%s", code, errOut)
				}
				before := dirContents(t, dir)
				resume := append(args, "--resume", "--json")
				want := []string{dir, "drop --journal-in-store"}
				if !inStore {
					resume = append(resume, "--journal-in-store")
				} else {
					want = []string{dir, "add --journal-in-store"}
				}
				out, errOut, code := run(t, "", resume...)
				refusedAsUsage(t, out, errOut, code, want...)
				checkUnchanged(t, dir, before)
			})
		}
	}
}

// A new run (no --resume) aimed at the dir of a run whose journal is
// kept elsewhere than the flags say is a run id reused, as a new run
// into a dir with a journal is (RunExistsError): without
// --journal-in-store at a store run's dir it found no file journal and
// ran the run again under its id, spending again; with
// --journal-in-store on another store at a dir-journal run's dir it
// started a new run over that run's state, progress and streams. Both
// are refused as usage errors naming the dir and the way on (--resume
// with the right journal flag, or another --run-dir), nothing written.
// §3.6 ("an existing runId without resume is refused"), RES-03.
func TestNewRunIntoADirJournaledElsewhereIsRefused(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"supervise", "graph"} {
		for _, inStore := range []bool{true, false} {
			name := command + "/journal in the dir, new run with --journal-in-store"
			if inStore {
				name = command + "/journal in the store, new run without --journal-in-store"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				args := startArgs(command, "--task", "Write release notes.", "--run-dir", dir, "--run-id", "again")
				first := append(args, "--db", filepath.Join(t.TempDir(), "runs.db"))
				if inStore {
					first = append(first, "--journal-in-store")
				}
				if _, errOut, code := run(t, "", first...); code != 0 {
					t.Fatalf("the first run: exit %d\n%s", code, errOut)
				}
				before := dirContents(t, dir)
				// Another store: the run's own one knows its id already.
				again := append(args, "--db", filepath.Join(t.TempDir(), "other.db"), "--json")
				want := []string{dir, "--resume"}
				if !inStore {
					again = append(again, "--journal-in-store")
				} else {
					want = append(want, "--journal-in-store")
				}
				out, errOut, code := run(t, "", again...)
				refusedAsUsage(t, out, errOut, code, want...)
				checkUnchanged(t, dir, before)
			})
		}
	}
}

// Two processes resuming one store-journaled run at once, each from a
// run dir of its own (two machines): the one refused for the other's
// live lease must leave its dir as it found it — empty — so that the
// dir does not read as a run of its own (agentrt top, a later resume or
// new run there), and say who holds the run and what to do, exit
// non-zero, nothing on stdout, no "resuming" claim. Behaviour 46, §9
// (one supervisor per run), RES-03.
func TestStoreResumeRefusedForALiveLeaseWritesNothing(t *testing.T) {
	t.Parallel()
	for _, backend := range graphStoreBackends {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			storeFlags := backend.flags(t)
			args := append([]string{"supervise", supManager, "--worker", noteWriter, "--task", "Write release notes.",
				"--run-id", "leased", "--journal-in-store"}, storeFlags...)
			if _, errOut, code := run(t, "", append(args, "--run-dir", t.TempDir())...); code != 0 {
				t.Fatalf("the first run: exit %d\n%s", code, errOut)
			}
			// Another process holds the run now (its lease is live).
			st := backend.open(t, storeFlags)
			defer st.Close()
			held, err := supervise.OpenStoreSpawnLog(t.Context(), st, "leased", supervise.StoreSpawnLogOptions{Owner: "elsewhere/1", LeaseTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			dir := t.TempDir()
			out, errOut, code := run(t, "", append(args, "--run-dir", dir, "--resume", "--json")...)
			if code == 0 || out != "" || strings.Contains(errOut, "resuming") {
				t.Errorf("exit %d, stdout %q; want a refusal, nothing on stdout, no resume claimed:\n%s", code, out, errOut)
			}
			for _, want := range []string{"elsewhere/1", "holds run leased's lease", "let it finish or stop it"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			checkUnchanged(t, dir, map[string]string{"./": "dir"})
		})
	}
}

// startArgs is the command line that starts the release-notes run of
// command ("supervise" or "graph": the same work as a manager with its
// note writer or as the review graph), followed by extra. Its capacity
// is its length, so an append to it never writes into another's.
func startArgs(command string, extra ...string) []string {
	args := []string{"supervise", supManager, "--worker", noteWriter}
	if command == "graph" {
		args = []string{"graph", reviewGraph, "--directives", directives}
	}
	return slices.Clip(append(args, extra...))
}
