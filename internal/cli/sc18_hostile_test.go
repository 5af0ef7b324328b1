package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestSC18ResumeKeepsDeadlineAndRerunIsRefused drives agentrt as a user
// would across a SIGKILL: a run (--timeout 8s) whose fast worker settled
// and whose slow worker is mid-turn is killed. Re-running the same run dir
// without --resume is refused (exit 2, behaviour 47) and leaves the
// journal byte for byte; a --resume after the original deadline ends at
// once (behaviour 40: the absolute deadline is kept, not restarted), the
// settled worker is replayed without its check running again (behaviour
// 46: the check command counts its executions), the in-doubt worker is
// charged its ceiling and named in spendGaps as never-settled, and
// tokensKnown is false because spendGaps is not empty (behaviour 43).
func TestSC18ResumeKeepsDeadlineAndRerunIsRefused(t *testing.T) {
	const timeout = 8 * time.Second
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "run")
	db := filepath.Join(tmp, "runs.db")
	count := filepath.Join(tmp, "checks")
	workers := writeFile(t, "workers.json", `{"turns": [
		{"match": "fast", "repeat": true, "steps": [{"text": "fast result"}, {"usage": {"inputTokens": 5, "outputTokens": 5}, "mode": "delta"}]},
		{"match": "slow", "repeat": true, "steps": [{"delayMs": 600000}, {"text": "slow result"}]}]}`)
	first := managerScript(t, `{"turns": [
		{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "fast", "task": "fast"}},
		           {"verb": "spawn_worker", "args": {"profile": "note-writer", "label": "slow", "task": "slow"}}],
		 "usage": {"inputTokens": 10, "outputTokens": 2}},
		{"calls": [{"verb": "await_event", "args": {"timeoutMs": 60000}}], "usage": {"inputTokens": 1, "outputTokens": 1}},
		{"hang": true}]}`)
	args := func(script string, extra ...string) []string {
		return append([]string{"supervise", supManager, "--worker", noteWriter, "--manager-script", script, "--script", workers,
			"--check-cmd", "cat >/dev/null; echo ran >> " + count, "--run-dir", dir, "--db", db}, extra...)
	}
	started := time.Now()
	cmd, _, _ := startAgentrtEP(t, args(first, "--task", "Write release notes.", "--run-id", "sc18", "--timeout", timeout.String(),
		"--worker-tokens", "1000")...)
	journalHas(t, dir, "the fast worker's settle", func(m map[string]any) bool {
		return m["kind"] == "settled" && m["node"] == "sc18:s1"
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	journal := filepath.Join(dir, supervise.SpawnJournalFile)
	before, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}

	// Behaviour 47: the same run dir without --resume is refused.
	_, errOut, code := run(t, "", args(first, "--task", "Write release notes.", "--run-id", "sc18", "--json")...)
	if code != 2 || !strings.Contains(errOut, "--resume") {
		t.Errorf("a rerun without --resume: exit %d, want 2 with a hint to --resume\n%s", code, errOut)
	}
	if after, err := os.ReadFile(journal); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the refused rerun changed the journal (err %v)", err)
	}

	// Behaviour 40: resume once the original deadline has passed.
	time.Sleep(time.Until(started.Add(timeout + time.Second)))
	hang := managerScript(t, `{"turns": [{"hang": true}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resume := exec.CommandContext(ctx, buildAgentrt(t), args(hang, "--resume", "--json")...)
	var out, rerr bytes.Buffer
	resume.Stdout, resume.Stderr = &out, &rerr
	begun := time.Now()
	err = resume.Run()
	took := time.Since(begun)
	if took >= timeout {
		t.Errorf("the resume after the deadline took %s: it ran a fresh deadline instead of keeping the original one\n%s", took, rerr.String())
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("resume: %v\n%s", err, rerr.String())
	}
	var res struct {
		Status, Kind string
		Resumed      bool
		Winner       struct{ Node string }
		SpentTotal   struct {
			Tokens      struct{ Total int64 }
			TokensKnown bool
		}
		SpendGaps []struct {
			ID, Kind string
			Channels []string
		}
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("resume --json is not JSON: %v\n%s\n%s", err, out.String(), rerr.String())
	}
	if res.Status != "winner" || res.Kind != "winner" || res.Winner.Node != "sc18:s1" || !res.Resumed || resume.ProcessState.ExitCode() != 0 {
		t.Errorf("resume: exit %d, %+v, want the replayed fast worker winning with exit 0\n%s", resume.ProcessState.ExitCode(), res, rerr.String())
	}
	if b, err := os.ReadFile(count); err != nil || strings.Count(string(b), "ran") != 1 {
		t.Errorf("the check command ran %q times (err %v), want once: the settled worker was judged again", b, err)
	}
	gap := false
	for _, g := range res.SpendGaps {
		if g.ID == "sc18:s2" && g.Kind == "never-settled" && slices.Contains(g.Channels, "tokens") {
			gap = true
		}
	}
	if !gap || res.SpentTotal.TokensKnown || res.SpentTotal.Tokens.Total < 1000 {
		t.Errorf("the in-doubt worker must be charged its 1000-token ceiling and named never-settled: %+v\n%s", res, out.String())
	}
	if res.SpentTotal.TokensKnown != (len(res.SpendGaps) == 0) {
		t.Errorf("tokensKnown %v with %d spendGaps (behaviour 43)", res.SpentTotal.TokensKnown, len(res.SpendGaps))
	}
}

// TestSC18ExplicitZeroWorkerTokensRefused: --worker-tokens 0 given on
// purpose is refused as a usage error (exit 2, before anything starts),
// as --iterations 0 and an empty --expect or --check-cmd are, instead of
// being silently replaced by the default share of --budget-tokens (a
// reservation the user did not ask for, 50,000 tokens here).
func TestSC18ExplicitZeroWorkerTokensRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	out, errOut, code := run(t, "", superviseArgs(t, script, dir, "--json", "--worker-tokens", "0")...)
	if code != 2 || !strings.Contains(errOut, "--worker-tokens") {
		t.Errorf("--worker-tokens 0: exit %d, want 2 naming the flag\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile)); err == nil {
		t.Errorf("a run started with --worker-tokens 0")
	}
}
