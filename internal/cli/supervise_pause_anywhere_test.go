package cli_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// A five-worker supervise run with its journal in the store is paused
// (SIGSTOP) at seeded random instants (0–500 ms after start) past its 1 s
// lease; a second process resumes it from a run dir of its own and ends
// it; then the first is continued (SIGCONT). The first must not write
// into the journal after it lost the fence (the journal read after it
// exited is the one the second left), must exit non-zero saying it lost
// the run, and the second's result must be whole: each node spawned once
// and settled at most once, and a winner exactly when a delivery was
// journaled. SQLite and PostgreSQL. §9, behaviour 46; RES-03. About
// 45 s, skipped under -short.
func TestPausedAnywhereSupervisorLosesTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in child processes")
	}
	mgrScript := managerScript(t, killAnywhereManager)
	wrkScript := writeFile(t, "workers.json", killAnywhereWorkers)
	for bi, backend := range graphStoreBackends {
		t.Run(backend.name, func(t *testing.T) {
			storeFlags := backend.flags(t)
			st := backend.open(t, storeFlags)
			defer st.Close()
			fenced := 0
			for seed := range 6 {
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(bi)+100))
				runID := fmt.Sprintf("pause%d", seed)
				common := append([]string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
					"--manager-script", mgrScript, "--script", wrkScript, "--worker-tokens", "1000", "--budget-tokens", "20000",
					"--iterations", "10", "--expect", "Done", "--run-id", runID, "--journal-in-store", "--lease", "1s"}, storeFlags...)
				a := exec.Command(os.Args[0], append(common, "--run-dir", t.TempDir())...)
				a.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
				var aErr strings.Builder
				a.Stderr = &aErr
				if err := a.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- a.Wait() }()
				delay := time.Duration(rng.IntN(500)) * time.Millisecond
				select {
				case err := <-exited:
					t.Logf("seed %d: ended (%v) before its pause at %v", seed, err, delay)
					continue
				case <-time.After(delay):
				}
				if err := a.Process.Signal(syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				cont := func() { _ = a.Process.Signal(syscall.SIGCONT) }
				atPause := storeRecords(st, runID)
				preJournal := len(atPause) == 0
				// Paused after its run's end was journaled, it lost no
				// run: its result was committed under its lease (the
				// resume replays it) and it may exit 0.
				finished := slices.ContainsFunc(atPause, func(r supervise.Record) bool { return r.Kind == supervise.KindFinished })
				if preJournal {
					// Paused before its run-started record: the resume
					// below would start the run afresh, and the first,
					// continued, would find it taken — still checked.
					t.Logf("seed %d: paused at %v before its journal began", seed, delay)
				}
				time.Sleep(1500 * time.Millisecond) // past the 1 s lease
				out, errOut, code := resumeOnceLeaseLapsed(t, append(common, "--run-dir", t.TempDir(), "--resume", "--json")...)
				if code != 0 && backend.name == "sqlite" && strings.Contains(errOut, "SQLITE_BUSY") {
					// Paused inside a write it holds the file's lock:
					// nobody takes over until it goes on (checked in
					// TestPausedSuperviseProcessLosesTheRun).
					t.Logf("seed %d: paused at %v inside a write (SQLITE_BUSY)", seed, delay)
					cont()
					select {
					case <-exited:
					case <-time.After(time.Minute):
						_ = a.Process.Kill()
						t.Fatalf("seed %d: the continued process still ran a minute later", seed)
					}
					continue
				}
				if code != 0 && (code != 1 || !strings.Contains(out, `"kind"`)) {
					cont()
					_ = a.Process.Kill()
					<-exited
					t.Fatalf("seed %d: the resume after a pause at %v: exit %d\n%s", seed, delay, code, errOut)
				}
				before := journalText(storeRecords(st, runID))
				cont()
				var aExit error
				select {
				case aExit = <-exited:
				case <-time.After(30 * time.Second):
					_ = a.Process.Kill()
					<-exited
					t.Fatalf("seed %d: the continued process still ran 30 s after SIGCONT; stderr:\n%s", seed, aErr.String())
				}
				if !finished {
					fenced++
				}
				// Paused before its journal began, it finds the run the
				// resume started (or its store connection cut while it
				// stood still) and refuses; else it lost the fence.
				said := strings.Contains(aErr.String(), "lost the run's spawn journal") ||
					preJournal && (strings.Contains(aErr.String(), "already has a journal") || strings.Contains(aErr.String(), "opening the run store"))
				if aExit == nil && !finished || aExit != nil && !said {
					t.Errorf("seed %d (paused at %v): the continued process ended %v, want non-zero saying it lost the run; stderr:\n%s", seed, delay, aExit, aErr.String())
				}
				recs := storeRecords(st, runID)
				if after := journalText(recs); after != before {
					t.Errorf("seed %d (paused at %v): the continued process wrote into the journal it lost:\nbefore:\n%safter:\n%s", seed, delay, before, after)
				}
				delivered := checkOneSpawnEach(t, fmt.Sprintf("seed %d: ", seed), recs)
				if kind := member(decode(t, out), "kind").Str(); (kind == "winner") != delivered {
					t.Errorf("seed %d: the resume's kind %q with a delivery journaled %v", seed, kind, delivered)
				}
				t.Logf("seed %d: paused at %v; the resume %s; the first exited %v", seed, delay, member(decode(t, out), "kind").Str(), aExit)
			}
			if fenced == 0 {
				t.Error("no seed paused the first process with the run to take over")
			}
		})
	}
}
