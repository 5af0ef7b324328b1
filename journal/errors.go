package journal

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrClosed is returned by operations on a closed [Journal].
var ErrClosed = errors.New("journal: closed")

// ErrInvalidOptions matches the error Open returns for refused [Options].
var ErrInvalidOptions = errors.New("journal: invalid options")

// ErrLineTooLong is the cause of a [*CorruptError] for a line longer than
// the record limit; the line was skipped without being read into memory.
var ErrLineTooLong = errors.New("journal: line longer than the record limit")

// LockedError reports that another open journal, in this process or
// another, holds the file's lock.
type LockedError struct {
	// Path is the journal's path.
	Path string
	// PID is the holder's process id when the system says (Linux), or 0.
	PID int
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return "journal: " + e.Path + " is locked by process " + strconv.Itoa(e.PID)
	}
	return "journal: " + e.Path + " is locked by another open journal"
}

// TooLargeError refuses a record whose canonical form is longer than
// Options.MaxRecordBytes. Nothing of its batch was written.
type TooLargeError struct {
	// Index is the record's position in the Append call.
	Index int
	// Size is the length of its canonical form in bytes.
	Size int
	// Limit is the journal's MaxRecordBytes.
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("journal: record %d is %d bytes, over the %d-byte limit", e.Index, e.Size, e.Limit)
}

// RecordError refuses a record that has no canonical form (a lone
// surrogate, a non-finite number, a duplicate member name, the absent
// Value). Nothing of its batch was written.
type RecordError struct {
	// Index is the record's position in the Append call.
	Index int
	// Err is the *canonjson.CanonicalError.
	Err error
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("journal: record %d: %v", e.Index, e.Err)
}

// Unwrap returns the canonical-form error.
func (e *RecordError) Unwrap() error { return e.Err }

// WriteError reports a failed write or fsync. It poisons the journal:
// part of the batch may have reached the file, so every later Append
// returns the same error; reopen the journal to repair its tail.
type WriteError struct {
	// Path is the journal's path.
	Path string
	// Op is "write" or "sync".
	Op string
	// Err is the operating system's error.
	Err error
}

func (e *WriteError) Error() string {
	return "journal: " + e.Op + " " + e.Path + ": " + e.Err.Error() + " (journal poisoned; reopen it)"
}

// Unwrap returns the operating system's error.
func (e *WriteError) Unwrap() error { return e.Err }

// CorruptError reports a complete line that is not a record: it does not
// decode strictly, has no canonical form, or is too long. Readers yield it
// and go on with the next line.
type CorruptError struct {
	// Seq is the line's number, the sequence number a record there would have.
	Seq int64
	// Offset is the byte offset where the line starts.
	Offset int64
	// Length is the line's length without its '\n'.
	Length int64
	// Err is a *canonjson.DecodeError, a *canonjson.CanonicalError or
	// ErrLineTooLong.
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal: corrupt line %d (byte %d, %d bytes): %v", e.Seq, e.Offset, e.Length, e.Err)
}

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }
