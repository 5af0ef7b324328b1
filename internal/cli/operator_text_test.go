package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The operator's text that ends up in JSON (a worker reference, a
// message, a reason, a task, an expectation, a run id) is checked when
// the command line is parsed: text that is not UTF-8 is a usage error
// (exit 2) naming the argument or flag and saying what to do — never a
// conflict with a request that names the same worker, a canonical-JSON
// failure deep inside, or a journal write failing after work started.
func TestOperatorTextNotUTF8IsUsageError(t *testing.T) {
	const bad = "no\xffte"
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	// Each case's "RUNDIR" and "DB" are fresh.
	cases := []struct {
		name, want string
		args       []string
	}{
		{"steer worker", "WORKER", []string{"steer", "RUNDIR", bad, "Stop.", "--wait", "1ms"}},
		{"steer message", "MESSAGE", []string{"steer", "RUNDIR", "note", bad, "--wait", "1ms"}},
		{"cancel worker", "WORKER", []string{"cancel", "RUNDIR", bad, "--wait", "1ms"}},
		{"cancel reason", "--reason", []string{"cancel", "RUNDIR", "note", "--reason", bad, "--wait", "1ms"}},
		{"cancel operator", "--operator", []string{"cancel", "RUNDIR", "--operator", bad, "--wait", "1ms"}},
		{"supervise steer worker", "WORKER", []string{"supervise", "steer", "RUNDIR", bad, "--message", "Stop.", "--operation-id", "s1", "--wait", "1ms"}},
		{"supervise steer message", "--message", []string{"supervise", "steer", "RUNDIR", "note", "--message", bad, "--operation-id", "s1", "--wait", "1ms"}},
		{"supervise cancel worker", "WORKER", []string{"supervise", "cancel", "RUNDIR", bad, "--operation-id", "c1", "--wait", "1ms"}},
		{"supervise task", "--task", []string{"supervise", supManager, "--task", bad, "--worker", noteWriter,
			"--manager-script", script, "--run-dir", "RUNDIR", "--run-id", "rel", "--db", "DB"}},
		{"supervise expect", "--expect", []string{"supervise", supManager, "--task", "Write.", "--expect", bad, "--worker", noteWriter,
			"--manager-script", script, "--run-dir", "RUNDIR", "--run-id", "rel", "--db", "DB"}},
		{"supervise run id", "--run-id", []string{"supervise", supManager, "--task", "Write.", "--worker", noteWriter,
			"--manager-script", script, "--run-dir", "RUNDIR", "--run-id", bad, "--db", "DB"}},
		{"graph task", "--task", []string{"graph", reviewGraph, "--task", bad, "--directives", directives,
			"--run-dir", "RUNDIR", "--db", "DB"}},
		{"graph expect", "--expect", []string{"graph", reviewGraph, "--task", "Fix it.", "--expect", bad, "--directives", directives,
			"--run-dir", "RUNDIR", "--db", "DB"}},
		{"run task", "--task", []string{"run", noteWriter, "--task", bad, "--db", "DB"}},
		{"run expect", "--expect", []string{"run", noteWriter, "--task", "Write.", "--expect", bad, "--db", "DB"}},
		{"runs show", "RUN", []string{"runs", "show", bad, "--db", "DB"}},
		{"runs events", "RUN", []string{"runs", "events", bad, "--db", "DB"}},
		{"runs cancel", "RUN", []string{"runs", "cancel", bad, "--db", "DB", "--wait", "0", "--json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runDir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
			args := make([]string, len(c.args))
			for i, a := range c.args {
				args[i] = strings.NewReplacer("RUNDIR", runDir, "DB", db).Replace(a)
			}
			out, errOut, code := run(t, "", args...)
			if code != 2 || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "UTF-8") {
				t.Errorf("exit %d, want 2 with a usage error naming %s and UTF-8\nstdout: %s\nstderr: %s", code, c.want, out, errOut)
			}
			if ents, _ := os.ReadDir(runDir); len(ents) != 0 {
				t.Errorf("refused, yet the run dir holds %d entries (first %s)", len(ents), ents[0].Name())
			}
		})
	}
}

// A worker reference or run id holding a NUL or another control
// character, and a run id that is not one path element ("/", "." or
// ".."), is a usage error up front: a run id names the run's directory
// under the workspace, and "--run-id .." would put the run in
// WORKSPACE/.agent itself.
func TestOperatorNamesRefused(t *testing.T) {
	ws := t.TempDir()
	db := filepath.Join(t.TempDir(), "runs.db")
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	for _, w := range []string{"no\x00te", "no\nte", "no\x1bte", "no\u0085te"} {
		runDir := t.TempDir()
		for _, args := range [][]string{
			{"steer", runDir, w, "Stop.", "--wait", "1ms"},
			{"cancel", runDir, w, "--wait", "1ms"},
			{"supervise", "steer", runDir, w, "--message", "Stop.", "--operation-id", "s1", "--wait", "1ms"},
			{"supervise", "cancel", runDir, w, "--operation-id", "c1", "--wait", "1ms"},
		} {
			out, errOut, code := run(t, "", args...)
			if code != 2 || !strings.Contains(errOut, "WORKER") || !strings.Contains(errOut, "control character") {
				t.Errorf("%q: exit %d, want 2 naming WORKER and the control character\nstdout: %s\nstderr: %s", args, code, out, errOut)
			}
		}
		if ents, _ := os.ReadDir(runDir); len(ents) != 0 {
			t.Errorf("worker %q refused, yet the run dir holds %s", w, ents[0].Name())
		}
	}
	for _, id := range []string{"..", ".", "a/b", "../../escape", `a\b`, "r\x00n", "r\nn"} {
		for _, args := range [][]string{
			{"supervise", supManager, "--task", "Write.", "--worker", noteWriter, "--manager-script", script,
				"--workspace", ws, "--run-id", id, "--db", db},
			{"graph", reviewGraph, "--task", "Fix it.", "--directives", directives, "--workspace", ws, "--run-id", id, "--db", db},
		} {
			out, errOut, code := run(t, "", args...)
			if code != 2 || !strings.Contains(errOut, "--run-id") {
				t.Errorf("%q: exit %d, want 2 naming --run-id\nstdout: %s\nstderr: %s", args, code, out, errOut)
			}
		}
	}
	if ents, _ := os.ReadDir(ws); len(ents) != 0 {
		t.Errorf("refused run ids, yet the workspace holds %s", ents[0].Name())
	}
	// A RUN that is not a directory is a run id in the workspace, whose
	// directory's name replaces every other character with '_': a RUN
	// that is not UTF-8 or holds a control character would name the
	// directory of run r_n, and is refused instead.
	if err := os.MkdirAll(filepath.Join(ws, ".agent", "supervisor", "r_n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r\xffn", "r\x00n", "r\nn"} {
		for _, args := range [][]string{
			{"steer", id, "note", "Stop.", "--workspace", ws, "--wait", "1ms"},
			{"cancel", id, "note", "--workspace", ws, "--wait", "1ms"},
		} {
			out, errOut, code := run(t, "", args...)
			if code != 2 || !strings.Contains(errOut, "RUN") {
				t.Errorf("%q: exit %d, want 2 naming RUN\nstdout: %s\nstderr: %s", args, code, out, errOut)
			}
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(ws, ".agent", "supervisor", "r_n")); len(ents) != 0 {
		t.Errorf("RUN refused, yet run r_n's directory holds %s", ents[0].Name())
	}
}

// agentrt fleet submit checks its text as the other run commands do:
// --task, --expect, --idempotency-key and --run-id that are not UTF-8,
// a --run-id or --idempotency-key holding a control character, and one
// given empty (issue 13), are usage errors before anything is recorded
// or enqueued.
func TestFleetSubmitOperatorTextRefused(t *testing.T) {
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--task", []string{"--task", "no\xffte"}},
		{"--expect", []string{"--task", "Write.", "--expect", "no\xffte"}},
		{"--idempotency-key", []string{"--task", "Write.", "--idempotency-key", "k\xff"}},
		{"--run-id", []string{"--task", "Write.", "--run-id", "r\xffn"}},
		{"--run-id", []string{"--task", "Write.", "--run-id", "r\x00n"}},
		{"--idempotency-key", []string{"--task", "Write.", "--idempotency-key", "k\x00ey"}},
		{"--idempotency-key", []string{"--task", "Write.", "--idempotency-key="}},
		{"--run-id", []string{"--task", "Write.", "--run-id="}},
	} {
		args := append(append([]string{"fleet", "submit", noteWriter}, c.args...), db...)
		out, errOut, code := run(t, "", args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, want 2 naming %s\nstdout: %s\nstderr: %s", c.args, code, c.want, out, errOut)
		}
	}
	// agentrt run --enqueue checks its key as fleet submit does.
	for _, key := range []string{"k\x00ey", ""} {
		args := append([]string{"run", noteWriter, "--enqueue", "--task", "Write.", "--idempotency-key=" + key}, db...)
		out, errOut, code := run(t, "", args...)
		if code != 2 || !strings.Contains(errOut, "--idempotency-key") {
			t.Errorf("run --enqueue --idempotency-key %q: exit %d, want 2 naming it\nstdout: %s\nstderr: %s", key, code, out, errOut)
		}
	}
	for _, sub := range [][]string{{"fleet", "show", "r\xffn"}, {"fleet", "cancel", "r\xffn"}, {"fleet", "recover", "r\xffn", "--provider", "scripted"}} {
		args := append(sub, db...)
		out, errOut, code := run(t, "", args...)
		if code != 2 || !strings.Contains(errOut, "RUN") || !strings.Contains(errOut, "UTF-8") {
			t.Errorf("%q: exit %d, want 2 naming RUN\nstdout: %s\nstderr: %s", sub, code, out, errOut)
		}
	}
	out, errOut, code := run(t, "", append([]string{"fleet", "status", "--json"}, db...)...)
	if code != 0 || strings.Contains(out, "pending\":1") {
		t.Errorf("fleet status after refusals: exit %d\n%s%s", code, out, errOut)
	}
}
