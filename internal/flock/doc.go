// Package flock takes and gives up the exclusive advisory whole-file
// locks (flock(2)) that keep two writers off one file: the journal's
// and a supervise run dir's supervise.lock.
//
// Such a lock belongs to the open file, not to the descriptor or the
// process: it dies with the last descriptor of the open file, however
// the process ends, and it is shared by every copy of the descriptor —
// including the copy a child forked meanwhile holds until it execs.
// Unlock therefore gives the lock up explicitly before a file is
// closed. Where no such lock is implemented (Windows, Solaris, AIX),
// TryLock returns ErrUnsupported: a file two processes could write is
// not owned.
package flock
