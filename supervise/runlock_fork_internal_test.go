//go:build unix && !solaris && !aix

package supervise

import (
	"syscall"
	"testing"
)

// TestRunDirLockReleaseSurvivesAForkedChild: a supervisor forks
// (workers' CLIs, harnesses, localproc) while it holds supervise.lock,
// and each child keeps a copy of the lock file's descriptor until it
// execs. The lock belongs to the open file, so a release that only
// closed its own descriptor left the run dir locked while such a child
// lived: a resume in the same process right after was refused. Release
// gives the lock up itself.
func TestRunDirLockReleaseSurvivesAForkedChild(t *testing.T) {
	dir := t.TempDir()
	l, err := lockRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Dup(int(l.f.Fd())) // what a forked child holds
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	if err := l.release(); err != nil {
		t.Fatal(err)
	}
	again, err := lockRunDir(dir)
	if err != nil {
		t.Fatalf("locking the run dir again after release, while a forked child holds a copy of the descriptor: %v", err)
	}
	again.release()
}
