package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// RES-03, §3.6 "in-flight keyed work is in-doubt until recovered",
// through the CLI: agentrt supervise is SIGKILLed after its worker's
// kernel run completed (recorded in the --db store) but while its
// completion check still ran, so the journal holds the worker's
// execution and no settlement. agentrt supervise --resume recovers that
// exact execution from the store — settled done and delivered, not run
// again, nothing spawned in its place — and wins.
func TestSuperviseResumeRecoversInDoubtWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	marker, pass := filepath.Join(t.TempDir(), "checking"), filepath.Join(t.TempDir(), "pass")
	// The check says it started, then waits as long as its process
	// lives (and never passes): the kill comes while it runs. Once pass
	// exists it passes at once — the same check, given again to the
	// resume (a resumed run keeps its check), judges the recovered
	// output.
	check := "test -e " + pass + " && exit 0; touch " + marker + "; while kill -0 $PPID 2>/dev/null; do sleep 0.1; done; exit 1"
	first := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"hang": true}]}`)
	child := exec.Command(os.Args[0], superviseArgsDB(first, dir, db, "--check-cmd", check, "--check-timeout", "2m")...)
	child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			child.Process.Kill()
			child.Wait()
			t.Fatalf("the child never checked its worker; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = child.Wait()
	recs, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var bound, settled int
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindExecutionBound:
			bound++
		case supervise.KindSettled:
			settled++
		}
	}
	if bound != 1 || settled != 0 {
		t.Fatalf("the killed run journaled %d executions and %d settlements, want 1 and 0", bound, settled)
	}

	if err := os.WriteFile(pass, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	second := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgsDB(second, dir, db, "--resume", "--json", "--check-cmd", check, "--check-timeout", "2m")...)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if member(res, "status").Str() != "winner" || member(member(res, "winner"), "node").Str() != "rel:s1" {
		t.Errorf("resumed result: %s", out)
	}
	workers := member(res, "workers").Items()
	if len(workers) != 1 || member(workers[0], "state").Str() != "done" || !member(workers[0], "delivered").Bool() ||
		member(workers[0], "inDoubt").Bool() {
		t.Errorf("want the one worker recovered done and delivered, nothing in its place: %s", out)
	}
	recs, _, err = supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	recovered := 0
	for _, r := range recs {
		if r.Kind == supervise.KindSettled && r.Recovered {
			recovered++
		}
		if r.Kind == supervise.KindExecutionBound && r.Node != "rel:s1" {
			t.Errorf("the resumed run started another execution: %+v", r)
		}
	}
	if recovered != 1 {
		t.Errorf("%d recovered settlements journaled, want 1", recovered)
	}
}

func superviseArgsDB(script, dir, db string, extra ...string) []string {
	return append([]string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", script, "--run-dir", dir, "--run-id", "rel", "--db", db}, extra...)
}

// agentrt supervise is SIGKILLed while its worker's kernel run is still
// under way: resumed, the worker's outcome cannot be recovered (the run
// it started is still running in the store, its lease not yet lapsed),
// so the output names it IN DOUBT with the reason and what to do, and
// the manager, whose await finds the run idle, spawns the work again
// (unkeyed: a new worker) and wins.
func TestSuperviseResumeReportsUnrecoverableWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 600000}, {"text": " done."}]}]}`)
	first := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"hang": true}]}`)
	// Each worker reserves a tenth of the run, so the work fits again
	// beside the in-doubt worker's ceiling.
	child := exec.Command(os.Args[0], superviseArgsDB(first, dir, db, "--script", slow, "--worker-tokens", "10000")...)
	child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// The kernel run is created just after its id is journaled: killed
	// in between, the store does not hold it, and the reason says that
	// instead.
	waitJournal(t, dir, supervise.KindExecutionBound)
	if err := child.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = child.Wait()

	// The resumed manager goes on from its recorded turns (spawn, then
	// the await it was in): that await finds the run idle, and its next
	// turn spawns the work again.
	second := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgsDB(second, dir, db, "--resume", "--worker-tokens", "10000")...)
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "rel:s1 note IN DOUBT (charged at its ceiling): ") || !strings.Contains(out, "its outcome stays unknown to this run") && !strings.Contains(out, "not in this run store") {
		t.Errorf("the in-doubt worker is not named with its reason:\n%s", out)
	}
	if !strings.Contains(out, "winner rel:s2") {
		t.Errorf("want the work run again as rel:s2 and winning:\n%s", out)
	}
}
