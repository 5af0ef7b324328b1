package cli_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/supervise"
)

// entries lists what dir holds (nothing when it does not exist).
func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// Issue 13: --run-id= names no run: the user typed an empty value, which
// is a usage error, not "generate one"; nothing is written.
func TestEmptyRunIDFlagIsUsage(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, args := range map[string][]string{
		"supervise": {"supervise", supManager, "--task", "x", "--worker", noteWriter, "--run-id=", "--workspace", ws, "--db", filepath.Join(dir, "s.db")},
		"graph":     {"graph", reviewGraph, "--directives", directives, "--task", "x", "--run-id=", "--workspace", ws, "--db", filepath.Join(dir, "g.db")},
	} {
		out, errOut, code := run(t, "", args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, "--run-id") {
			t.Errorf("%s --run-id=: exit %d, want 2 naming --run-id\nstdout: %s\nstderr: %s", name, code, out, errOut)
		}
	}
	if got := entries(t, ws); len(got) != 0 {
		t.Errorf("refused runs wrote %v in the workspace", got)
	}
}

// Issue 13: agentrt top refuses a ROOT or --run-dir that is not UTF-8
// (exit 2, naming it and what to do) rather than showing runs found
// through it.
func TestTopNonUTF8PathsAreUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "ws\xff")
	if err := os.MkdirAll(filepath.Join(bad, ".agent", "supervisor"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := t.TempDir()
	for _, c := range []struct {
		want string
		args []string
	}{
		{"ROOT", []string{"top", bad, "--run-dir", good, "--once"}},
		{"--run-dir", []string{"top", good, "--run-dir", bad, "--once"}},
	} {
		out, errOut, code := run(t, "", c.args...)
		if code != cli.ExitUsage || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "UTF-8") {
			t.Errorf("%q: exit %d, want 2 naming %s and UTF-8\nstdout: %s\nstderr: %s", c.args, code, c.want, out, errOut)
		}
	}
}

// Issue 13: agentrt runs events --after with a value that is no cursor
// is a usage error saying what a cursor is, not a store failure.
func TestRunsEventsBadAfterIsUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "r.db")
	out, errOut, code := run(t, "", "run", noteWriter, "--task", "x", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	var res struct {
		RunID string `json:"runId"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.RunID == "" {
		t.Fatalf("run printed no run id: %v\n%s", err, out)
	}
	for _, after := range []string{"garbage", "c-000000000000000001", "c\xff", "g1/c0000000000000000001"} {
		out, errOut, code := run(t, "", "runs", "events", res.RunID, "--after", after, "--db", db)
		if code != cli.ExitUsage || !strings.Contains(errOut, "--after") {
			t.Errorf("--after %q: exit %d, want 2 naming --after\nstdout: %s\nstderr: %s", after, code, out, errOut)
		}
	}
	if out, errOut, code := run(t, "", "runs", "events", res.RunID, "--after", "c0000000000000000001", "--db", db); code != 0 || out == "" {
		t.Errorf("a good cursor: exit %d\n%s%s", code, out, errOut)
	}
}

// Issue 13: agentrt mcp delegate refuses an --expect that is not UTF-8
// before it serves (exit 2); its run dir is not made.
func TestDelegateExpectNotUTF8IsUsage(t *testing.T) {
	dir := t.TempDir()
	runDir := filepath.Join(dir, "delegations")
	out, errOut, code := run(t, "", "mcp", "delegate", "--manager", supManager, "--worker", noteWriter, "--expect", "do\xffne",
		"--run-dir", runDir, "--db", filepath.Join(dir, "s.db"))
	if code != cli.ExitUsage || !strings.Contains(errOut, "--expect") || !strings.Contains(errOut, "UTF-8") {
		t.Errorf("exit %d, want 2 naming --expect\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if _, err := os.Stat(runDir); err == nil {
		t.Errorf("the refused server made its run dir %s", runDir)
	}
}

// Issue 13: a run id whose directory in the workspace holds another run
// (its state.json names that run) is refused, not steered.
func TestSteerRefusesARunDirOfAnotherRun(t *testing.T) {
	ws := t.TempDir()
	dir := supervise.RunDirFor(ws, "foo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"schemaVersion":1,"runId":"bar","status":"running","updatedAtMs":1,"revision":1,"spawned":0,"live":0}`
	if err := os.WriteFile(filepath.Join(dir, supervise.StateFile), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "", "steer", "foo", "w", "Stop.", "--workspace", ws, "--wait", "1ms")
	if code != cli.ExitUsage || !strings.Contains(errOut, `"bar"`) {
		t.Errorf("exit %d, want 2 naming run bar\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("the refused steer wrote in the other run's directory: %v", got)
	}
}

// Issue 13: an error that is not the user's (the output cannot be
// written: a full disk) exits 1, not 2, and says what to do.
func TestOutputFailureIsNotUsage(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("this test writes to /dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{{"check", "--kinds"}, {"profile", "validate", noteWriter, "--json"}} {
		var errb strings.Builder
		code := cli.Main(t.Context(), args, cli.IO{In: strings.NewReader(""), Out: full, Err: &errb})
		if code != cli.ExitFailed || !strings.Contains(errb.String(), "no space left") || !strings.Contains(errb.String(), "free") {
			t.Errorf("%q to a full disk: exit %d, want 1 saying what to do\nstderr: %s", args, code, errb.String())
		}
	}
}

// Issue 13: a store that cannot be opened is a failure (exit 1) that says
// what to do, not a usage error: a PostgreSQL URL whose port refuses,
// and a SQLite path the process may not create.
func TestStoreOpenFailureIsNotUsage(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connecting is refused
	pg := "postgres://agentrt:agentrt@" + addr + "/x?sslmode=disable&connect_timeout=5"
	unwritable := filepath.Join("/proc", "self", "agentrt-test", "s.db") // procfs: no file can be made there, root or not
	for name, args := range map[string][]string{
		"runs list refused":  {"runs", "list", "--database", pg},
		"run refused":        {"run", noteWriter, "--task", "x", "--database", pg},
		"supervise refused":  {"supervise", supManager, "--task", "x", "--worker", noteWriter, "--database", pg, "--run-dir", t.TempDir()},
		"run unwritable":     {"run", noteWriter, "--task", "x", "--db", unwritable},
		"delegate run dir":   {"mcp", "delegate", "--manager", supManager, "--worker", noteWriter, "--run-dir", filepath.Join("/proc", "self", "agentrt-test"), "--db", filepath.Join(t.TempDir(), "s.db")},
		"fleet status":       {"fleet", "status", "--database", pg},
		"top store refused":  {"top", "--once", "--database", pg},
		"chat store refused": {"chat", noteWriter, "--database", pg},
	} {
		out, errOut, code := run(t, "", args...)
		if code != cli.ExitFailed || !strings.Contains(errOut, "check") {
			t.Errorf("%s: exit %d, want 1 saying what to check\nstdout: %s\nstderr: %s", name, code, out, errOut)
		}
	}
}

// Issue 13: a run started before run dirs were one-to-one with ids
// ("a:b" in "a_b") is still found by its id: the steer is written into
// that directory (nobody acknowledges: exit 1), not refused as no run.
func TestSteerFindsARunInItsEarlierDirectory(t *testing.T) {
	ws := t.TempDir()
	legacy := filepath.Join(ws, ".agent", "supervisor", "a_b")
	if err := os.MkdirAll(legacy, 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"schemaVersion":1,"runId":"a:b","status":"running","updatedAtMs":1,"revision":1,"spawned":0,"live":0}`
	if err := os.WriteFile(filepath.Join(legacy, supervise.StateFile), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, "", "steer", "a:b", "w", "Stop.", "--workspace", ws, "--wait", "1ms")
	if code != cli.ExitFailed || !strings.Contains(errOut, "did not acknowledge") {
		t.Errorf("exit %d, want 1 (written, not acknowledged)\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := entries(t, legacy); len(got) != 2 {
		t.Errorf("the run's earlier directory holds %v, want state.json and the steer request", got)
	}
}

// Issue 13, §6: a per-worker ceiling the run's budget can never give is
// a usage error naming both flags, before anything runs or is written.
func TestSupervisePerWorkerCeilingOverTheBudgetIsUsage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"dollars the budget does not cover", []string{"--worker-usd", "1"}, []string{"--worker-usd $1", "give --budget-usd"}},
		{"tokens over the budget", []string{"--worker-tokens", "5000", "--budget-tokens", "1000"}, []string{"--worker-tokens 5000", "--budget-tokens 1000"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			runDir := filepath.Join(dir, "run")
			args := append([]string{"supervise", supManager, "--task", "x", "--worker", noteWriter, "--run-dir", runDir,
				"--db", filepath.Join(dir, "s.db")}, tc.flags...)
			out, errOut, code := run(t, "", args...)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			if _, err := os.Stat(runDir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the refused run made its run dir (%v)", err)
			}
		})
	}
}
