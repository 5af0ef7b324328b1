package journal

import (
	"bufio"
	"context"
	"errors"
	"io"
	"iter"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/regularfile"
)

// Entry is one record read back from a journal.
type Entry struct {
	// Seq is the record's sequence number: its 1-based line number.
	Seq int64
	// Value is the decoded record.
	Value canonjson.Value
}

// readBufferSize is the reader's I/O buffer; a line is gathered into a
// separate buffer of at most the record limit.
const readBufferSize = 64 << 10

// Read reads the journal at path without locking it, yielding every record
// whose sequence number is at least from (from ≤ 1 reads everything). Only
// opts.MaxRecordBytes matters here; it should be the writer's.
//
// The reader is tolerant: a corrupt line is yielded as a [*CorruptError]
// (with a zero Entry) and reading continues. A torn tail (see the package
// doc) is ignored, since the append that wrote it never returned. Any other error (the file cannot
// be opened or read, ctx is done) is the last value yielded; a missing
// file yields an error matching fs.ErrNotExist.
//
// Read may run while another process appends. It then sees what has
// been written so far, which can include records whose Append has not yet
// returned (written, not yet fsynced); [Journal.Read] yields only
// committed records.
func Read(ctx context.Context, path string, from int64, opts Options) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		limit, err := opts.recordLimit()
		if err != nil {
			yield(Entry{}, err)
			return
		}
		f, _, err := regularfile.Open(path)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		defer f.Close()
		scan(ctx, f, from, limit, yield)
	}
}

// Read reads the records this journal has committed so far, from the
// given sequence number on, as the package-level [Read] does. Records
// appended while the iteration runs are not included.
func (j *Journal) Read(ctx context.Context, from int64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		j.mu.Lock()
		closed, size := j.closed, j.size
		j.mu.Unlock()
		if closed {
			yield(Entry{}, ErrClosed)
			return
		}
		scan(ctx, io.NewSectionReader(j.f, 0, size), from, j.limit, yield)
	}
}

// scan is the tolerant line reader behind both Reads. A bad line is held
// back until the next line is read, because whether it is corrupt or a
// torn tail depends on what follows it (see isTornTail).
func scan(ctx context.Context, r io.Reader, from int64, limit int, yield func(Entry, error) bool) {
	br := bufio.NewReaderSize(r, readBufferSize)
	var line []byte
	var seq, offset int64
	var pending *CorruptError // the last line, if it was bad
	pendingAfterGood := false // the line before pending was good, or there was none
	prevGood := true          // the last line read was good (or there was none)
	for {
		if ctx.Err() != nil {
			yield(Entry{}, context.Cause(ctx))
			return
		}
		var n int64
		var terminated, tooLong bool
		var err error
		line, n, terminated, tooLong, err = readLine(br, line[:0], limit)
		if err != nil {
			yield(Entry{}, err)
			return
		}
		if !terminated {
			// End of file, perhaps after a torn fragment: the pending
			// line was the last complete one.
			if pending != nil && !isTornTail(pendingAfterGood) {
				yield(Entry{}, pending)
			}
			return
		}
		if pending != nil {
			if !yield(Entry{}, pending) {
				return
			}
			pending = nil
		}
		seq++
		start := offset
		offset += n + 1
		if seq < from-1 {
			continue // neither read nor the predecessor of a line read
		}
		var v canonjson.Value
		bad := ErrLineTooLong
		if !tooLong {
			v, bad = decodeRecord(line)
		}
		if bad == nil {
			prevGood = true
			if seq >= from && !yield(Entry{Seq: seq, Value: v}, nil) {
				return
			}
			continue
		}
		if seq >= from {
			pending = &CorruptError{Seq: seq, Offset: start, Length: n, Err: bad}
			pendingAfterGood = prevGood
		}
		prevGood = false
	}
}

// isTornTail decides whether the last complete line of a file, which is
// not a record, is a torn tail (ignored by readers, truncated by Open)
// rather than corruption: it is when the line before it was a record or
// there is none. A bad line after another bad line is not what an
// interrupted append leaves, so it is kept and reported; this also makes
// Open's repair idempotent, since it never exposes a new torn tail.
func isTornTail(afterGood bool) bool { return afterGood }

// readLine reads one line into buf, keeping at most limit bytes: a longer
// line is consumed and dropped (tooLong). n is the line's full length
// without '\n'; terminated says the '\n' was found before end of file.
// err is an I/O error other than end of file.
func readLine(br *bufio.Reader, buf []byte, limit int) (line []byte, n int64, terminated, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		full := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if full {
			chunk = chunk[:len(chunk)-1]
		}
		n += int64(len(chunk))
		if !tooLong && len(buf)+len(chunk) > limit {
			tooLong, buf = true, buf[:0]
		}
		if !tooLong {
			buf = append(buf, chunk...)
		}
		switch {
		case full:
			return buf, n, true, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return buf, n, false, tooLong, nil
		default:
			return buf, n, false, tooLong, err
		}
	}
}

// decodeRecord is the one test of what a line holds: a strictly decoded
// JSON value that has a canonical form.
func decodeRecord(line []byte) (canonjson.Value, error) {
	v, err := canonjson.Decode(line)
	if err == nil {
		err = canonjson.Check(v)
	}
	if err != nil {
		return canonjson.Value{}, err
	}
	return v, nil
}
