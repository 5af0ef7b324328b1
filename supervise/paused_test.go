package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// pausedChildEnv makes the re-executed test binary run a supervisor
// whose "slow" worker waits for the file slow-release in its run dir,
// journaling in the SQLite spawn store childStore names (a one-second
// lease). It records every task its executor ran in executed.txt and
// how Supervise ended in outcome.txt, then exits 0.
const pausedChildEnv = "AGENTRT_SUPERVISE_PAUSED_CHILD"

func supervisePausable(dir, db string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var s scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &s); err != nil {
		return fail(err)
	}
	executed, err := os.OpenFile(filepath.Join(dir, "executed.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fail(err)
	}
	defer executed.Close()
	inner := &supervise.KernelExecutor{Provider: scripted.New(&s, scripted.Options{}), Store: memory.New(nil)}
	exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
		fmt.Fprintln(executed, w.Task)
		if strings.Contains(w.Task, "slow") {
			if err := os.WriteFile(filepath.Join(dir, "slow-started"), nil, 0o600); err != nil {
				return supervise.WorkResult{}, err
			}
			for {
				if _, err := os.Stat(filepath.Join(dir, "slow-release")); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		return inner.Execute(ctx, w)
	})
	o, err := processOptions(exec, dir)
	if err != nil {
		return fail(err)
	}
	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	manager, err := processManager()
	if err != nil {
		return fail(err)
	}
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	outcome := ""
	switch {
	case errors.Is(err, supervise.ErrSpawnLogLost):
		outcome = "lost: " + err.Error()
	case err != nil:
		outcome = "error: " + err.Error()
	case res.Winner != nil:
		outcome = "winner: " + res.Winner.OutRef
	default:
		outcome = "no winner: " + string(res.Reason)
	}
	if err := os.WriteFile(filepath.Join(dir, "outcome.txt"), []byte(outcome), 0o600); err != nil {
		return fail(err)
	}
	return 0
}

// RES-03, behaviour 46, with the spawn journal in the store and a real
// process paused past the journal's lease: a supervisor is SIGSTOPped
// while its second worker runs. Another process resumes the run: it
// takes the journal over at the next lease generation, does not execute
// the committed worker again, and settles with the uninterrupted run's
// winner. Then the paused supervisor is SIGCONTed and its worker
// returns: fenced, it journals nothing more (every record after the
// takeover is the resumer's), spawns nothing more, and delivers no
// winner — Supervise returns ErrSpawnLogLost.
func TestPausedSupervisorIsFencedBehaviour46(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	o, err := processOptions(newCounting(t, workerProvider(t)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || want.Winner == nil {
		t.Fatalf("uninterrupted run: %v %+v", err, want)
	}

	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "runs.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), pausedChildEnv+"=1", childDir+"="+dir, childStore+"="+db)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(dir, "slow-started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child never started its slow worker; stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	st, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counting := newCounting(t, workerProvider(t))
	o, err = processOptions(counting, dir)
	if err != nil {
		t.Fatal(err)
	}
	o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
	var got supervise.SupervisedResult
	for {
		got, err = supervise.Supervise(context.Background(), manager, "t", o)
		if !errors.Is(err, supervise.ErrSpawnLogHeld) {
			break // held only while the paused process's lease lasts
		}
		if time.Now().After(deadline) {
			t.Fatalf("still held: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if counting.count("alpha") != 0 || counting.count("slow") != 1 || counting.count("beta") != 1 {
		t.Errorf("the resuming process executed alpha %d, slow %d, beta %d times; want 0, 1, 1",
			counting.count("alpha"), counting.count("slow"), counting.count("beta"))
	}
	if got.Winner == nil || got.Winner.OutRef != want.Winner.OutRef || got.Winner.Node != want.Winner.Node {
		t.Fatalf("winner %+v, want %+v", got.Winner, want.Winner)
	}
	before, err := st.Events(context.Background(), "run1", "", 0)
	if err != nil {
		t.Fatal(err)
	}

	// The paused supervisor wakes up and its slow worker returns.
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "slow-release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the resumed supervisor did not end within 2 minutes; stderr:\n%s", stderr.String())
	}
	outcome, err := os.ReadFile(filepath.Join(dir, "outcome.txt"))
	if err != nil {
		t.Fatalf("the resumed supervisor recorded no outcome (%v); stderr:\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(string(outcome), "lost: ") || !strings.Contains(string(outcome), "superseded") {
		t.Errorf("the resumed supervisor ended %q; want ErrSpawnLogLost, fenced by the takeover, and no winner", outcome)
	}
	executed, err := os.ReadFile(filepath.Join(dir, "executed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(executed)); strings.Join(got, " ") != "write alpha write slow" {
		t.Errorf("the paused supervisor executed %q; want only alpha and the slow worker it was running", got)
	}
	after, err := st.Events(context.Background(), "run1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		for _, e := range after[len(before):] {
			t.Errorf("journal event %d (%s %s) appended after the resumer's run ended: the paused supervisor wrote past the fence", e.Sequence, e.ID, e.Type)
		}
	}
	run, err := st.GetRun(context.Background(), "run1")
	if err != nil || run.Generation != 2 {
		t.Errorf("the journal's run %+v (%v): want one takeover (generation 2)", run, err)
	}
}
