package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// TestSC18ManagerScriptHostileShapes: a --manager-script file that a
// lenient JSON reader would take a guess at is refused before the run
// starts, with an error naming where in the file it went wrong (a JSON
// pointer), and no journal is written (hostile inputs; behaviour 47's
// "refuses instead of overwriting" applies to a bad script as well).
// A member given twice is refused rather than read last-wins (the worker
// --script and the graph file already refuse it): which turns a script
// holds must not be a parser's guess.
func TestSC18ManagerScriptHostileShapes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"duplicate top-level member", `{"turns": [{"text": "a"}], "turns": [{"text": "b"}]}`,
			[]string{"/turns", "more than once"}},
		{"duplicate nested member", `{"turns": [{"text": "a", "hang": false, "hang": true}]}`,
			[]string{"/turns/0/hang", "more than once"}},
		{"unknown member", `{"turns": [{"calls": [{"verb": "stop", "args": {}}]}, {"text": "a", "bogus": 1}]}`,
			[]string{"/turns/1/bogus", "unknown member"}},
		{"unknown call member", `{"turns": [{"calls": [{"verb": "stop", "extra": 1}]}]}`,
			[]string{"/turns/0/calls/0/extra", "unknown member"}},
		{"truncated", `{"turns": [{"calls": [`, []string{"/turns/0/calls/0", "end of input"}},
		{"deeply nested", `{"turns": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`,
			[]string{"nesting deeper than"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			script := managerScript(t, tc.body)
			// --timeout bounds a script read last-wins into a hanging turn.
			out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--json", "--timeout", "30s")...)
			if code == 0 {
				t.Fatalf("a hostile manager script was run: exit 0\n%s%s", out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%.600s", w, errOut)
				}
			}
			if strings.Contains(errOut, "started") {
				t.Errorf("the run started:\n%s", errOut)
			}
			if _, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile)); err == nil {
				t.Errorf("a journal was written for a refused script")
			}
		})
	}
}

// TestSC18CheckCommandKilledBySignal: a --check-cmd that crashes (killed
// by a signal) does not deliver (behaviour 41), and the verdict says it
// was killed by that signal rather than claiming the command "exited -1",
// an exit status no process has.
func TestSC18CheckCommandKilledBySignal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--json", "--timeout", "60s", "--check-cmd", "kill -KILL $$")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (no winner)\n%s%s", code, out, errOut)
	}
	res := decode(t, out)
	if got := member(res, "status").Str(); got != "no-winner" {
		t.Errorf("status %q, want no-winner", got)
	}
	workers := member(res, "workers").Items()
	if len(workers) != 1 || member(workers[0], "delivered").Bool() {
		t.Fatalf("workers: %s", out)
	}
	reason := member(member(workers[0], "verdict"), "reason").Str()
	if strings.Contains(reason, "exited -1") || !strings.Contains(reason, "signal") || !strings.Contains(reason, "killed") {
		t.Errorf("verdict reason %q: want it killed by a signal, not an exit status", reason)
	}
}
