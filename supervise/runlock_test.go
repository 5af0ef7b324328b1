package supervise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 "Persistence & resume" (issue 13 Deliver: the run dir holds
// supervise.lock): a second supervisor started on a run dir a live one
// drives — in another process — is refused at once, with an error
// naming the holder (pid, host, start, run) and what to do, matching
// ErrSpawnLogHeld; once the holder is SIGKILLed, the next supervisor
// takes the run over with no manual cleanup and resumes it (§15
// behaviour 46: the committed worker is not executed again).
func TestSuperviseLockRefusesASecondProcessUntilTheHolderDies(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	manager, want := uninterruptedRun(t)
	dir := t.TempDir()
	cmd, stderr := startSlowChild(t, childEnv+"=1", childDir+"="+dir)
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()

	exec := newCounting(t, workerProvider(t))
	o, err := processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = supervise.Supervise(context.Background(), manager, "t", o)
	var locked *supervise.RunDirLockedError
	if !errors.As(err, &locked) || !errors.Is(err, supervise.ErrSpawnLogHeld) {
		t.Fatalf("a second supervisor on a held run dir: %v, want a *RunDirLockedError matching ErrSpawnLogHeld; child stderr:\n%s", err, stderr)
	}
	if waited := time.Since(start); waited > 20*time.Second {
		t.Errorf("the refusal took %s; it must not wait for the holder", waited)
	}
	host, _ := os.Hostname()
	if h := locked.Holder; h == nil || h.PID != cmd.Process.Pid || h.Host != host || h.RunID != "run1" || h.StartedAt.IsZero() {
		t.Fatalf("holder %+v, want pid %d on %s, run run1, with its start", h, cmd.Process.Pid, host)
	}
	for _, part := range []string{"pid " + strconv.Itoa(cmd.Process.Pid), "host " + host, "run run1", "started ", "wait for it to end or stop it"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
	if n := exec.count("alpha") + exec.count("slow") + exec.count("beta"); n != 0 {
		t.Errorf("the refused supervisor executed %d workers", n)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no chance to clean up
		t.Fatal(err)
	}
	_ = cmd.Wait()
	got, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatalf("resuming after the holder died: %v", err)
	}
	if exec.count("alpha") != 0 || exec.count("slow") != 1 || exec.count("beta") != 1 {
		t.Errorf("the resuming process executed alpha %d, slow %d, beta %d times; want 0, 1, 1",
			exec.count("alpha"), exec.count("slow"), exec.count("beta"))
	}
	if got.Winner == nil || got.Winner.OutRef != want.Winner.OutRef {
		t.Errorf("winner %+v, want outRef %s", got.Winner, want.Winner.OutRef)
	}
	// A supervisor that ended gave the lock up and names no holder.
	if data, err := os.ReadFile(filepath.Join(dir, supervise.LockFile)); err != nil || len(data) != 0 {
		t.Errorf("supervise.lock after the run ended: %q, %v; want it empty", data, err)
	}
}

// Within one process too: a run dir a running Supervise holds refuses a
// second Supervise at once, naming this process; the journal's own lock
// stays under it.
func TestSuperviseLockRefusesASecondRunInProcess(t *testing.T) {
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o, err := processOptions(newCounting(t, workerProvider(t)), dir)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		data, err := os.ReadFile(filepath.Join(dir, supervise.LockFile))
		if err != nil {
			return supervise.BrainReport{}, err
		}
		h, err := supervise.ParseLockHolder(data)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		host, _ := os.Hostname()
		if diff := cmp.Diff(supervise.LockHolder{PID: os.Getpid(), Host: host, RunID: "run1", StartedAt: h.StartedAt}, h); diff != "" || h.StartedAt.IsZero() {
			return supervise.BrainReport{}, errors.New("supervise.lock (-want +got):\n" + diff)
		}
		o2 := o
		o2.Brain = pipeline()
		_, err = supervise.Supervise(ctx, manager, "t", o2)
		second <- err
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || res.Error != nil {
		t.Fatalf("%v %+v", err, res.Error)
	}
	err = <-second
	var locked *supervise.RunDirLockedError
	if !errors.As(err, &locked) || locked.Holder == nil || locked.Holder.PID != os.Getpid() || locked.RunDir != dir {
		t.Fatalf("second Supervise on the held dir: %v (holder %+v)", err, locked)
	}
}

// ParseLockHolder decodes strictly: unknown members, trailing data, a
// missing or bad pid and oversized files are refused.
func TestParseLockHolder(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"whole", `{"pid":42,"host":"h","startedAt":"2026-12-02T10:00:00Z","runId":"r"}`, true},
		{"newline", "{\"pid\":42,\"host\":\"h\",\"startedAt\":\"2026-12-02T10:00:00Z\"}\n", true},
		{"empty", ``, false},
		{"torn", `{"pid":42,"ho`, false},
		{"unknown member", `{"pid":42,"host":"h","startedAt":"2026-12-02T10:00:00Z","extra":1}`, false},
		{"trailing", `{"pid":42,"host":"h","startedAt":"2026-12-02T10:00:00Z"} {}`, false},
		{"no pid", `{"host":"h","startedAt":"2026-12-02T10:00:00Z"}`, false},
		{"negative pid", `{"pid":-1,"host":"h","startedAt":"2026-12-02T10:00:00Z"}`, false},
		{"oversized", `{"pid":42,"host":"` + strings.Repeat("h", supervise.MaxLockFileBytes) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := supervise.ParseLockHolder([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseLockHolder = %+v, %v; want ok %v", h, err, tc.ok)
			}
		})
	}
}

// FuzzParseLockHolder: any content of supervise.lock decodes or is
// refused with an error, never a panic, and what decodes names a
// process.
func FuzzParseLockHolder(f *testing.F) {
	f.Add([]byte(`{"pid":42,"host":"h","startedAt":"2026-12-02T10:00:00Z","runId":"r"}`))
	f.Add([]byte(`{"pid":0}`))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := supervise.ParseLockHolder(data)
		if err == nil && h.PID <= 0 {
			t.Fatalf("decoded a holder without a process: %+v", h)
		}
	})
}
