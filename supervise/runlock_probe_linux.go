package supervise

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// procLocks is the kernel's list of the file locks held on this host.
const procLocks = "/proc/locks"

// maxProcLocksBytes bounds what is read of procLocks; a longer list is
// not read at all (listed false), never half-read into a wrong answer.
const maxProcLocksBytes = 4 << 20

// fileLocked reads procLocks for a lock held (not waited for) on the
// file of info; listed is false when the list could not be read. The
// inode number alone is matched: the device numbers the list gives are
// not the ones stat reports on every file system (overlayfs), and a
// match of another file system's inode only keeps a run shown running.
func fileLocked(info os.FileInfo) (held, listed bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return false, false
	}
	f, err := os.Open(procLocks)
	if err != nil {
		return false, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProcLocksBytes+1))
	if err != nil || len(data) > maxProcLocksBytes {
		return false, false
	}
	return lockListed(data, st.Ino)
}

// lockListed reads a /proc/locks list (data) for a lock held, not waited
// for, on inode ino; ok is false when the list does not read as one (a
// line over 64 KiB), so that no half-read list answers.
func lockListed(data []byte, ino uint64) (held, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 22635 fe:00:9978296 0 EOF"; a
		// waiter's line has "->" after the number.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] == "->" {
			continue
		}
		id := fields[5]
		i := strings.LastIndexByte(id, ':')
		if i < 0 {
			continue
		}
		if n, err := strconv.ParseUint(id[i+1:], 10, 64); err == nil && n == ino {
			return true, true
		}
	}
	if sc.Err() != nil {
		return false, false
	}
	return false, true
}
