package cli_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/supervise"
)

var supManager = filepath.Join("testdata", "supervise", "manager.json")

// managerScript writes a scripted manager model: each turn's calls, in
// the --manager-script format.
func managerScript(t *testing.T, body string) string {
	t.Helper()
	return writeFile(t, "manager-script.json", body)
}

const (
	spawnNote  = `{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "note", "task": "Write a note."}}], "usage": {"inputTokens": 40, "outputTokens": 10}}`
	awaitOne   = `{"calls": [{"verb": "await_event", "args": {"timeoutMs": 60000}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	answerDone = `{"text": "The note is in.", "usage": {"inputTokens": 30, "outputTokens": 5}}`
)

func superviseArgs(t *testing.T, script, dir string, extra ...string) []string {
	t.Helper()
	return append([]string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", script, "--run-dir", dir, "--run-id", "rel", "--db", filepath.Join(t.TempDir(), "runs.db")}, extra...)
}

// The manager spawns one worker whose note passes the check: a winner,
// exit 0, progress on stderr, and the JSON result names the winner, the
// run dir and the spend, with the workers' unreported tokens unknown
// (null), never 0.
func TestSuperviseWinner(t *testing.T) {
	dir := t.TempDir()
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if got := member(res, "status").Str(); got != "winner" {
		t.Errorf("status %q", got)
	}
	winner := member(res, "winner")
	if member(winner, "node").Str() != "rel:s1" || member(winner, "text").Str() != "Done: Write a note." {
		t.Errorf("winner %s", out)
	}
	if member(res, "runDir").Str() != dir {
		t.Errorf("runDir %q, want %q", member(res, "runDir").Str(), dir)
	}
	spent := member(res, "spent")
	if member(spent, "tokens").Kind() != canonjson.Null || member(member(spent, "charged"), "tokens").Float() <= 0 {
		t.Errorf("unreported worker tokens must be unknown with a charge: %s", out)
	}
	if member(member(res, "manager"), "tokens").Float() != 110 {
		t.Errorf("manager tokens: %s", out)
	}
	workers := member(res, "workers").Items()
	if len(workers) != 1 || !member(workers[0], "delivered").Bool() || member(workers[0], "label").Str() != "note" {
		t.Errorf("workers: %s", out)
	}
	for _, want := range []string{"spawned rel:s1 note", "settled rel:s1 done, delivered", "finished winner"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile)); err != nil {
		t.Error(err)
	}
}

// The worker's note fails --expect: no winner, exit 1, and the people's
// summary says why and shows unknown spend as unknown.
func TestSuperviseNoWinner(t *testing.T) {
	dir := t.TempDir()
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--expect", "shipped")...)
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"NO winner: ", "rel:s1 note done, not delivered", "tokens unknown (charged ", "run dir   " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "settled rel:s1 done, not delivered") {
		t.Errorf("stderr:\n%s", errOut)
	}
}

// A check every worker fails: no winner, exit 1, and each worker's
// verdict says what the check found, not what it asked for.
func TestSuperviseNoWinnerVerdictIsTruthful(t *testing.T) {
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgs(t, script, t.TempDir(), "--expect", "shipped")...)
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if want := `rel:s1 done, not delivered (the result does not contain "shipped")`; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	if strings.Contains(out+errOut, `(the result contains "shipped")`) {
		t.Errorf("a failed check is described as passing:\n%s%s", out, errOut)
	}
}

// A worker that failed, or whose check could not judge it, is named in
// the result with why, in the summary and in the JSON, not only in the
// progress on stderr.
func TestSuperviseResultSaysWhyAWorkerWasNotDelivered(t *testing.T) {
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	failing := writeFile(t, "fail.json", `{"turns": [{"repeat": true, "end": "failed", "error": "upstream exploded", "steps": [{"text": "partial"}]}]}`)
	for _, tc := range []struct {
		name       string
		extra      []string
		line, json string
	}{
		{"failed worker", []string{"--script", failing}, "rel:s1 note failed, not delivered (", "reason"},
		{"check not judged", []string{"--check-cmd", "exec sleep 60", "--check-timeout", "200ms"},
			"rel:s1 note done, not delivered (check not judged: the check command did not finish within 200ms)", "checkError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := run(t, "", superviseArgs(t, script, t.TempDir(), tc.extra...)...)
			if code != 1 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, tc.line) {
				t.Errorf("summary lacks %q:\n%s", tc.line, out)
			}
			if tc.name == "failed worker" && !strings.Contains(out, "upstream exploded") {
				t.Errorf("summary lacks the failure:\n%s", out)
			}
			out, errOut, code = run(t, "", superviseArgs(t, script, t.TempDir(), append(tc.extra, "--json")...)...)
			if code != 1 {
				t.Fatalf("--json: exit %d\n%s%s", code, out, errOut)
			}
			workers := member(decode(t, out), "workers").Items()
			if len(workers) != 1 || member(workers[0], tc.json).Str() == "" {
				t.Errorf("the worker lacks %q: %s", tc.json, out)
			}
		})
	}
}

// --check-cmd decides delivery: the command reads the result on stdin
// and delivers it by exiting 0; a non-zero exit is not delivered, and its
// stderr is the verdict's reason.
func TestSuperviseCheckCommand(t *testing.T) {
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgs(t, script, t.TempDir(), "--check-cmd", "grep -q 'Write a note'")...)
	if code != 0 || !strings.Contains(errOut, "settled rel:s1 done, delivered (the check command exited 0)") {
		t.Fatalf("passing check: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", superviseArgs(t, script, t.TempDir(), "--check-cmd", "echo 'no release number' >&2; exit 3")...)
	if code != 1 || !strings.Contains(errOut, "not delivered (the check command exited 3: no release number)") {
		t.Fatalf("failing check: exit %d\n%s%s", code, out, errOut)
	}
	// Both checks: the text must be there and the command must pass.
	out, errOut, code = run(t, "", superviseArgs(t, script, t.TempDir(), "--check-cmd", "grep -q 'Write a note'", "--expect", "Done")...)
	if code != 0 || !strings.Contains(errOut, "delivered (the check command exited 0)") {
		t.Errorf("--expect and --check-cmd, both passing: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", superviseArgs(t, script, t.TempDir(), "--check-cmd", "exit 0", "--expect", "no such text")...)
	if code != 1 || strings.Contains(errOut, "the check command exited") {
		t.Errorf("--expect failing before --check-cmd: exit %d (the command must not decide)\n%s%s", code, out, errOut)
	}
}

// A check command's verdict is its own exit status, given as soon as it
// exits: a background child it left holding its stderr neither turns
// the verdict into "did not finish" nor holds the run until
// --check-timeout.
func TestSuperviseCheckCommandExitsBeforeItsChildren(t *testing.T) {
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	for _, tc := range []struct {
		check, want string
		code        int
	}{
		{"sleep 60 & exit 0", "settled rel:s1 done, delivered (the check command exited 0)", 0},
		{"echo 'no release number' >&2; sleep 60 & exit 3", "settled rel:s1 done, not delivered (the check command exited 3: no release number)", 1},
	} {
		t.Run(tc.check, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := run(t, "", superviseArgs(t, script, t.TempDir(), "--check-cmd", tc.check, "--check-timeout", "30s")...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tc.code, tc.want, out, errOut)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("the run took %s: it waited on the command's child", d)
			}
		})
	}
}

// Usage errors exit 2 and run nothing.
func TestSuperviseUsage(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"no task":          {"supervise", supManager, "--worker", noteWriter},
		"no worker":        {"supervise", supManager, "--task", "t"},
		"resume no dir":    {"supervise", supManager, "--task", "t", "--worker", noteWriter, "--resume"},
		"zero budget":      {"supervise", supManager, "--task", "t", "--worker", noteWriter, "--budget-tokens", "0"},
		"unknown flag":     {"supervise", supManager, "--task", "t", "--worker", noteWriter, "--nope"},
		"no profile":       {"supervise", "--task", "t", "--worker", noteWriter},
		"steer no op id":   {"supervise", "steer", dir, "w", "--message", "m"},
		"steer bad op id":  {"supervise", "steer", dir, "w", "--message", "m", "--operation-id", "a b"},
		"cancel no op id":  {"supervise", "cancel", dir},
		"cancel extra arg": {"supervise", "cancel", dir, "w", "x", "--operation-id", "o"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, "", args...)
			if code != 2 {
				t.Errorf("exit %d, want 2\n%s%s", code, out, errOut)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile)); err == nil {
		t.Error("a usage error started a run")
	}
}

// waitJournal polls the run dir until a record of kind is journaled.
func waitJournal(t *testing.T, dir, kind string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		recs, _, _ := supervise.ReadRunDir(context.Background(), dir)
		for _, r := range recs {
			if r.Kind == kind {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s record in %s", kind, dir)
}

// A supervising process dies after its worker settled; a second process
// resumes the run from the journal: the worker is replayed, not run
// again, and the run ends with a winner.
func TestSuperviseResumeAfterExit(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	first := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"hang": true}]}`)
	args := []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", first, "--run-dir", dir, "--run-id", "rel", "--db", db}
	child := exec.Command(os.Args[0], args...)
	child.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitJournal(t, dir, supervise.KindSettled)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	second := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", "supervise", supManager, "--worker", noteWriter, "--manager-script", second,
		"--run-dir", dir, "--resume", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if !member(res, "resumed").Bool() || member(res, "runId").Str() != "rel" {
		t.Errorf("not a resume of rel: %s", out)
	}
	workers := member(res, "workers").Items()
	if len(workers) != 1 || !member(workers[0], "replayed").Bool() {
		t.Errorf("the settled worker was not replayed: %s", out)
	}
	if !strings.Contains(errOut, "resuming "+dir) {
		t.Errorf("stderr:\n%s", errOut)
	}

	// --resume of the ended run answers with its journaled result: the
	// manager is not driven again (this script has no turn to give, so
	// a manager driven again would spend 1000 more tokens and answer
	// otherwise), nothing is spent.
	none := managerScript(t, `{"turns": [{"text": "Driven again.", "usage": {"inputTokens": 999, "outputTokens": 1}}]}`)
	again, errAgain, code := run(t, "", "supervise", supManager, "--worker", noteWriter, "--manager-script", none,
		"--run-dir", dir, "--resume", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("resuming the ended run: exit %d\nstdout %s\nstderr %s", code, again, errAgain)
	}
	res2 := decode(t, again)
	for _, m := range []string{"status", "winner", "spent"} {
		if a, b := canonjson.Marshal(member(res, m)), canonjson.Marshal(member(res2, m)); string(a) != string(b) {
			t.Errorf("%s after resuming the ended run: %s, want the journaled %s", m, b, a)
		}
	}
}

// While one invocation supervises a slow worker, a second steers it (the
// kernel worker takes steers at its next turn, which its 30 s turn does
// not reach: the acknowledgement stays unknown, exit 1, and stderr
// says to ask again, stdout carrying the outcome alone) and a third cancels it (cancelled, exit 0); the
// first then ends with no winner, and asking again about the steer shows
// it not_live: the worker never took another turn.
func TestSuperviseSteerAndCancelFromAnotherInvocation(t *testing.T) {
	dir := t.TempDir()
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 30000}, {"text": " done."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"text": "The worker was cancelled."}]}`)
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--script", slow, "--json")...)
		done <- result{out, errOut, code}
	}()
	waitJournal(t, dir, supervise.KindSpawned)

	out, errOut, code := run(t, "", "supervise", "steer", dir, "note", "--message", "Be brief.", "--operation-id", "steer-1", "--wait", "1s")
	if code != 1 || out != "steer steer-1 to note: unknown after 1s\n" || !strings.Contains(errOut, "the supervisor holds the steer until the worker's next turn takes it; run this again") {
		t.Errorf("steer: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "supervise", "cancel", dir, "note", "--operation-id", "cancel-1", "--wait", "10s", "--json")
	if code != 0 {
		t.Fatalf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	ack := decode(t, out)
	if member(ack, "effect").Str() != "cancelled" || member(ack, "workerId").Str() != "rel:s1" {
		t.Errorf("cancel acknowledgement: %s", out)
	}

	var first result
	select {
	case first = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the supervising invocation did not end after the cancel")
	}
	if first.code != 1 {
		t.Fatalf("first invocation exit %d\n%s%s", first.code, first.out, first.errOut)
	}
	res := decode(t, first.out)
	workers := member(res, "workers").Items()
	if member(res, "status").Str() != "no-winner" || len(workers) != 1 || member(workers[0], "state").Str() != "cancelled" {
		t.Errorf("first invocation: %s", first.out)
	}
	for _, want := range []string{"steer requested", "steer acknowledged", "cancel requested", "settled rel:s1 cancelled"} {
		if !strings.Contains(first.errOut, want) {
			t.Errorf("progress lacks %q:\n%s", want, first.errOut)
		}
	}
	out, errOut, code = run(t, "", "supervise", "steer", dir, "note", "--message", "Be brief.", "--operation-id", "steer-1", "--wait", "1s")
	if code != 1 || !strings.Contains(out, "steer steer-1 to note: not_live") {
		t.Errorf("asking again after the run: exit %d\n%s%s", code, out, errOut)
	}
}

// A second invocation cancels the whole run: the acknowledgement says
// cancelled (exit 0) and the supervising invocation ends cancelled, with
// no winner.
func TestSuperviseCancelRunFromAnotherInvocation(t *testing.T) {
	dir := t.TempDir()
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 30000}, {"text": " done."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"text": "Stopped."}]}`)
	done := make(chan string, 1)
	go func() {
		out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--script", slow, "--json")...)
		if code != 1 {
			t.Errorf("supervising invocation: exit %d\n%s", code, errOut)
		}
		done <- out
	}()
	waitJournal(t, dir, supervise.KindSpawned)
	// With a deadline asked (behaviour 50), the acknowledgement says how
	// soon the cancellation applied and that it kept to the deadline.
	out, errOut, code := run(t, "", "supervise", "cancel", dir, "--operation-id", "stop-all", "--reason", "release postponed",
		"--operator", "release-desk", "--deadline", "1m", "--wait", "10s", "--json")
	if code != 0 {
		t.Errorf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	ack := decode(t, out)
	if member(ack, "effect").Str() != "cancelled" || member(ack, "deadlineExceeded").Bool() {
		t.Errorf("cancel --json: %s", out)
	}
	if _, ok := ack.Get("appliedAfterMs"); !ok {
		t.Errorf("cancel --json: no appliedAfterMs with a deadline asked: %s", out)
	}
	if _, ok := ack.Get("deadlineExceeded"); !ok {
		t.Errorf("cancel --json: no deadlineExceeded with a deadline asked: %s", out)
	}
	// The text form of the same request, retried by its operation id.
	out, errOut, code = run(t, "", "supervise", "cancel", dir, "--operation-id", "stop-all", "--reason", "release postponed",
		"--operator", "release-desk", "--deadline", "1m", "--wait", "10s")
	if code != 0 || !strings.Contains(out, "cancel stop-all of the run: cancelled") {
		t.Errorf("cancel again: exit %d\n%s%s", code, out, errOut)
	}
	// A worker's cancellation takes no deadline.
	if _, errOut, code := run(t, "", "supervise", "cancel", dir, "note", "--operation-id", "stop-note", "--deadline", "1m"); code != 2 || !strings.Contains(errOut, "leave out WORKER") {
		t.Errorf("cancel WORKER --deadline: exit %d\n%s", code, errOut)
	}
	select {
	case first := <-done:
		res := decode(t, first)
		if member(res, "status").Str() != "no-winner" || member(res, "reason").Str() != "cancelled" ||
			member(member(res, "cancellation"), "operationId").Str() != "stop-all" {
			t.Errorf("supervising invocation: %s", first)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the supervising invocation did not end after the run was cancelled")
	}
}

// A manager runs a lens from --analysts with run_analyst over its
// settled worker: the analyst is a worker of the run (in the tree,
// never delivered) and the note still wins.
func TestSuperviseAnalystsFile(t *testing.T) {
	mgr := writeFile(t, "manager.json", `{"name": "release-manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
  "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
    "agent_runtime_coordination_run_analyst": true, "agent_runtime_coordination_list_analysts": true}}`)
	lenses := writeFile(t, "analysts.json", `[{"id": "tone-check", "description": "Tone.", "area": "style", "question": "Is the tone right?",
  "instructions": "Judge the tone of the note.", "toolGroup": "singleTrace", "limits": {"maxOutputChars": 100}}]`)
	runLens := `{"calls": [{"verb": "run_analyst", "args": {"kind": "tone-check", "workerId": "rel:s1"}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+runLens+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", "supervise", mgr, "--task", "Write release notes.", "--worker", noteWriter, "--manager-script", script,
		"--run-dir", t.TempDir(), "--run-id", "rel", "--db", filepath.Join(t.TempDir(), "runs.db"), "--analysts", lenses, "--json",
		// Room for the analyst beside the worker's ceiling and the
		// manager's turns, which are charged as they end.
		"--budget-tokens", "400000", "--worker-tokens", "50000")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if member(member(res, "winner"), "node").Str() != "rel:s1" {
		t.Errorf("winner: %s", out)
	}
	var analysts int
	for _, n := range member(res, "workers").Items() {
		if member(n, "profile").Str() == "analyst-tone-check" && member(n, "state").Str() == "done" && !member(n, "delivered").Bool() {
			analysts++
		}
	}
	if analysts != 1 {
		t.Errorf("want one settled, undelivered analyst worker: %s\n%s", out, errOut)
	}
}

// §3.6 "Supervisor run layout": without --run-dir the run lives at
// WORKSPACE/.agent/supervisor/RUN-ID, with the manager's stream and one
// log per worker label beside the journal, and --resume --run-id finds it
// there again.
func TestSuperviseDefaultRunDirInWorkspace(t *testing.T) {
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	args := []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter,
		"--manager-script", script, "--workspace", ws, "--run-id", "rel", "--db", db, "--json"}
	out, errOut, code := run(t, "", args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	dir := filepath.Join(ws, ".agent", "supervisor", "rel")
	if got := member(decode(t, out), "runDir").Str(); got != dir {
		t.Errorf("runDir %q, want %q", got, dir)
	}
	for _, f := range []string{supervise.SpawnJournalFile, supervise.RootStreamFile, filepath.Join(supervise.WorkersDir, "note.ndjson")} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the run dir lacks %s: %v", f, err)
		}
	}
	recs, _, err := supervise.ReadWorkerLog(context.Background(), dir, "note")
	if err != nil || len(recs) < 2 || recs[0].Kind != supervise.StreamSpawned || recs[len(recs)-1].Kind != supervise.StreamSettled {
		t.Errorf("worker log %+v, %v; want spawned … settled", recs, err)
	}
	out, errOut, code = run(t, "", "supervise", supManager, "--worker", noteWriter, "--manager-script", script,
		"--workspace", ws, "--run-id", "rel", "--resume", "--db", db, "--json")
	if code != 0 || !member(decode(t, out), "resumed").Bool() {
		t.Fatalf("resume by --run-id: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", "supervise", supManager, "--worker", noteWriter, "--resume", "--db", db); code != 2 || !strings.Contains(errOut, "--run-id") {
		t.Errorf("--resume naming no run: exit %d, %s", code, errOut)
	}
}

// agentrt steer RUN WORKER MESSAGE and agentrt cancel RUN [WORKER], as
// the issue names them: RUN is the run's id in the workspace; the same
// steer command again is the same request (its operation id derives from
// what it asks), and an unknown run is a usage error.
func TestTopLevelSteerAndCancelByRunID(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".agent", "supervisor", "rel")
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 30000}, {"text": " done."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, {"text": "The worker was cancelled."}]}`)
	done := make(chan int, 1)
	go func() {
		_, _, code := run(t, "", "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter, "--manager-script", script,
			"--script", slow, "--workspace", ws, "--run-id", "rel", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json")
		done <- code
	}()
	waitJournal(t, dir, supervise.KindSpawned)

	var ops []string
	for range 2 {
		out, errOut, code := run(t, "", "steer", "rel", "note", "Be brief.", "--workspace", ws, "--wait", "1s")
		if code != 1 || !strings.Contains(out, "to note: unknown after 1s") {
			t.Fatalf("steer: exit %d\n%s%s", code, out, errOut)
		}
		ops = append(ops, strings.Fields(out)[1])
	}
	if ops[0] != ops[1] || !strings.HasPrefix(ops[0], "steer-") {
		t.Errorf("operation ids %v: the same steer again must be the same request", ops)
	}
	out, errOut, code := run(t, "", "cancel", "rel", "note", "--workspace", ws, "--wait", "10s", "--json")
	if code != 0 || member(decode(t, out), "effect").Str() != "cancelled" {
		t.Fatalf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("the supervising invocation: exit %d, want 1 (no winner)", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the supervising invocation did not end after the cancel")
	}
	if _, errOut, code := run(t, "", "steer", "no-such-run", "note", "hi", "--workspace", ws); code != 2 || !strings.Contains(errOut, "no-such-run") {
		t.Errorf("an unknown run: exit %d\n%s", code, errOut)
	}
}

// `agentrt cancel RUN LABEL` without --operation-id, once the label's
// worker was cancelled and the manager spawned a new worker under the
// same label: the default operation id names the worker the label
// reaches now (its newest, §3.6), so the second command cancels the new
// worker instead of answering with the first one's acknowledgement.
func TestDefaultCancelReachesTheNewestWorkerOfALabel(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, ".agent", "supervisor", "rel")
	slow := writeFile(t, "slow.json", `{"turns": [{"repeat": true, "steps": [{"text": "thinking"}, {"delayMs": 30000}, {"text": " done."}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, {"text": "Both were cancelled."}]}`)
	done := make(chan int, 1)
	go func() {
		// Room for two workers, each charged at its ceiling once cancelled.
		_, errOut, code := run(t, "", "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter, "--manager-script", script,
			"--script", slow, "--workspace", ws, "--run-id", "rel", "--db", filepath.Join(t.TempDir(), "runs.db"), "--json", "--worker-tokens", "10000")
		if code != 1 {
			t.Logf("the supervising invocation:\n%s", errOut)
		}
		done <- code
	}()
	var ops []string
	for i, want := range []supervise.NodeID{"rel:s1", "rel:s2"} {
		waitProgress(t, dir, want)
		out, errOut, code := run(t, "", "cancel", "rel", "note", "--workspace", ws, "--wait", "10s", "--json")
		ack := decode(t, out)
		if code != 0 || member(ack, "effect").Str() != "cancelled" || member(ack, "workerId").Str() != string(want) {
			t.Fatalf("cancel %d: exit %d, want %s cancelled\n%s%s", i+1, code, want, out, errOut)
		}
		ops = append(ops, member(ack, "operationId").Str())
	}
	if ops[0] == ops[1] {
		t.Errorf("both cancels were operation %s: the second must be a request of its own", ops[0])
	}
	select {
	case code := <-done:
		if code != 1 {
			t.Errorf("the supervising invocation: exit %d, want 1 (no winner)", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the supervising invocation did not end after the cancels")
	}
}

// waitProgress waits until the run's progress records the spawn of
// worker node.
func waitProgress(t *testing.T, dir string, node supervise.NodeID) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if id, ok, _ := supervise.ResolveWorker(t.Context(), dir, string(node)); ok && id == node {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("worker %s was never spawned in %s", node, dir)
}

// A --manager-script larger than the CLI's input bound is refused with
// what to do, before any run starts: it is never read whole. A file
// agentrt cannot read is a usage error (exit 2).
func TestSuperviseRefusesAnOversizeManagerScript(t *testing.T) {
	script := filepath.Join(t.TempDir(), "huge.json")
	f, err := os.Create(script)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the bound, plus one byte, costs no disk.
	if err := f.Truncate(cli.MaxInputLen + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dir := t.TempDir()
	out, errOut, code := run(t, "", superviseArgs(t, script, dir)...)
	if code != cli.ExitUsage {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "huge.json is larger than") {
		t.Errorf("stderr does not name the bound:\n%s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "spawn-journal.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a run started: %v", err)
	}
}

// A steer or cancellation of a finished run to a worker it never had is
// answered as the running supervisor answers it (§3.6 behaviours 48,
// 49): it says the run has no such worker and exits 1, where a worker
// that did run is not_live, exit 1 too: never success (§3.6), as
// agentrt runs cancel and agentrt steer answer it.
func TestControlOfAFinishedRunNamesAWorkerItNeverHad(t *testing.T) {
	dir := t.TempDir()
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	if out, errOut, code := run(t, "", superviseArgs(t, script, dir)...); code != 0 {
		t.Fatalf("supervise: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := run(t, "", "cancel", dir, "note", "--wait", "2s")
	if code != 1 || !strings.Contains(out, ": not_live (the run had ended before the request was written)") {
		t.Errorf("cancel of the settled worker: exit %d\n%s%s", code, out, errOut)
	}
	const noWorker = "(the run had ended before the request was written; the run has no worker nobody)"
	out, errOut, code = run(t, "", "cancel", dir, "nobody", "--wait", "2s")
	if code != 1 || !strings.Contains(out, "of nobody: unknown "+noWorker) {
		t.Errorf("cancel of no worker: exit %d, want 1\n%s%s", code, out, errOut)
	}
	out, errOut, code = run(t, "", "steer", dir, "nobody", "Be brief.", "--wait", "2s")
	if code != 1 || !strings.Contains(out, "to nobody: refused "+noWorker) {
		t.Errorf("steer to no worker: exit %d, want 1\n%s%s", code, out, errOut)
	}
}
