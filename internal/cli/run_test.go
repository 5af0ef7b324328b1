package cli_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// TestMain lets a test run the real agentrt command in a child process
// (the test binary re-executed with AGENTRT_CLI_CHILD=1), so a test can
// kill it; it also owns the directory of the shared agentrt build
// (buildAgentrt).
//
// The long tests that mostly wait on child processes, PostgreSQL or
// River call t.Parallel. A parallel test changes no process state — no
// t.Setenv, no t.Chdir, no fixed port, no file outside its own t.TempDir
// and schema — and Go starts the parallel tests only after every serial
// top-level test has ended, so the serial tests that set the environment
// never overlap them.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTRT_CLI_CHILD") == "1" {
		stdio := cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
		if path := os.Getenv(turnLogEnv); path != "" {
			os.Exit(cli.MainWith(context.Background(), os.Args[1:], stdio, turnLogOpener(path)))
		}
		os.Exit(cli.Main(context.Background(), os.Args[1:], stdio))
	}
	dir, err := os.MkdirTemp("", "agentrt-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// A command run without --db — here, or in a child process, which
	// inherits the environment — opens the store of this temporary home,
	// never the developer's ~/.agentrt.
	home := filepath.Join(dir, "home")
	if err := errors.Join(os.Mkdir(home, 0o700), os.Setenv(sqlite.HomeEnv, home)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var noteWriter = filepath.Join("..", "..", "examples", "profiles", "note-writer.json")

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Issue 4: `agentrt run` reports what ran and exits 0 only for a
// completed, delivered run; every other outcome is exit 1 with the reason.
func TestRunCommand(t *testing.T) {
	liar := writeFile(t, "liar.json", `{"servedModel":"other/model","turns":[{"repeat":true,"steps":[{"text":"ok"}]}]}`)
	broken := writeFile(t, "broken.json", `{"turns":[{"steps":[{"text":"half"}],"end":"no-terminal"}]}`)
	usage := writeFile(t, "usage.json", `{"turns":[{"steps":[{"text":"ok"},{"usage":{"inputTokens":12,"outputTokens":3},"mode":"delta"}]}]}`)
	tests := []struct {
		name    string
		stdin   string
		args    []string
		code    int
		status  string
		deliver bool
		reason  string
		text    string
		input   string // canonical form of usage.inputTokens
	}{
		{name: "delivered", args: []string{noteWriter, "--task", "Write a note."}, status: "completed", deliver: true, text: "Done: Write a note.", input: "null"},
		{name: "usage reported", args: []string{noteWriter, "--task", "t", "--script", usage}, status: "completed", deliver: true, text: "ok", input: "12"},
		{name: "check fails", args: []string{noteWriter, "--task", "t", "--expect", "nope"}, code: 1, status: "completed", text: "Done: t", input: "null"},
		{name: "served another model", args: []string{noteWriter, "--task", "t", "--script", liar}, code: 1, status: "failed", reason: "served-model-mismatch", text: "ok", input: "null"},
		{name: "no terminal event", args: []string{noteWriter, "--task", "t", "--script", broken}, code: 1, status: "failed", reason: "no-terminal-event", text: "half", input: "null"},
		{name: "unsupported profile refused before spend", stdin: `{"name":"x","mcp":{"fs":{"transport":"stdio","command":"fs"}}}`,
			args: []string{"-", "--task", "t"}, code: 1, status: "failed", reason: "refused", input: "0"}, // nothing dispatched: exactly zero
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "runs.db")
			out, errOut, code := run(t, tc.stdin, append([]string{"run", "--json", "--db", db}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errOut)
			}
			res := decode(t, out)
			got := map[string]string{
				"status": member(res, "status").Str(), "text": member(res, "text").Str(),
				"reason": member(res, "reason").Str(), "input": string(canonjson.Marshal(member(member(res, "usage"), "inputTokens"))),
			}
			want := map[string]string{"status": tc.status, "text": tc.text, "reason": tc.reason, "input": tc.input}
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("%s = %q, want %q\n%s", k, got[k], want[k], out)
				}
			}
			if d := member(res, "decision").Str(); (d == "done") != tc.deliver || (d != "done" && d != "fail") {
				t.Errorf("decision %q with delivered=%v", d, tc.deliver)
			}
			if member(res, "delivered").Bool() != tc.deliver {
				t.Errorf("delivered = %v, want %v", member(res, "delivered").Bool(), tc.deliver)
			}
			// The store holds the same story.
			id := member(res, "runId").Str()
			show, errOut, code := run(t, "", "runs", "show", "--json", "--db", db, id)
			if code != 0 {
				t.Fatalf("runs show exit %d: %s", code, errOut)
			}
			if s := member(decode(t, show), "status").Str(); s != tc.status {
				t.Errorf("stored status %q, want %q", s, tc.status)
			}
		})
	}
}

func TestRunCommandHuman(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "run", "--db", db, noteWriter, "--task", "Write a note.")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"completed, delivered", "decision  done", "served scripted/note-writer", "cost unknown", "Done: Write a note.", "agentrt runs show run-"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "running") {
		t.Errorf("no progress on stderr: %q", errOut)
	}
	if _, _, code := run(t, "", "run", "--db", db, noteWriter); code != cli.ExitUsage {
		t.Errorf("run without --task: exit %d, want %d", code, cli.ExitUsage)
	}
	if _, _, code := run(t, "", "run", "--db", db, noteWriter, "--task", "t", "--provider", "nope"); code != cli.ExitUsage {
		t.Errorf("unknown provider: exit %d, want %d", code, cli.ExitUsage)
	}
}

// Issue 4 "Done when": a run killed with SIGKILL mid-stream leaves every
// acknowledged event intact and is reported interrupted once its lease
// lapses; the store stays usable.
func TestRunSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	script := writeFile(t, "slow.json", `{"turns":[{"steps":[{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"text":"first words"},{"delayMs":60000},{"text":" never said"}]}]}`)
	cmd := startChild(t, nil, "run", "--db", db, "--lease", "1s", "--script", script, noteWriter, "--task", "Write slowly.")

	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runID, seen := awaitEvent(t, s, "first words")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// Reopen, as the next process would.
	s.Close()
	s2, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatalf("reopening after SIGKILL: %v", err)
	}
	defer s2.Close()
	after, err := s2.Events(ctx, runID, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) < len(seen) {
		t.Fatalf("%d acknowledged events, %d after the kill", len(seen), len(after))
	}
	for i := range seen {
		if seen[i].Cursor != after[i].Cursor || string(canonjson.Marshal(seen[i].Body)) != string(canonjson.Marshal(after[i].Body)) {
			t.Errorf("event %d changed across the kill", i)
		}
	}
	// The 1s lease lapses: from then on every reader sees the run
	// interrupted.
	awaitStatus(t, s2, runID, store.StatusInterrupted, "after SIGKILL and lease lapse")
	// The interrupted run keeps its event count, its requested model and
	// the spend it reported before it died (a floor).
	rec, err := kernel.ReadRun(ctx, s2, runID)
	if err != nil || rec.Exact == nil {
		t.Fatalf("ReadRun: %v", err)
	}
	if rec.Events != int64(len(after)) || rec.Exact.RequestedModel != "scripted/note-writer" {
		t.Errorf("record: %d events (store %d), requested model %q", rec.Events, len(after), rec.Exact.RequestedModel)
	}
	if rec.LedgerEntries == 0 || rec.Spend.InputTokens.String() != "≥ 9" || rec.Spend.OutputTokens.String() != "≥ 2" {
		t.Errorf("spend after the kill: %d entries, %+v; want the reported 9 and 2 as floors", rec.LedgerEntries, rec.Spend)
	}
	out, _, _ := run(t, "", "runs", "show", "--db", db, runID)
	for _, want := range []string{"interrupted", "input ≥ 9", "requested scripted/note-writer"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	// The store stays usable: the next run in it completes.
	if _, errOut, code := run(t, "", "run", "--db", db, noteWriter, "--task", "again"); code != 0 {
		t.Errorf("a run after the kill failed: %s", errOut)
	}
}

// Kernel issue, fencing: a run whose process is paused (SIGSTOP) past its
// lease is interrupted for every reader; resumed (SIGCONT), the process
// records nothing more — no event, no ledger entry, no status — and
// reports the run interrupted with exit 1, never "completed, delivered".
func TestRunPausedPastItsLease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts, pauses and resumes a child process")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	script := writeFile(t, "pause.json", `{"turns":[{"steps":[{"text":"first words"},{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"delayMs":2500},{"text":" after the pause"}]}]}`)
	var stdout, stderr strings.Builder
	cmd := startChild(t, func(cmd *exec.Cmd) { cmd.Stdout, cmd.Stderr = &stdout, &stderr }, "run", "--db", db, "--lease", "1s",
		"--script", script, noteWriter, "--task", "Write, then pause.")

	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runID, _ := awaitEvent(t, s, "first words")
	// Pause it once the spend it reported is recorded (the usage event's
	// progress entry): from then on it only waits in the script's delay,
	// with no write of its own in flight.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if entries, _ := s.Ledger(ctx, runID); len(entries) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the run recorded no progress entry")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Paused past its 1s lease, the run reads interrupted.
	awaitStatus(t, s, runID, store.StatusInterrupted, "while paused past the lease")
	before, _ := s.Events(ctx, runID, "", 0)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the resumed process did not exit")
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want 1; stdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if out := stdout.String(); !strings.Contains(out, "interrupted") || strings.Contains(out, "completed") || strings.Contains(out, "delivered") {
		t.Errorf("the resumed process reported:\n%s\nwant interrupted, never completed or delivered", out)
	}
	after, _ := s.Events(ctx, runID, "", 0)
	if len(after) != len(before) || hasText(after, "after the pause") {
		t.Errorf("%d events before the resume, %d after; the old holder appended after its lease lapsed", len(before), len(after))
	}
	r, _ := s.GetRun(ctx, runID)
	if r.Status != store.StatusInterrupted {
		t.Errorf("final status %s, want interrupted", r.Status)
	}
	entries, _ := s.Ledger(ctx, runID)
	for _, e := range entries {
		if k, _ := e.Body.Get("kind"); k.Str() != kernel.LedgerProgress {
			t.Errorf("ledger entry %s written after the lease lapsed", canonjson.Marshal(e.Body))
		}
	}
}

// startChild starts this test binary as agentrt with args (setup, when
// given, adjusts the command first); the child is killed when the test
// ends.
func startChild(t *testing.T, setup func(*exec.Cmd), args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	if setup != nil {
		setup(cmd)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func hasText(events []store.Event, text string) bool {
	for _, e := range events {
		if strings.Contains(string(canonjson.Marshal(e.Body)), text) {
			return true
		}
	}
	return false
}

// awaitStatus waits until run id in s reads status want (when is what
// the test waited for, for the failure message); after statusWait it
// fails the test with the status last read.
func awaitStatus(t *testing.T, s store.Store, id string, want store.Status, when string) {
	t.Helper()
	var last store.Status
	for deadline := time.Now().Add(statusWait); ; time.Sleep(20 * time.Millisecond) {
		r, err := s.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if last = r.Status; last == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status %s = %s after %s, want %s", when, last, statusWait, want)
		}
	}
}

// statusWait bounds awaitStatus: far beyond the 1s leases of the tests
// that use it, for a loaded machine.
const statusWait = 20 * time.Second

// awaitEvent waits until the newest run in s has recorded an event
// containing text, and returns the run id and its events so far.
func awaitEvent(t *testing.T, s store.Store, text string) (string, []store.Event) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no run recorded an event containing %q", text)
		}
		time.Sleep(20 * time.Millisecond)
		runs, err := s.ListRuns(ctx, store.ListOptions{Limit: 1})
		if err != nil || len(runs) == 0 {
			continue
		}
		events, err := s.Events(ctx, runs[0].ID, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if hasText(events, text) {
			return runs[0].ID, events
		}
	}
}

// Issue 4 (agentrt runs cancel): a run in another process is cancelled
// through the shared store; that process ends it cancelled and exits 1.
func TestRunsCancelAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	script := writeFile(t, "slow.json", `{"turns":[{"steps":[{"text":"working"},{"delayMs":60000}]}]}`)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "run", "--json", "--db", db, "--script", script, noteWriter, "--task", "Work slowly.")
	cmd.Env = append(os.Environ(), "AGENTRT_CLI_CHILD=1")
	var childOut strings.Builder
	cmd.Stdout = &childOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runID, _ := awaitEvent(t, s, "working")

	out, errOut, code := run(t, "", "runs", "cancel", "--json", "--db", db, "--reason", "test says stop", runID)
	if code != 0 {
		t.Fatalf("runs cancel exit %d: %s%s", code, out, errOut)
	}
	if res := decode(t, out); member(res, "effect").Str() != "cancelled" || member(res, "status").Str() != "cancelled" {
		t.Errorf("cancel reported %s", out)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("child exit: %v", err)
	}
	child := decode(t, childOut.String())
	if member(child, "status").Str() != "cancelled" || !strings.Contains(member(child, "detail").Str(), "test says stop") {
		t.Errorf("child printed %s", childOut.String())
	}
	// Cancelling again, or a run that completed, changes nothing.
	if out, _, code := run(t, "", "runs", "cancel", "--db", db, runID); code != 0 || !strings.Contains(out, "cancelled") {
		t.Errorf("re-cancel: exit %d %s", code, out)
	}
	done, _, _ := run(t, "", "run", "--json", "--db", db, noteWriter, "--task", "quick")
	doneID := member(decode(t, done), "runId").Str()
	if out, _, code := run(t, "", "runs", "cancel", "--db", db, doneID); code != 1 || !strings.Contains(out, "not_live") {
		t.Errorf("cancelling a completed run: exit %d %s", code, out)
	}
}

// With --database (or $AGENTRT_DATABASE_URL) the run store is PostgreSQL,
// shared by every process that names it; the password never reaches the
// output.
func TestRunOnPostgres(t *testing.T) {
	db := pgtest.Schema(t)
	out, errOut, code := run(t, "", "run", "--database", db, noteWriter, "--task", "Write a note.")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "agentrt:agentrt@") {
		t.Errorf("the password reached the output:\n%s%s", out, errOut)
	}
	t.Setenv("AGENTRT_DATABASE_URL", db)
	list, errOut, code := run(t, "", "runs", "list", "--json")
	if code != 0 || !strings.Contains(list, `"completed"`) {
		t.Errorf("runs list from $AGENTRT_DATABASE_URL: exit %d %s%s", code, list, errOut)
	}
	if _, _, code := run(t, "", "runs", "list", "--db", "x.db", "--database", db); code != cli.ExitUsage {
		t.Errorf("--db with --database: exit %d, want %d", code, cli.ExitUsage)
	}
}

// --database-schema (or $AGENTRT_DATABASE_SCHEMA) keeps the store's
// tables in a schema of their own: a run recorded there is listed only
// by commands naming that schema.
func TestRunOnPostgresInASchema(t *testing.T) {
	db := pgtest.Schema(t)
	schema := fmt.Sprintf("agentrt_cli_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), db)
		if err == nil {
			c.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
			c.Close(context.Background())
		}
	})
	if out, errOut, code := run(t, "", "run", "--database", db, "--database-schema", schema, noteWriter, "--task", "Write a note."); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	t.Setenv("AGENTRT_DATABASE_SCHEMA", schema)
	if list, errOut, code := run(t, "", "runs", "list", "--database", db, "--json"); code != 0 || !strings.Contains(list, `"completed"`) {
		t.Errorf("runs list in $AGENTRT_DATABASE_SCHEMA: exit %d %s%s", code, list, errOut)
	}
	t.Setenv("AGENTRT_DATABASE_SCHEMA", "")
	if list, errOut, code := run(t, "", "runs", "list", "--database", db, "--json"); code != 0 || strings.Contains(list, `"completed"`) {
		t.Errorf("runs list outside the schema: exit %d %s%s; want no run", code, list, errOut)
	}
	if _, _, code := run(t, "", "runs", "list", "--database", db, "--database-schema", "bad-name"); code == 0 {
		t.Error("an invalid schema name was accepted")
	}
}
