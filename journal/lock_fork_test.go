//go:build unix && !solaris && !aix

package journal_test

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/journal"
)

// TestCloseReleasesTheLockAForkedChildStillShares: a process that starts
// children (a provider's CLI, a harness, localproc) forks while its
// journals are open, and each child holds a copy of every descriptor
// until it execs. The lock belongs to the open file, so a journal that
// only closed its own descriptor stayed locked while such a child
// existed: the same process reopening it right after Close was refused
// "locked by another open journal", no holder named (seen in
// internal/cli's TestChatResumesAfterSIGKILL under the parallel
// process tests). Close gives the lock up itself.
func TestCloseReleasesTheLockAForkedChildStillShares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closeCopy, err := j.HoldFileLikeAForkedChild()
	if err != nil {
		t.Fatal(err)
	}
	defer closeCopy()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatalf("reopening after Close, while a forked child holds a copy of the descriptor: %v", err)
	}
	again.Close()
}
