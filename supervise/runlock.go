package supervise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/internal/flock"
)

// LockFile is the run dir's single-host ownership lock (§3.6
// "Persistence & resume": "a local file lock (supervise.lock) gives
// single-host ownership only"): the supervisor driving the run holds an
// exclusive advisory lock on it for its whole life, and the file names
// it (LockHolder). The lock belongs to the process's open file, so it
// dies with the process however it ends (a SIGKILLed supervisor leaves
// nothing to clean up: the next one takes it at once). A run whose spawn
// journal is in a store (Options.SpawnStore) is owned through the
// store's lease fence instead, and takes no supervise.lock.
const LockFile = "supervise.lock"

// MaxLockFileBytes bounds what is read of a supervise.lock naming its
// holder.
const MaxLockFileBytes = 4 << 10

// LockHolder is what supervise.lock says of the supervisor holding it.
type LockHolder struct {
	// PID is the holder's process id.
	PID int `json:"pid"`
	// Host is the holder's host name; "" when it could not tell.
	Host string `json:"host"`
	// StartedAt is when the holder took the lock.
	StartedAt time.Time `json:"startedAt"`
	// RunID is the run the holder drives; "" until it read the run's id
	// (from the journal, on resume).
	RunID string `json:"runId,omitzero"`
}

// RunDirLockedError is the refusal of a supervisor started on a run dir
// another live supervisor holds (its supervise.lock). It matches
// ErrSpawnLogHeld. Holder is nil when the lock file named no holder
// (the holder was still writing it, or an older agentrt holds the
// run's journal without one).
type RunDirLockedError struct {
	RunDir string
	Holder *LockHolder
}

func (e *RunDirLockedError) Error() string {
	who := "another supervisor"
	if h := e.Holder; h != nil {
		who = "supervisor pid " + strconv.Itoa(h.PID)
		if h.Host != "" {
			who += " on host " + h.Host
		}
		if h.RunID != "" {
			who += " (run " + h.RunID + ")"
		}
		if !h.StartedAt.IsZero() {
			who += ", started " + h.StartedAt.UTC().Format(time.RFC3339)
		}
	}
	return "supervise: run dir " + e.RunDir + " is held by " + who +
		"; wait for it to end or stop it, then resume the run (its lock is released when that process exits, however it ends)"
}

// Is reports that the run dir is held: errors.Is(err, ErrSpawnLogHeld).
func (e *RunDirLockedError) Is(target error) bool { return target == ErrSpawnLogHeld }

// runLock is a held supervise.lock.
type runLock struct {
	f      *os.File
	holder LockHolder
}

// lockRunDir takes dir's supervise.lock without waiting and writes this
// process into it; a lock another open file holds (another process, or
// another run of this one) is a *RunDirLockedError.
func lockRunDir(dir string) (*runLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("supervise: opening %s: %w", path, err)
	}
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("supervise: %s is not a regular file (%v)", path, err)
	}
	if err := flock.TryLock(f); err != nil {
		defer f.Close()
		if errors.Is(err, flock.ErrHeld) {
			return nil, &RunDirLockedError{RunDir: dir, Holder: readHolder(f)}
		}
		return nil, fmt.Errorf("supervise: locking %s: %w", path, err)
	}
	host, _ := os.Hostname()
	l := &runLock{f: f, holder: LockHolder{PID: os.Getpid(), Host: host, StartedAt: time.Now().UTC().Truncate(time.Millisecond)}}
	if err := l.write(); err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// setRunID names the run in the lock file, once it is known.
func (l *runLock) setRunID(id string) error {
	if l == nil || l.holder.RunID == id {
		return nil
	}
	l.holder.RunID = id
	return l.write()
}

// write replaces the file's content with the holder, in place (the lock
// is the open file's: a file renamed over it would be unlocked).
func (l *runLock) write() error {
	data, err := json.Marshal(l.holder)
	if err != nil {
		return fmt.Errorf("supervise: %s: %w", LockFile, err)
	}
	data = append(data, '\n')
	if _, err := l.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("supervise: writing %s: %w", LockFile, err)
	}
	if err := l.f.Truncate(int64(len(data))); err != nil {
		return fmt.Errorf("supervise: writing %s: %w", LockFile, err)
	}
	return nil
}

// release empties the file (no holder is named once none holds it) and
// gives the lock up.
func (l *runLock) release() error {
	if l == nil {
		return nil
	}
	// The lock is given up before the file is closed: a child forked
	// meanwhile would otherwise keep it until it execs.
	err := errors.Join(l.f.Truncate(0), flock.Unlock(l.f), l.f.Close())
	if err != nil {
		return fmt.Errorf("supervise: releasing %s: %w", LockFile, err)
	}
	return nil
}

// readHolder reads who holds the lock of f, or nil when the file names
// no one: a holder rewrites it in place, so an unreadable content is
// read again a few times before it counts as none.
func readHolder(f *os.File) *LockHolder {
	for try := 0; ; try++ {
		buf := make([]byte, MaxLockFileBytes+1)
		n, err := f.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil
		}
		if h, err := ParseLockHolder(buf[:n]); err == nil {
			return &h
		}
		if try == 2 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ParseLockHolder decodes the content of a supervise.lock strictly: one
// LockHolder object (unknown members refused), at most MaxLockFileBytes,
// with a positive pid.
func ParseLockHolder(data []byte) (LockHolder, error) {
	if len(data) > MaxLockFileBytes {
		return LockHolder{}, fmt.Errorf("supervise: %s is %d bytes, over %d", LockFile, len(data), MaxLockFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var h LockHolder
	if err := dec.Decode(&h); err != nil {
		return LockHolder{}, fmt.Errorf("supervise: %s: %w", LockFile, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return LockHolder{}, fmt.Errorf("supervise: %s: data after the holder", LockFile)
	}
	if h.PID <= 0 {
		return LockHolder{}, fmt.Errorf("supervise: %s: pid %d is not a process id", LockFile, h.PID)
	}
	return h, nil
}
