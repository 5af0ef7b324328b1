package conversation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Sentinel causes, matched with errors.Is.
var (
	// ErrUnknownRun: the run was never begun.
	ErrUnknownRun = errors.New("unknown run")
	// ErrHalted: the run has a recorded halt and takes no more turns.
	ErrHalted = errors.New("run is halted")
	// ErrConflict: the call contradicts what is recorded (another start
	// time, another turn at the same index, another halt).
	ErrConflict = errors.New("conflicts with what is recorded")
	// ErrOutOfOrder: the turn's index is not the run's next one.
	ErrOutOfOrder = errors.New("turn is not the run's next")
	// ErrClosed: the journal was closed.
	ErrClosed = errors.New("conversation journal: closed")
)

// RunError refuses a call because of what is recorded for its run. Err
// is one of ErrUnknownRun, ErrHalted, ErrConflict, ErrOutOfOrder.
type RunError struct {
	// Op is the refused operation: "begin", "append", "halt", "resume".
	Op string
	// RunID names the run.
	RunID string
	// Err is the sentinel cause.
	Err error
	// Detail says what was recorded, for people.
	Detail string
}

func (e *RunError) Error() string {
	s := "conversation journal: " + e.Op + " " + strconv.Quote(e.RunID) + ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns the sentinel cause.
func (e *RunError) Unwrap() error { return e.Err }

// InvalidError refuses a value that is not a valid journal record, run
// id, turn or halt. Pointer locates the offending member in the record
// shape of the file journal ({"kind":"turn","runId":…,"turn":{…}}), so
// "/turn/attempts" names a turn's attempts.
type InvalidError struct {
	// Pointer is an RFC 6901 JSON pointer.
	Pointer string
	// Reason says what is wrong.
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("conversation journal: invalid value at %q: %s", e.Pointer, e.Reason)
}

// TooLargeError refuses a turn, or a run's turns, over a limit of
// [Limits]. Nothing was written.
type TooLargeError struct {
	// What is over: "turn", "run" or "run id".
	What string
	// RunID names the run.
	RunID string
	// Size and Limit are in bytes.
	Size, Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("conversation journal: %s of run %q is %d bytes, over the %d-byte limit", e.What, e.RunID, e.Size, e.Limit)
}

// CorruptError reports stored data that is not a valid journal: a record
// that does not decode, or records that break the journal's rules (a
// turn before its run's begin, a gap in turn indexes).
type CorruptError struct {
	// Source is the file path or the table holding the data.
	Source string
	// Where locates the data: "line 12", "run \"r1\" turn 3".
	Where string
	// Err is the cause: an *InvalidError, a *journal.CorruptError, or a
	// rule that was broken.
	Err error
}

func (e *CorruptError) Error() string {
	return "conversation journal corrupted: " + e.Source + ", " + e.Where + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *CorruptError) Unwrap() error { return e.Err }

// TimeoutError reports a call of a SQL journal the database did not
// answer within its CallTimeout (SQLOptions.CallTimeout): the database
// is down, cut off or locked by another writer. The call's outcome is
// unknown — a write may have committed — and it may be retried as it
// was: Migrate is idempotent, and BeginRun, AppendTurn and RecordHalt
// are for the same arguments (the same start time, the same turn at its
// index, the same halt and end time), so a retry of a call that did
// commit succeeds without writing twice. It matches context.DeadlineExceeded.
type TimeoutError struct {
	// Op is the call: "migrate", "load", "begin", "append" or "halt".
	Op string
	// RunID names the run; "" for "migrate".
	RunID string
	// After is the bound that passed.
	After time.Duration
}

func (e *TimeoutError) Error() string {
	if e.RunID == "" {
		return fmt.Sprintf("conversation journal: %s: the database did not answer within %v; the outcome is unknown, retry the call", e.Op, e.After)
	}
	return fmt.Sprintf("conversation journal: %s %s: the database did not answer within %v; the outcome is unknown, retry the call", e.Op, strconv.Quote(e.RunID), e.After)
}

// Unwrap makes a TimeoutError match context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }
