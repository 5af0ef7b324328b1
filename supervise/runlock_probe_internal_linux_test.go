package supervise

import (
	"strings"
	"testing"
)

// lockListed reads the kernel's lock list: a held lock on the inode is
// found, a waiter's line ("->") and other inodes are not, and a list
// that does not read (a line over its bound) answers nothing.
func TestLockListed(t *testing.T) {
	const list = "1: FLOCK  ADVISORY  WRITE 22635 fe:00:9978296 0 EOF\n" +
		"1: -> FLOCK  ADVISORY  WRITE 22640 fe:00:1234 0 EOF\n" +
		"2: POSIX  ADVISORY  READ 1 00:1f:42 0 EOF\n"
	for _, tc := range []struct {
		name     string
		data     string
		ino      uint64
		held, ok bool
	}{
		{"held", list, 9978296, true, true},
		{"another file system's inode of the same number counts", list, 42, true, true},
		{"a waiter holds nothing", list, 1234, false, true},
		{"not listed", list, 7, false, true},
		{"empty list", "", 7, false, true},
		{"garbage lines are skipped", "x\n::::\n1: FLOCK A W 1 nocolon 0 EOF\n", 7, false, true},
		{"a line over the bound", strings.Repeat("x", 70<<10) + "\n", 7, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if held, ok := lockListed([]byte(tc.data), tc.ino); held != tc.held || ok != tc.ok {
				t.Errorf("lockListed = %v, %v; want %v, %v", held, ok, tc.held, tc.ok)
			}
		})
	}
}

// FuzzLockListed: any bytes read as a lock list answer without a panic,
// and a list that is not read (ok false) never says held.
func FuzzLockListed(f *testing.F) {
	f.Add([]byte("1: FLOCK  ADVISORY  WRITE 22635 fe:00:9978296 0 EOF\n"), uint64(9978296))
	f.Add([]byte("1: -> FLOCK ADVISORY WRITE 1 0:0:5 0 EOF\n"), uint64(5))
	f.Add([]byte(":\n: : : : : :\n"), uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, ino uint64) {
		if held, ok := lockListed(data, ino); held && !ok {
			t.Fatalf("held without a read list")
		}
	})
}
