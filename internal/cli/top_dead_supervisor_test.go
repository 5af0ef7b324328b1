package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// A supervisor SIGKILLed mid-run leaves its run dir with no finished
// record and state.json saying running; its supervise.lock still names
// it. agentrt top --once tells the run stopped, names the gone pid and
// says how to resume it, and shows its unsettled worker down, instead
// of "running" for ever; while the supervisor lived it showed running
// (runtime spec §3.6 "Persistence & resume": supervise.lock names the
// single-host owner; §11 top). The probe takes no lock: the supervisor
// is resumed at once after, which a probe holding the lock would refuse.
func TestTopTellsASIGKILLedSupervisor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the agentrt binary")
	}
	bin := buildAgentrt(t)
	slow := writeFile(t, "slow.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "drafting"}, {"delayMs": 600000}]}]}`)
	script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitOne+`, `+answerDone+`]}`)
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	var errOut strings.Builder
	cmd := exec.Command(bin, "supervise", supManager, "--task", "Write release notes.", "--worker", noteWriter, "--manager-script", script,
		"--run-id", "killed", "--run-dir", dir, "--db", db, "--worker-tokens", "1000", "--script", slow, "--json")
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	pid := strconv.Itoa(cmd.Process.Pid)

	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		recs, _, _ := supervise.ReadRunDir(context.Background(), dir)
		bound := false
		for _, r := range recs {
			bound = bound || r.Kind == supervise.KindExecutionBound
		}
		if bound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never started; stderr:\n%s", errOut.String())
		}
	}
	alive, aliveErr, code := run(t, "", "top", "--once", "--run-dir", dir)
	if code != 0 || aliveErr != "" {
		t.Fatalf("top of the live run: exit %d\n%s%s", code, alive, aliveErr)
	}
	if !regexp.MustCompile(`(?m)^> killed +running `).MatchString(alive) || strings.Contains(alive, "is gone") {
		t.Errorf("top of a run whose supervisor lives, want it running:\n%s", alive)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-exited
	if held, err := os.ReadFile(filepath.Join(dir, supervise.LockFile)); err != nil || !strings.Contains(string(held), `"pid":`+pid) {
		t.Fatalf("after SIGKILL supervise.lock should still name pid %s: %q %v", pid, held, err)
	}
	out, stderr, code := run(t, "", "top", "--once", "--run-dir", dir)
	if code != 0 || stderr != "" {
		t.Fatalf("top of the killed run: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`agentrt top: 1 run\(s\), 0 live`),
		regexp.MustCompile(`(?m)^> killed +stopped `),
		regexp.MustCompile(`supervisor pid ` + pid + ` is gone`),
		regexp.MustCompile(`resume with: agentrt supervise … --resume --run-dir ` + regexp.QuoteMeta(dir)),
		regexp.MustCompile(`killed:s1 +note +down `),
	} {
		if !want.MatchString(out) {
			t.Errorf("top of a run whose supervisor was SIGKILLed lacks %s:\n%s", want, out)
		}
	}
	js, jsErr, code := run(t, "", "top", "--json", "--run-dir", dir)
	if code != 0 || jsErr != "" {
		t.Fatalf("top --json of the killed run: exit %d\n%s%s", code, js, jsErr)
	}
	r := decode(t, js).Get
	runs, _ := r("runs")
	if runs.Len() != 1 {
		t.Fatalf("top --json: want one run:\n%s", js)
	}
	one := runs.Items()[0]
	sup := member(one, "supervisor")
	if member(one, "status").Str() != "stopped" || member(one, "live").Bool() || member(sup, "state").Str() != "gone" ||
		strconv.Itoa(int(member(sup, "pid").Float())) != pid || !strings.Contains(member(one, "resume").Str(), "--resume --run-dir "+dir) ||
		member(member(one, "workers").Items()[0], "state").Str() != "down" {
		t.Errorf("top --json of a run whose supervisor was SIGKILLed, want stopped, supervisor gone (pid %s), resume and its worker down:\n%s", pid, js)
	}
	// The probe left the lock free: the run resumes at once.
	rout, rerr, rcode := run(t, "", "supervise", supManager, "--worker", noteWriter, "--manager-script", script,
		"--run-id", "killed", "--run-dir", dir, "--db", db, "--worker-tokens", "1000", "--resume", "--json",
		"--script", writeFile(t, "fast.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "Done: the note."}]}]}`))
	if strings.Contains(rerr, "is held by") {
		t.Errorf("resume after top's probe refused as held: exit %d\n%s%s", rcode, rout, rerr)
	}
}
