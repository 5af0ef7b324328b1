package supervise

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/regularfile"
	"github.com/agentrt/agentrt/journal"
)

// tailWindow is how many bytes RunDirTail reads at a time: more than the
// longest record a journal holds, so a window without a line end is a
// line too long to be one.
const tailWindow = journal.DefaultMaxRecordBytes + 1<<20

// RunDirTail follows the spawn journal of a run directory while another
// process appends to it (agentrt supervise's progress, a dashboard):
// each call of Next reads only what was appended since the last one, so
// following a run costs what the run writes, not the journal's length
// on every look. It reads as ReadRunDir does — without locking, every
// complete line that decodes as a Record, a corrupt line counted in
// Skipped and passed over, a torn tail left unread until its line is
// complete — and notices a journal replaced or cut below what it read
// (Next then reads it again from its start and says so; a journal
// rewritten in place to at least its length is noticed when the last
// bytes read changed). It is not safe
// for concurrent use.
type RunDirTail struct {
	t lineTail[Record]
}

// TailRunDir returns a RunDirTail of run directory dir's spawn journal,
// positioned at its start.
func TailRunDir(dir string) *RunDirTail {
	return &RunDirTail{t: lineTail[Record]{path: filepath.Join(dir, SpawnJournalFile), what: "the spawn journal"}}
}

// Skipped is how many corrupt lines (or lines that are no Record) the
// tail has passed over since the journal it reads was started.
func (t *RunDirTail) Skipped() int { return t.t.skipped }

// Next returns the records whose lines were completed since the last
// call, in order. restarted says the journal was replaced by another
// file or cut shorter than what was read: the records returned are then
// the new journal's from its start. A missing journal is an error
// matching fs.ErrNotExist; ctx bounds the read.
func (t *RunDirTail) Next(ctx context.Context) (recs []Record, restarted bool, err error) {
	return t.t.next(ctx)
}

// StreamTail follows one stream log of a run directory (a worker log,
// the root stream) as RunDirTail follows its journal: each call of Next
// reads only the lines completed since the last one, tolerantly as
// ReadWorkerLog reads the whole log (a corrupt line, or one that is no
// StreamRecord, counted in Skipped and passed over; a torn tail left
// until its line is complete; a line longer than any record skipped
// without being held), and a log replaced or cut is read again from its
// start, said by restarted. A watcher that looks again and again (agentrt
// top) so pays for what the run wrote, not for the log's length on every
// look. It is not safe for concurrent use.
type StreamTail struct {
	t lineTail[StreamRecord]
}

// TailWorkerLog returns a StreamTail of the log of the workers labelled
// label in run directory dir, positioned at its start.
func TailWorkerLog(dir, label string) *StreamTail {
	return &StreamTail{t: lineTail[StreamRecord]{path: WorkerLogPath(dir, label), what: "a worker log"}}
}

// TailRootStream returns a StreamTail of run directory dir's root
// stream, positioned at its start.
func TailRootStream(dir string) *StreamTail {
	return &StreamTail{t: lineTail[StreamRecord]{path: filepath.Join(dir, RootStreamFile), what: "the root stream"}}
}

// Skipped is how many corrupt lines (or lines that are no StreamRecord)
// the tail has passed over since the log it reads was started.
func (t *StreamTail) Skipped() int { return t.t.skipped }

// Next returns the records whose lines were completed since the last
// call, in order, as RunDirTail.Next does. A missing log is an error
// matching fs.ErrNotExist; ctx bounds the read.
func (t *StreamTail) Next(ctx context.Context) (recs []StreamRecord, restarted bool, err error) {
	return t.t.next(ctx)
}

// lineTail follows one append-only file of JSON lines, each a T.
type lineTail[T any] struct {
	path string
	what string      // the file, in errors
	off  int64       // just past the last line end read
	file os.FileInfo // the file read so far, nil before the first next
	// badLast: the last complete line read is no record. Whether it is
	// corrupt or a torn tail depends on whether a line follows it.
	badLast bool
	// discarding: the bytes at off belong to a line longer than any
	// record, dropped up to its end.
	discarding bool
	skipped    int
	buf        []byte
	// mark is the last bytes read (up to tailMark, ending at off): a
	// file rewritten in place no longer holds them there.
	mark []byte
}

// tailMark is how many of the last bytes read a tail checks again
// before it reads on.
const tailMark = 64

// keptTailBuffer is the largest read buffer a tail keeps between calls:
// the window a catch-up read needed is let go, so that many tails
// (a watcher's worker logs) hold little while they wait.
const keptTailBuffer = 64 << 10

func (t *lineTail[T]) next(ctx context.Context) (recs []T, restarted bool, err error) {
	f, _, err := regularfile.Open(t.path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	defer func() {
		if cap(t.buf) > keptTailBuffer {
			t.buf = nil
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("supervise: following %s: %w", t.what, err)
	}
	if t.file != nil && (!os.SameFile(t.file, st) || st.Size() < t.off || !t.markHolds(f)) {
		t.off, t.badLast, t.discarding, t.skipped, t.mark, restarted = 0, false, false, 0, t.mark[:0], true
	}
	t.file = st
	size := st.Size()
	for t.off < size {
		if err := ctx.Err(); err != nil {
			return recs, restarted, context.Cause(ctx)
		}
		n := min(size-t.off, tailWindow)
		if int64(cap(t.buf)) < n {
			t.buf = make([]byte, n)
		}
		window := t.buf[:n]
		if _, err := io.ReadFull(io.NewSectionReader(f, t.off, n), window); err != nil {
			return recs, restarted, fmt.Errorf("supervise: following %s: %w", t.what, err)
		}
		end := bytes.LastIndexByte(window, '\n') + 1
		if end == 0 {
			if n < tailWindow {
				break // a line still being written
			}
			t.discarding = true // no record is this long: drop it
			t.off += n
			t.mark = append(t.mark[:0], window[len(window)-tailMark:]...)
			continue
		}
		recs = t.lines(window[:end], recs)
		t.off += int64(end)
		t.mark = append(t.mark[:0], window[max(end-tailMark, 0):end]...)
	}
	return recs, restarted, nil
}

// markHolds reports whether f still holds the last bytes read where
// they were read.
func (t *lineTail[T]) markHolds(f *os.File) bool {
	if len(t.mark) == 0 {
		return true
	}
	got := make([]byte, len(t.mark))
	if _, err := f.ReadAt(got, t.off-int64(len(t.mark))); err != nil {
		return false
	}
	return bytes.Equal(got, t.mark)
}

// lines decodes the complete lines of data onto recs.
func (t *lineTail[T]) lines(data []byte, recs []T) []T {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data[:i]
		data = data[i+1:]
		if t.badLast {
			t.skipped++ // a line follows it: corrupt, not a torn tail
			t.badLast = false
		}
		if t.discarding {
			t.discarding, t.badLast = false, true // the end of a line too long
			continue
		}
		r, ok := decodeLine[T](line)
		if !ok {
			t.badLast = true
			continue
		}
		recs = append(recs, r)
	}
	return recs
}

// decodeLine reads one line as a T: a strictly decoded JSON value with a
// canonical form, within the journal's record limit (what the journal's
// tolerant reader, and so readTolerant, takes as a record).
func decodeLine[T any](line []byte) (T, bool) {
	var r T
	if len(line) > journal.DefaultMaxRecordBytes {
		return r, false
	}
	v, err := canonjson.Decode(line)
	if err == nil {
		err = canonjson.Check(v)
	}
	if err == nil {
		err = canonjson.FromValue(v, &r)
	}
	return r, err == nil
}
