package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// CL16 item 2: a --resume whose --run-id is not the run its --run-dir
// holds is the flags of another run, the user's mistake about which run
// to continue, as a --resume at the other command's run or at a run
// journaled elsewhere is: a usage error (exit 2) naming the dir and the
// run it holds, nothing on stdout even with --json, nothing written
// into the dir. RES-03 (a resume continues the journaled run with the
// flags that started it), §3.6 "Persistence & resume".
func TestResumeWithAnotherRunIDIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, command := range []string{"supervise", "graph"} {
		t.Run(command, func(t *testing.T) {
			t.Parallel()
			dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
			args := startArgs(command, "--task", "Write release notes.", "--run-dir", dir, "--db", db)
			if _, errOut, code := run(t, "", append(args, "--run-id", "first")...); code != 0 {
				t.Fatalf("the first run: exit %d\n%s", code, errOut)
			}
			before := dirContents(t, dir)
			out, errOut, code := run(t, "", append(args, "--run-id", "second", "--resume", "--json")...)
			refusedAsUsage(t, out, errOut, code, dir, `"first"`, `"second"`, "--run-id first")
			checkUnchanged(t, dir, before)
			// A new run under another id in the dir: the same mistake,
			// the same exit status.
			out, errOut, code = run(t, "", append(args, "--run-id", "second", "--json")...)
			refusedAsUsage(t, out, errOut, code, dir, `"first"`, `"second"`, "another --run-dir")
			checkUnchanged(t, dir, before)
		})
	}
}

// CL16 item 3: a run journaled in the store (--journal-in-store) takes
// no supervise.lock in its run dir, and a --resume may continue it from
// another run dir (another machine). Its supervisor answers control
// requests only in its own run dir: agentrt steer and agentrt cancel
// aimed at the dir the run was started in, after its first process died
// and another took the run over elsewhere, get no answer. They must say
// so — the run's journal is in the store, a supervisor that resumed it
// elsewhere answers only there — not only "is its supervisor running?"
// while one is. The same requests at the new dir reach it. Behaviours
// 48-50, §3.6 "Persistence & resume", §9.
func TestControlAtTheOldDirOfAStoreRunTakenOverElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	oldDir, newDir, db := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 600000}, {"text": " done."}]}]}`)
	// The first process awaits s1 for ever; the one that takes the run
	// over finds s1 in doubt and spawns s2, which it awaits as long.
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+
		`{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "again", "task": "Write a note."}}]}, `+
		awaitOne+`, {"text": "Stopped."}, {"text": " Spare."}]}`)
	common := []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", script, "--script", slow, "--run-id", "moved", "--db", db, "--journal-in-store", "--lease", "6s", "--worker-tokens", "1000"}

	first := exec.Command(os.Args[0], append(common, "--run-dir", oldDir)...)
	first.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	var firstErr strings.Builder
	first.Stderr = &firstErr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = first.Wait(); close(exited) }()
	defer func() { _ = first.Process.Kill(); <-exited }()
	st := graphStoreBackends[0].open(t, []string{"--db", db})
	defer st.Close()
	awaitStoreJournal(t, st, "moved", func(recs []supervise.Record) bool { return slicesContainsKind(recs, supervise.KindExecutionBound) },
		func() string { return "no worker was bound; stderr:\n" + firstErr.String() })
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("the killed supervisor did not exit")
	}

	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := resumeOnceLeaseLapsed(t, append(common, "--run-dir", newDir, "--resume", "--json")...)
		done <- result{out, errOut, code}
	}()
	defer func() {
		// The run ends cancelled at its new dir, whatever the asserts
		// below found.
		_, _, _ = run(t, "", "cancel", newDir, "--operation-id", "end-it", "--wait", "30s")
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Error("the resumed supervisor did not end after its cancel")
		}
	}()
	// Taken over: the journal's lease generation is raised.
	for deadline := time.Now().Add(2 * time.Minute); journalGeneration(t, st, "moved") < 2 || !leaseHeld(st, "moved"); {
		select {
		case res := <-done:
			done <- res
			t.Fatalf("the resume ended: exit %d\n%s%s", res.code, res.out, res.errOut)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no process took the run over (generation %d)", journalGeneration(t, st, "moved"))
		}
	}

	const elsewhere = "resumed it from another run dir"
	out, errOut, code := run(t, "", "steer", oldDir, "moved:s1", "keep it short", "--wait", "2s")
	if code != 1 || !strings.Contains(errOut, elsewhere) || !strings.Contains(errOut, "journal is in the store") {
		t.Errorf("steer at the old dir: exit %d, want 1 saying the run may be held from another run dir\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", oldDir, "--wait", "2s", "--json")
	if code != 1 || !strings.Contains(errOut, elsewhere) || member(decode(t, out), "effect").Str() != "unknown" {
		t.Errorf("cancel at the old dir: exit %d, want 1, effect unknown, saying the run may be held from another run dir\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// The store does say who holds the run: agentrt runs cancel, given
	// the store, names the process (host/pid) and how long its lease
	// lasts where it sends the user to the run dir, the kernel cancelling
	// no supervised run.
	holder := fmt.Sprintf("/%d", os.Getpid())
	out, errOut, code = run(t, "", "runs", "cancel", "moved", "--db", db, "--json")
	if code != 1 || member(decode(t, out), "effect").Str() != "unknown" || !strings.Contains(errOut, holder) || !strings.Contains(errOut, "lease") {
		t.Errorf("runs cancel of the store-journaled run: exit %d, want 1, unknown, naming its holder (%s)\nstdout: %s\nstderr: %s", code, holder, out, errOut)
	}
	// At its new dir the supervisor takes the steer (held for the
	// worker's next turn, or delivered).
	out, errOut, code = run(t, "", "steer", newDir, "moved:s2", "keep it short", "--wait", "20s")
	if !strings.Contains(out, "to moved:s2: unknown after") && !(code == 0 && strings.Contains(out, "delivered")) {
		t.Errorf("steer at the new dir: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(errOut, elsewhere) {
		t.Errorf("the steer the supervisor took says it may be elsewhere:\n%s", errOut)
	}
}

// CL16 item 4: a whole run's cancellation carries the operator's
// --reason and --operator into the run dir's run.request.json, which the
// supervisor reads only up to supervise.MaxControlFileBytes. Text that
// JSON-escapes past it (each '<' is six bytes) was written all the same:
// the supervisor could not read the request, so the run was never
// cancelled, and every later cancellation of the run failed on the
// oversized file. Text past the bound is a usage error, nothing written,
// and the run is still cancellable. Behaviour 50, §3.6 "Cancellation".
func TestCancelWithOversizedTextIsRefusedAndTheRunStaysCancellable(t *testing.T) {
	dir := t.TempDir()
	done := startLiveRun(t, dir, "big")
	huge := strings.Repeat("<", 100<<10)
	for name, args := range map[string][]string{
		"--reason":   {"--reason", huge, "--operator", huge},
		"--operator": {"--operator", huge + huge},
	} {
		out, errOut, code := run(t, "", append([]string{"cancel", dir, "--wait", "3s", "--json"}, args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, name) {
			t.Errorf("cancel with an oversized %s: exit %d, want 2 naming it, nothing on stdout\nstdout: %.200s\nstderr: %.300s", name, code, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, supervise.RunCancelRequestFile)); err == nil {
		t.Errorf("a refused cancellation left %s", supervise.RunCancelRequestFile)
	}
	out, errOut, code := run(t, "", "cancel", dir, "--reason", "not needed", "--wait", "30s")
	if code != 0 || !strings.Contains(out, "cancelled") {
		t.Errorf("the cancellation after the refused one: exit %d\n%s%s", code, out, errOut)
	}
	select {
	case res := <-done:
		if !strings.Contains(res.out, `"reason": "cancelled"`) {
			t.Errorf("the run did not end cancelled: exit %d\n%.2000s", res.code, res.out)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end after its cancellation")
	}
}

// liveRunResult is what the agentrt supervise of startLiveRun printed.
type liveRunResult struct {
	out, errOut string
	code        int
}

// startLiveRun starts agentrt supervise --json of run runID in dir, its
// one worker (runID:s1, label note) inside a ten-minute turn, and
// returns once the worker is spawned; the channel gets the command's
// output when it ends (cancel the run to end it).
func startLiveRun(t *testing.T, dir, runID string) <-chan liveRunResult {
	t.Helper()
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 600000}, {"text": " done."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"text": "Stopped."}, {"text": " Spare."}]}`)
	done := make(chan liveRunResult, 1)
	go func() {
		out, errOut, code := run(t, "", "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
			"--manager-script", script, "--script", slow, "--run-dir", dir, "--run-id", runID, "--json")
		done <- liveRunResult{out, errOut, code}
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if recs, _, err := supervise.ReadRunDir(context.Background(), dir); err == nil && slicesContainsKind(recs, supervise.KindSpawned) {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatal("the run spawned no worker")
		}
	}
}

// CL16 item 1, the live run's arms of agentrt steer and agentrt cancel,
// each with its human and its --json answer: a worker the running
// supervisor does not have is refused (steer) or unknown (cancel: it
// stays open), exit 1, the answer saying so; the run's own cancellation
// is cancelled, exit 0, and asking again reports it. (An ended run's arms, not_live with exit 1 for a cancellation
// and a steer alike: TestControlOfAFinishedRunNamesAWorkerItNeverHad;
// a dir with no run, exit 2: TestSteerCancelRefuseADirectoryThatHoldsNoRun.)
// Behaviours 48-50, §3.6 "Cancellation".
func TestControlArmsOfALiveRun(t *testing.T) {
	dir := t.TempDir()
	done := startLiveRun(t, dir, "arms")
	ended := false
	defer func() {
		if !ended {
			_, _, _ = run(t, "", "cancel", dir, "--operation-id", "end-it", "--wait", "30s")
			<-done
		}
	}()
	out, errOut, code := run(t, "", "steer", dir, "nobody", "Be brief.", "--wait", "20s")
	if code != 1 || !strings.Contains(out, "to nobody: refused") {
		t.Errorf("steer to no worker: exit %d, want 1 refused\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "steer", dir, "nobody", "Be brief.", "--wait", "20s", "--json")
	if ack := member(decode(t, out), "acknowledgement"); code != 1 || member(ack, "effect").Str() != "refused" || !strings.Contains(member(ack, "detail").Str(), "nobody") {
		t.Errorf("steer --json to no worker: exit %d, want 1 and a refused acknowledgement naming it\n%s%s", code, out, errOut)
	}
	// A cancellation of a label the run has not spawned stays open (it
	// applies if the manager spawns it: behaviour 49), so within --wait
	// it is unknown, never success, and says it may still apply.
	out, errOut, code = run(t, "", "cancel", dir, "nobody", "--wait", "2s")
	if code != 1 || !strings.Contains(out, "of nobody: unknown") || !strings.Contains(errOut, "may still apply it") {
		t.Errorf("cancel of no worker: exit %d, want 1 unknown\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "nobody", "--wait", "2s", "--json")
	if v := decode(t, out); code != 1 || member(v, "effect").Str() != "unknown" || member(v, "worker").Str() != "nobody" {
		t.Errorf("cancel --json of no worker: exit %d, want 1 and effect unknown for it\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "--wait", "30s", "--json")
	if v := decode(t, out); code != 0 || member(v, "effect").Str() != "cancelled" {
		t.Errorf("cancel --json of the run: exit %d, want 0 cancelled\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "--wait", "30s")
	if code != 0 || !strings.Contains(out, "of the run: cancelled") {
		t.Errorf("cancel of the run, again: exit %d, want 0 and its cancelled outcome\n%s%s", code, out, errOut)
	}
	select {
	case <-done:
		ended = true
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not end after its cancellation")
	}
}

// A run whose supervisor was killed (its state still says running, its
// supervise.lock held by no process) has nobody to answer a steer or a
// cancellation. agentrt steer and agentrt cancel asked "is its
// supervisor running?" (or said the run "may still apply" the
// cancellation) when the run dir tells that none is: they say so, and
// that a --resume answers the request. Behaviours 48-50, §3.6
// "Persistence & resume" (supervise.lock), RES-03.
func TestControlOfARunWhoseSupervisorIsGoneSaysSo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	dir := t.TempDir()
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 600000}, {"text": " done."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"text": "Stopped."}]}`)
	sup := exec.Command(os.Args[0], "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", script, "--script", slow, "--run-dir", dir, "--run-id", "gone")
	sup.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	var supErr strings.Builder
	sup.Stderr = &supErr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = sup.Wait(); close(exited) }()
	defer func() { _ = sup.Process.Kill(); <-exited }()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if recs, _, err := supervise.ReadRunDir(context.Background(), dir); err == nil && slicesContainsKind(recs, supervise.KindSpawned) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run spawned no worker; stderr:\n%s", supErr.String())
		}
	}
	if err := sup.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("the killed supervisor did not exit")
	}
	const gone = "no supervisor drives"
	out, errOut, code := run(t, "", "steer", dir, "gone:s1", "keep it short", "--wait", "1s")
	if code != 1 || !strings.Contains(errOut, gone) || !strings.Contains(errOut, "--resume") {
		t.Errorf("steer of a run whose supervisor is gone: exit %d, want 1 saying no supervisor drives it\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "gone:s1", "--wait", "1s", "--json")
	if code != 1 || !strings.Contains(errOut, gone) || member(decode(t, out), "effect").Str() != "unknown" {
		t.Errorf("cancel of a worker of a run whose supervisor is gone: exit %d, want 1, unknown, saying no supervisor drives it\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "cancel", dir, "--wait", "1s")
	if code != 1 || !strings.Contains(errOut, gone) || !strings.Contains(out, "unknown") {
		t.Errorf("cancel of a run whose supervisor is gone: exit %d, want 1, unknown, saying no supervisor drives it\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// A negative --wait is a bad flag value, as a negative --deadline is:
// agentrt steer and agentrt cancel took it for --wait 0 (the request
// written, exit 0), agentrt runs cancel printed cancel_requested and
// exited 1 — one mistake, two answers, neither saying it. Every control
// command refuses it as a usage error before anything is written.
func TestNegativeWaitIsAUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	if out, errOut, code := run(t, "", superviseArgs(t, script, dir)...); code != 0 {
		t.Fatalf("supervise: exit %d\n%s%s", code, out, errOut)
	}
	// A live store run, as another process left it running.
	db := filepath.Join(t.TempDir(), "runs.db")
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	live, err := s.CreateRun(context.Background(), store.Run{ID: "r1", Kind: "execute", Status: store.StatusRunning, Owner: "elsewhere", LeaseUntil: time.Now().Add(time.Hour)})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"steer":            {"steer", dir, "note", "Be brief.", "--wait", "-1s"},
		"cancel":           {"cancel", dir, "--wait", "-1s"},
		"cancel WORKER":    {"cancel", dir, "note", "--wait", "-1s"},
		"supervise steer":  {"supervise", "steer", dir, "note", "--message", "Be brief.", "--operation-id", "s1", "--wait", "-1s"},
		"supervise cancel": {"supervise", "cancel", dir, "--operation-id", "c1", "--wait", "-1s"},
		"runs cancel":      {"runs", "cancel", "r1", "--db", db, "--wait", "-1s"},
	} {
		t.Run(name, func(t *testing.T) {
			before := dirContents(t, dir)
			out, errOut, code := run(t, "", args...)
			if code != 2 || out != "" || !strings.Contains(errOut, "--wait") {
				t.Errorf("exit %d, want 2 naming --wait and nothing on stdout\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			checkUnchanged(t, dir, before)
		})
	}
	s, err = sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if after, err := s.GetRun(context.Background(), "r1"); err != nil || after.Revision != live.Revision {
		t.Errorf("the refused runs cancel changed the run: revision %d, was %d (%v)", after.Revision, live.Revision, err)
	}
}
