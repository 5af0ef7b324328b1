package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// Task D2 point 2, the file journal on one host: a supervisor paused
// with SIGSTOP is alive, so its supervise.lock still holds the run dir —
// there is no lease to lapse. A second supervisor is refused at once,
// and again well after any lease would have run out, naming the paused
// pid, and neither refusal touches the journal. Once the paused holder
// is SIGKILLed (a stopped process dies at once), the second takes the
// run over: the committed worker is not run again, the run settles with
// the uninterrupted run's winner and the pool is conserved at the end.
func TestSuperviseLockHoldsWhileItsHolderIsPaused(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, want := uninterruptedRun(t)
	dir := t.TempDir()
	cmd, stderr := startSlowChild(t, childEnv+"=1", childDir+"="+dir)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	journalPath := filepath.Join(dir, supervise.SpawnJournalFile)
	before, err := os.ReadFile(journalPath)
	if err != nil {
		t.Fatal(err)
	}

	exec := newCounting(t, workerProvider(t))
	o, err := processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(when string) {
		t.Helper()
		_, err := supervise.Supervise(context.Background(), manager, "t", o)
		var locked *supervise.RunDirLockedError
		if !errors.As(err, &locked) || locked.Holder == nil || locked.Holder.PID != cmd.Process.Pid {
			t.Fatalf("%s: a second supervisor on the paused holder's run dir: %v, want a *RunDirLockedError naming pid %d; child stderr:\n%s",
				when, err, cmd.Process.Pid, stderr)
		}
	}
	refused("at once")
	// kernel.MinLeaseTTL is a second: three seconds paused is past any
	// lease a store journal could have held; the lock does not lapse.
	time.Sleep(3 * time.Second)
	refused("three seconds later")
	if after, err := os.ReadFile(journalPath); err != nil || string(after) != string(before) {
		t.Fatalf("the refused supervisors changed the journal (%v):\nbefore %s\nafter  %s", err, before, after)
	}
	if n := exec.count("alpha") + exec.count("slow") + exec.count("beta"); n != 0 {
		t.Fatalf("the refused supervisors executed %d workers", n)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	driven := false
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		rep, err := pipeline(pipelineTasks...).Drive(ctx, c, task)
		checkPoolConserved(t, c.Readout(), "after the take-over's brain")
		driven = true
		return rep, err
	})
	got, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatalf("taking over after the paused holder was killed: %v", err)
	}
	if exec.count("alpha") != 0 || exec.count("slow") != 1 || exec.count("beta") != 1 {
		t.Errorf("the take-over executed alpha %d, slow %d, beta %d times; want 0, 1, 1",
			exec.count("alpha"), exec.count("slow"), exec.count("beta"))
	}
	if got.Winner == nil || got.Winner.OutRef != want.Winner.OutRef {
		t.Errorf("winner %+v, want outRef %s", got.Winner, want.Winner.OutRef)
	}
	if !driven {
		t.Error("the take-over's brain was not driven")
	}
}

// Task D2 point 2, a stale supervise.lock: its holder died without a
// chance to empty it (SIGKILL), and its pid was reused by an unrelated
// live process on this host. The lock is the open file's flock, not the
// pid the file names, so the next supervisor takes the run over at once
// (no pid liveness guess refuses it) and names itself in the file.
func TestSuperviseLockNamingALiveStrangerIsNoLock(t *testing.T) {
	dir := t.TempDir()
	stranger := exec.Command("sleep", "60")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stranger.Process.Kill()
		_ = stranger.Wait()
	}()
	host, _ := os.Hostname()
	stale, err := json.Marshal(supervise.LockHolder{PID: stranger.Process.Pid, Host: host, RunID: "run1", StartedAt: time.Now().Add(-time.Hour).UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, supervise.LockFile), stale, 0o600); err != nil {
		t.Fatal(err)
	}
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	o, err := processOptions(newCounting(t, workerProvider(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	inner := o.Brain
	var named supervise.LockHolder
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		data, err := os.ReadFile(filepath.Join(dir, supervise.LockFile))
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if named, err = supervise.ParseLockHolder(data); err != nil {
			return supervise.BrainReport{}, err
		}
		return inner.Drive(ctx, c, task)
	})
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || res.Winner == nil {
		t.Fatalf("a run dir whose lock names a live stranger: %v %+v, want the run taken and won", err, res)
	}
	if named.PID != os.Getpid() {
		t.Errorf("supervise.lock named pid %d while the run went, want this process %d", named.PID, os.Getpid())
	}
}
