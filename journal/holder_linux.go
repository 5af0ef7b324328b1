package journal

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// maxLocksBytes bounds how much of /proc/locks lockHolder reads.
const maxLocksBytes = 1 << 20

// lockHolder returns the id of the process holding f's flock, from
// /proc/locks, or 0 if it cannot tell.
func lockHolder(f *os.File) int {
	info, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	dev := uint64(st.Dev)
	major := uint64(uint32(dev>>8)&0xfff | uint32(dev>>32)&^0xfff)
	minor := uint64(uint32(dev&0xff) | uint32(dev>>12)&^0xff)
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	sc := bufio.NewScanner(io.LimitReader(locks, maxLocksBytes))
	for sc.Scan() {
		// 1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		id := strings.Split(fields[5], ":")
		if len(id) != 3 {
			continue
		}
		maj, err1 := strconv.ParseUint(id[0], 16, 32)
		mnr, err2 := strconv.ParseUint(id[1], 16, 32)
		ino, err3 := strconv.ParseUint(id[2], 10, 64)
		pid, err4 := strconv.Atoi(fields[4])
		if err1 == nil && err2 == nil && err3 == nil && err4 == nil &&
			maj == major && mnr == minor && ino == st.Ino && pid > 0 {
			return pid
		}
	}
	return 0
}
