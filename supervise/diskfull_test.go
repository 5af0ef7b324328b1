//go:build linux

package supervise_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// Task D2 point 4: the run dir's file journal on a real, tiny tmpfs that
// fills up mid-run (ENOSPC) after the first worker settled. Whichever
// write the full disk refuses (a spawn record, or — the journal file's
// last page still having room — a result blob), the run must say so
// with the disk's error, never end as a silent success, and run no
// worker twice; the settled worker stays committed: once space is
// freed, a resume replays it (not run again) and the run wins. Needs the privilege to mount a tmpfs (root with
// CAP_SYS_ADMIN); skipped, saying so, without it.
func TestFileJournalOnAFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): this test needs root with CAP_SYS_ADMIN", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := filepath.Join(mnt, "run")
	filler := filepath.Join(mnt, "filler")
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	exec := newCounting(t, workerProvider(t))
	o, err := processOptions(exec, dir)
	if err != nil {
		t.Fatal(err)
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"}); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
			return supervise.BrainReport{}, err
		}
		if err := fill(filler); err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write beta"}); err != nil {
			return supervise.BrainReport{}, err
		}
		_, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		return supervise.BrainReport{}, err
	})
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	t.Logf("on the full disk: status %q, err %v", res.Status, err)
	if err == nil && res.Error == nil {
		t.Errorf("the run on a full disk ended with no error: %+v", res)
	}
	said := ""
	if err != nil {
		said = err.Error()
	}
	if res.Error != nil {
		said += " " + res.Error.Message
	}
	if !errors.Is(err, syscall.ENOSPC) && !strings.Contains(said, syscall.ENOSPC.Error()) {
		t.Errorf("the run's error %q does not name the full disk (ENOSPC)", said)
	}
	if exec.count("alpha") != 1 || exec.count("beta") > 1 {
		t.Errorf("on the full disk alpha ran %d times, beta %d; want 1 and at most 1", exec.count("alpha"), exec.count("beta"))
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	o.Brain = pipeline("write alpha", "write beta")
	again, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || again.Winner == nil {
		t.Fatalf("resumed with space again: %v %+v", err, again)
	}
	if exec.count("alpha") != 1 || exec.count("beta") != 1 {
		t.Errorf("after the resume alpha ran %d times, beta %d; want 1, 1", exec.count("alpha"), exec.count("beta"))
	}
}

// fill writes path until the file system holding it is full.
func fill(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}
