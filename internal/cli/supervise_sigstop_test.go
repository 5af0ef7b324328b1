package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// journalText is run runID's spawn journal in the store, one record a
// line, for comparing two reads.
func journalText(recs []supervise.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "%s %s %s %s\n", r.Kind, r.Node, r.State, r.Reason)
	}
	return b.String()
}

// checkOneSpawnEach fails t, prefixing what, when a node of recs was
// journaled spawned more than once, settled more than once, or settled
// before its spawn; it reports whether a settlement was delivered.
func checkOneSpawnEach(t *testing.T, what string, recs []supervise.Record) (delivered bool) {
	t.Helper()
	spawned, settled := map[supervise.NodeID]int{}, map[supervise.NodeID]int{}
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindSpawned:
			spawned[r.Node]++
		case supervise.KindSettled:
			if spawned[r.Node] == 0 {
				t.Errorf("%s%s settled before its spawn:\n%s", what, r.Node, journalText(recs))
			}
			settled[r.Node]++
			delivered = delivered || r.Delivered
		}
	}
	for id, n := range spawned {
		if n != 1 || settled[id] > 1 {
			t.Errorf("%s%s: %d spawn rows, %d settlements, want one spawn and at most one settlement:\n%s", what, id, n, settled[id], journalText(recs))
		}
	}
	return delivered
}

// Task L: the supervise process itself is paused (SIGSTOP) past its
// --lease while its worker runs, on SQLite and PostgreSQL. A second
// process resumes the run elsewhere and wins it. The first, continued
// (SIGCONT), must not write into the journal it lost, must exit non-zero
// saying it lost the run, and the journal must hold one spawn row per
// node and one settlement per node, each after its spawn.
func TestPausedSuperviseProcessLosesTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in child processes")
	}
	for _, backend := range graphStoreBackends {
		t.Run(backend.name, func(t *testing.T) {
			storeFlags := backend.flags(t)
			slow := writeFile(t, "slow.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "drafting"}, {"delayMs": 600000}]}]}`)
			fast := writeFile(t, "fast.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "Done: the note."}]}]}`)
			// The resumed manager goes on from its recorded spawn and the
			// await it was in; that await finds the paused worker gone
			// from the run (in doubt), and its next turn spawns again.
			script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
			common := append([]string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
				"--manager-script", script, "--run-id", "paused", "--journal-in-store", "--lease", "2s",
				"--worker-tokens", "1000", "--expect", "Done"}, storeFlags...)

			a := exec.Command(os.Args[0], append(common, "--run-dir", t.TempDir(), "--script", slow)...)
			a.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
			var aErr strings.Builder
			a.Stderr = &aErr
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			var aExit error
			exited := make(chan struct{})
			go func() { aExit = a.Wait(); close(exited) }()
			defer func() {
				_ = a.Process.Signal(syscall.SIGCONT)
				_ = a.Process.Kill()
				<-exited
			}()
			st := backend.open(t, storeFlags)
			defer st.Close()
			bound := func(recs []supervise.Record) bool {
				for _, r := range recs {
					if r.Kind == supervise.KindExecutionBound {
						return true
					}
				}
				return false
			}
			awaitStoreJournal(t, st, "paused", bound, func() string { return "stderr:\n" + aErr.String() })
			if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()

			out, errOut, code := resumeOnceLeaseLapsed(t, append(common, "--run-dir", t.TempDir(), "--script", fast, "--resume", "--json")...)
			t.Logf("resumed %v after SIGSTOP: exit %d\n%s", time.Since(stopped).Round(time.Millisecond), code, errOut)
			if code != 0 && backend.name == "sqlite" && strings.Contains(errOut, "SQLITE_BUSY") {
				// Paused inside a write, the first process holds the
				// file's write lock: nothing can take the run over until
				// it goes on, and the resume must say so, not corrupt.
				// Continued, it is still the holder, unless the resume
				// took the lapsed lease before its write met the lock:
				// then the continued process has lost the run (fenced by
				// the newer generation) and a further resume must win it.
				// Which it is, the store's lease generation says: the
				// resume that met the lock has ended, and only a takeover
				// raises it (the continued process renews its own).
				gen := journalGeneration(t, st, "paused")
				superseded := gen > 1
				t.Logf("the resume met the paused holder's write lock; the journal's lease generation is %d", gen)
				if err := a.Process.Signal(syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
				if superseded {
					select {
					case <-exited:
					case <-time.After(time.Minute):
						t.Fatalf("the superseded holder still runs a minute after SIGCONT; stderr:\n%s", aErr.String())
					}
					if aExit == nil || !strings.Contains(aErr.String(), "lost the run's spawn journal") {
						t.Fatalf("the superseded process ended %v without saying it lost the run; stderr:\n%s", aExit, aErr.String())
					}
					out, errOut, code = resumeOnceLeaseLapsed(t, append(common, "--run-dir", t.TempDir(), "--script", fast, "--resume", "--json")...)
					if code != 0 || member(decode(t, out), "status").Str() != "winner" {
						t.Errorf("a resume after the superseded holder ended: exit %d, want a winner:\n%s%s", code, out, errOut)
					}
					return
				}
				// Still the holder: it goes on and renews its lease — or,
				// when its first renewal after SIGCONT does not get
				// through (its own write still finishing) while the
				// lease it last wrote has run out, it gives the run up
				// as lapsed (past its lease another process may have
				// taken over) and says so; a further resume then wins.
				for deadline := time.Now().Add(time.Minute); !leaseHeld(st, "paused"); time.Sleep(100 * time.Millisecond) {
					select {
					case <-exited:
						if aExit == nil || !strings.Contains(aErr.String(), "lost the run's spawn journal") {
							t.Fatalf("the continued holder, never superseded, ended %v without saying it gave the run up; stderr:\n%s", aExit, aErr.String())
						}
						t.Logf("the continued holder gave up its lapsed lease: %v", aExit)
						out, errOut, code = resumeOnceLeaseLapsed(t, append(common, "--run-dir", t.TempDir(), "--script", fast, "--resume", "--json")...)
						if code != 0 || member(decode(t, out), "status").Str() != "winner" {
							t.Errorf("a resume after the holder gave its lapsed lease up: exit %d, want a winner:\n%s%s", code, out, errOut)
						}
						return
					default:
					}
					if time.Now().After(deadline) {
						t.Fatalf("the continued holder did not renew its lease within a minute; stderr:\n%s", aErr.String())
					}
				}
				_, errOut, code = run(t, "", append(common, "--run-dir", t.TempDir(), "--script", fast, "--resume")...)
				if code == 0 || !strings.Contains(errOut, "holds the run's spawn journal") {
					t.Errorf("a resume while the continued holder runs: exit %d, want refused as held:\n%s", code, errOut)
				}
				if rec := aErr.String(); strings.Contains(rec, "lost") {
					t.Errorf("the continued holder lost the run no one took over:\n%s", rec)
				}
				return
			}
			if code != 0 {
				t.Fatalf("the resume: exit %d\n%s%s", code, out, errOut)
			}
			res := decode(t, out)
			if st := member(res, "status").Str(); st != "winner" {
				t.Errorf("the resume's status %q, want winner:\n%s", st, out)
			}
			before := journalText(storeRecords(st, "paused"))

			if err := a.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				t.Fatalf("the continued process still runs 30 s after SIGCONT; stderr:\n%s", aErr.String())
			}
			if aExit == nil || !strings.Contains(aErr.String(), "lost the run's spawn journal") {
				t.Errorf("the continued process ended %v, want non-zero saying it lost the run; stderr:\n%s", aExit, aErr.String())
			}
			time.Sleep(500 * time.Millisecond)
			recs := storeRecords(st, "paused")
			if after := journalText(recs); after != before {
				t.Errorf("the continued process wrote into the journal it lost:\nbefore:\n%safter:\n%s", before, after)
			}
			// The paused worker is left in doubt (its kernel run's lease
			// outlasts the take-over) and the manager spawns again.
			checkOneSpawnEach(t, "", recs)
			t.Logf("journal:\n%sfirst's stderr:\n%s", journalText(recs), aErr.String())
		})
	}
}
