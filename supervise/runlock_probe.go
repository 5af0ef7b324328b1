package supervise

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// HolderState is what a look at a run dir's supervise.lock, taken
// without the lock, tells of the supervisor driving the run.
type HolderState int

// The holder states ProbeRunDirLock reports.
const (
	// HolderUnknown: nothing could be told (no way to check on this
	// system, or the file names no holder and its lock cannot be seen).
	HolderUnknown HolderState = iota
	// HolderAlive: the named process is alive on this host, or a
	// process holds the file's lock.
	HolderAlive
	// HolderGone: no supervisor drives the run any more: the named
	// process is not alive on this host, or no process holds the
	// file's lock.
	HolderGone
	// HolderRemote: the holder is on another host, which is not checked.
	HolderRemote
)

// String names the state.
func (s HolderState) String() string {
	switch s {
	case HolderAlive:
		return "alive"
	case HolderGone:
		return "gone"
	case HolderRemote:
		return "remote"
	}
	return "unknown"
}

// HolderProbe is what ProbeRunDirLock found.
type HolderProbe struct {
	State HolderState
	// Holder is the supervisor the file names; nil when it names none
	// (released, being written, or written by an older agentrt).
	Holder *LockHolder
	// Host is this host's name, as the holder's is compared with.
	Host string
	// Why says, for people, how the state was told.
	Why string
}

// ProbeRunDirLock tells whether the supervisor named in dir's
// supervise.lock still drives the run, WITHOUT taking the lock: a probe
// that took it, even for an instant, could make a real supervisor's
// start or resume fail with a *RunDirLockedError. A holder on this host
// (os.Hostname) is checked by its pid (signal 0: no such process is
// gone) and, where the system lists its file locks (/proc/locks), by
// whether any process holds a lock on the file: none is gone, one is
// alive even when the named pid is not (a new supervisor that has locked
// the file and not yet named itself in it). A holder on another host is
// HolderRemote, not checked (a lock list is of this host's locks only).
// A run dir without supervise.lock (its journal in a store, or an older
// writer) is an error matching fs.ErrNotExist.
func ProbeRunDirLock(dir string) (HolderProbe, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.Open(path)
	if err != nil {
		return HolderProbe{}, fmt.Errorf("supervise: probing %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return HolderProbe{}, fmt.Errorf("supervise: probing %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return HolderProbe{}, fmt.Errorf("supervise: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxLockFileBytes+1))
	if err != nil {
		return HolderProbe{}, fmt.Errorf("supervise: probing %s: %w", path, err)
	}
	p := HolderProbe{}
	p.Host, _ = os.Hostname()
	if h, err := ParseLockHolder(data); err == nil {
		p.Holder = &h
	}
	held, listed := fileLocked(info)
	switch h := p.Holder; {
	case h != nil && (h.Host == "" || p.Host == ""):
		p.State, p.Why = HolderUnknown, "supervisor pid "+strconv.Itoa(h.PID)+" on a host not recorded, not checked"
	case h != nil && h.Host != p.Host:
		p.State, p.Why = HolderRemote, "supervisor pid "+strconv.Itoa(h.PID)+" on host "+h.Host+", not checked"
	case held:
		p.State, p.Why = HolderAlive, "a process holds "+LockFile
		if h != nil {
			p.Why = "supervisor pid " + strconv.Itoa(h.PID) + " holds " + LockFile
		}
	case listed && h != nil:
		p.State, p.Why = HolderGone, "supervisor pid "+strconv.Itoa(h.PID)+" is gone (no process holds "+LockFile+")"
	case listed:
		p.State, p.Why = HolderGone, "no supervisor holds "+LockFile
	case h == nil:
		p.State, p.Why = HolderUnknown, LockFile+" names no supervisor and this system does not list file locks"
	default:
		switch alive, known := processAlive(h.PID); {
		case !known:
			p.State, p.Why = HolderUnknown, "supervisor pid "+strconv.Itoa(h.PID)+", not checked on this system"
		case alive:
			p.State, p.Why = HolderAlive, "supervisor pid "+strconv.Itoa(h.PID)+" is alive"
		default:
			p.State, p.Why = HolderGone, "supervisor pid "+strconv.Itoa(h.PID)+" is gone"
		}
	}
	return p, nil
}
