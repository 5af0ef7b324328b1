package cli_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// SIGTERM (what a service manager or `kill` sends) winds a supervised
// run down as an interrupt does: the real agentrt binary prints the
// interrupted result — no winner, reason aborted (the caller's signal,
// spec §13: the context replaces AbortSignal), the cancellation's source
// "context" and no §3.6 cancelled members at the top — exits 1, and
// --resume then drives the same run on to its winner. Before, SIGTERM
// killed the process with nothing printed and no record ended.
func TestSupervisedRunEndsOnSIGTERMAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agentrt binary")
	}
	t.Parallel()
	bin := buildAgentrt(t)
	slow := writeFile(t, "slow.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "drafting"}, {"delayMs": 600000}]}]}`)
	fast := writeFile(t, "fast.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "Done: the note."}]}]}`)
	// The resumed manager goes on from the await the signal cut: it hears
	// the first worker ended with the run, spawns again and awaits that one.
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	dir, db := t.TempDir(), t.TempDir()+"/runs.db"
	args := []string{"supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter, "--manager-script", script,
		"--run-id", "term", "--run-dir", dir, "--db", db, "--worker-tokens", "1000", "--expect", "Done", "--json"}

	var out, errOut strings.Builder
	cmd := exec.Command(bin, append(args, "--script", slow)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })

	// Wait until the worker's execution is bound: the run is mid-flight.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		recs, _, err := supervise.ReadRunDir(context.Background(), dir)
		bound := false
		for _, r := range recs {
			bound = bound || (err == nil && r.Kind == supervise.KindExecutionBound)
		}
		if bound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never started; stderr:\n%s", errOut.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
		exited <- err
	case <-time.After(30 * time.Second):
		t.Fatalf("agentrt still runs 30 s after SIGTERM; stderr:\n%s", errOut.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("after SIGTERM: %v, want exit 1; stdout:\n%s\nstderr:\n%s", err, out.String(), errOut.String())
	}
	res := decode(t, out.String())
	if st, why := member(res, "status").Str(), member(res, "reason").Str(); st != "no-winner" || why != string(supervise.ReasonAborted) {
		t.Errorf("after SIGTERM: %s %s, want no-winner aborted:\n%s", st, why, out.String())
	}
	if src := member(member(res, "cancellation"), "source").Str(); src != supervise.CancelSourceContext {
		t.Errorf("cancellation source %q, want %q:\n%s", src, supervise.CancelSourceContext, out.String())
	}
	if _, top := res.Get("cancellationReason"); top {
		t.Errorf("an aborted result carries §3.6 cancelled members at the top:\n%s", out.String())
	}

	out2, errOut2, code := run(t, "", append(args, "--script", fast, "--resume")...)
	if code != 0 || member(decode(t, out2), "status").Str() != "winner" {
		t.Fatalf("resume after SIGTERM: exit %d, want a winner:\n%s%s", code, out2, errOut2)
	}
}
