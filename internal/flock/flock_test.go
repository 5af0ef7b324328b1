//go:build unix && !solaris && !aix

package flock_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentrt/agentrt/internal/flock"
)

func openFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestTryLockRefusesASecondOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a, b := openFile(t, path), openFile(t, path)
	if err := flock.TryLock(a); err != nil {
		t.Fatal(err)
	}
	if err := flock.TryLock(b); !errors.Is(err, flock.ErrHeld) {
		t.Fatalf("a second open file's TryLock = %v, want ErrHeld", err)
	}
	if err := flock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := flock.TryLock(b); err != nil {
		t.Fatalf("TryLock after Unlock: %v", err)
	}
}

// TestUnlockReleasesADescriptorAForkedChildShares: a child forked while
// the file is open holds a copy of its descriptor until it execs
// (syscall.Dup makes the same copy); closing ours alone would keep the
// lock for it.
func TestUnlockReleasesADescriptorAForkedChildShares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	a := openFile(t, path)
	if err := flock.TryLock(a); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(a.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := flock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := flock.TryLock(openFile(t, path)); err != nil {
		t.Fatalf("TryLock after Unlock and Close, a forked child's copy still open: %v", err)
	}
}
