package conversation

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"time"
)

// runState is what the memory and file journals keep of a run to decide
// each call: enough to detect a repeated or conflicting write without the
// turns themselves.
type runState struct {
	startedAt time.Time
	halt      []byte // canonical JSON of the halt; nil while not halted
	endedAt   time.Time
	turns     [][sha256.Size]byte
	bytes     int64 // canonical JSON of all turns
}

func (s *runState) halted() bool { return s.halt != nil }

// decideBegin says whether a begin at startedAt is to be written (false:
// already recorded, the call is a no-op) or refused.
func decideBegin(runID string, s *runState, startedAt time.Time) (bool, error) {
	if s == nil {
		return true, nil
	}
	if !sameInstant(s.startedAt, startedAt) {
		return false, &RunError{Op: "begin", RunID: runID, Err: ErrConflict,
			Detail: fmt.Sprintf("started at %s, not %s", formatTime(s.startedAt), formatTime(startedAt))}
	}
	return false, nil
}

// decideTurn says whether the turn at index, whose canonical JSON is enc,
// is to be written (false: the same turn is recorded there) or refused.
// With lim nil (replaying a file) no limit applies.
func decideTurn(runID string, s *runState, index int, enc []byte, lim *Limits) (bool, error) {
	switch {
	case s == nil:
		return false, &RunError{Op: "append", RunID: runID, Err: ErrUnknownRun, Detail: "begin the run first"}
	case s.halted():
		return false, &RunError{Op: "append", RunID: runID, Err: ErrHalted, Detail: "halt: " + string(s.halt)}
	case index < len(s.turns):
		if s.turns[index] != sha256.Sum256(enc) {
			return false, &RunError{Op: "append", RunID: runID, Err: ErrConflict, Detail: fmt.Sprintf("another turn %d is recorded", index)}
		}
		return false, nil
	case index > len(s.turns):
		return false, &RunError{Op: "append", RunID: runID, Err: ErrOutOfOrder, Detail: fmt.Sprintf("turn %d, next is %d", index, len(s.turns))}
	}
	if lim != nil {
		if len(enc) > lim.MaxTurnBytes {
			return false, &TooLargeError{What: "turn", RunID: runID, Size: int64(len(enc)), Limit: int64(lim.MaxTurnBytes)}
		}
		if total := s.bytes + int64(len(enc)); total > lim.MaxRunBytes {
			return false, &TooLargeError{What: "run", RunID: runID, Size: total, Limit: lim.MaxRunBytes}
		}
	}
	return true, nil
}

// decideHalt says whether the halt enc at endedAt is to be written
// (false: the same halt is recorded) or refused.
func decideHalt(runID string, s *runState, enc []byte, endedAt time.Time, lim *Limits) (bool, error) {
	switch {
	case s == nil:
		return false, &RunError{Op: "halt", RunID: runID, Err: ErrUnknownRun, Detail: "begin the run first"}
	case s.halted():
		if !bytes.Equal(s.halt, enc) || !sameInstant(s.endedAt, endedAt) {
			return false, &RunError{Op: "halt", RunID: runID, Err: ErrConflict,
				Detail: fmt.Sprintf("halted %s at %s", s.halt, formatTime(s.endedAt))}
		}
		return false, nil
	case lim != nil && len(enc) > lim.MaxTurnBytes:
		return false, &TooLargeError{What: "halt", RunID: runID, Size: int64(len(enc)), Limit: int64(lim.MaxTurnBytes)}
	}
	return true, nil
}

func (s *runState) addTurn(enc []byte) {
	s.turns = append(s.turns, sha256.Sum256(enc))
	s.bytes += int64(len(enc))
}

func (s *runState) setHalt(enc []byte, endedAt time.Time) {
	s.halt, s.endedAt = bytes.Clone(enc), endedAt
}
