//go:build linux

package supervise_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// supervise.ProbeRunDirLock tells, without taking supervise.lock, whether
// the supervisor it names still drives the run (§3.6 "Persistence &
// resume": the lock gives single-host ownership and names its holder):
// a holder whose pid is dead, or a file no process holds a lock on (a
// stale name whose pid a stranger reuses, or an emptied file), is gone;
// a locked file is alive even before its new holder named itself; a
// holder on another host is not checked. The probe leaves the lock free
// for the next supervisor (lockable after every case).
func TestProbeRunDirLock(t *testing.T) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		t.Skipf("no host name to compare holders with: %v", err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stranger := exec.Command("sleep", "60")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stranger.Process.Kill(); _ = stranger.Wait() }()
	holder := func(pid int, h string) string {
		b, err := json.Marshal(supervise.LockHolder{PID: pid, Host: h, StartedAt: time.Now().UTC(), RunID: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	tests := []struct {
		name    string
		content string
		locked  bool
		want    supervise.HolderState
		why     string
	}{
		{"holder killed", holder(dead.Process.Pid, host), false, supervise.HolderGone, "supervisor pid " + strconv.Itoa(dead.Process.Pid) + " is gone"},
		{"holder's pid reused by a stranger", holder(stranger.Process.Pid, host), false, supervise.HolderGone, "is gone (no process holds supervise.lock)"},
		{"holder alive and locking", holder(os.Getpid(), host), true, supervise.HolderAlive, "supervisor pid " + strconv.Itoa(os.Getpid()) + " holds"},
		{"new holder locked, not named yet", holder(dead.Process.Pid, host), true, supervise.HolderAlive, "holds supervise.lock"},
		{"released: emptied", "", false, supervise.HolderGone, "no supervisor holds supervise.lock"},
		{"just created, locked", "", true, supervise.HolderAlive, "a process holds supervise.lock"},
		{"holder on another host", holder(dead.Process.Pid, host+"-elsewhere"), false, supervise.HolderRemote, "on host " + host + "-elsewhere, not checked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, supervise.LockFile)
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if tt.locked {
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					t.Fatal(err)
				}
			}
			p, err := supervise.ProbeRunDirLock(dir)
			if err != nil {
				t.Fatal(err)
			}
			if p.State != tt.want || !strings.Contains(p.Why, tt.why) {
				t.Errorf("probe: %s %q, want %s containing %q", p.State, p.Why, tt.want, tt.why)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.content {
				t.Errorf("the probe changed supervise.lock: %q, was %q", got, tt.content)
			}
			if !tt.locked {
				// Nothing of the probe holds the lock.
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					t.Errorf("after the probe the lock is not free: %v", err)
				}
			}
		})
	}
	if _, err := supervise.ProbeRunDirLock(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a run dir without supervise.lock (its journal in a store): %v, want fs.ErrNotExist", err)
	}
}
