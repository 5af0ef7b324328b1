package retained

import (
	"errors"
	"fmt"
)

// Errors of retained runs. Each is wrapped; match them with errors.Is.
var (
	// ErrNoAdmissionHook: StartRetainedRun was called without OnAdmission;
	// it is refused before any provider call.
	ErrNoAdmissionHook = errors.New("retained: OnAdmission is required")
	// ErrInvalidOptions: a required option is missing or malformed.
	ErrInvalidOptions = errors.New("retained: invalid options")
	// ErrNotRetainable: the provider (or environment) does not declare
	// retained control with replay, detach, turn idempotency and session
	// continuation together, or does not implement the abilities it needs.
	ErrNotRetainable = errors.New("retained: the provider does not offer retained run control")
	// ErrNoRecord: the run store holds no retained run with that id.
	ErrNoRecord = errors.New("retained: no retained run record")
	// ErrNotDispatched: the run's admission has no dispatched record yet,
	// so there is no control reference to re-attach with (see
	// RecoverRetainedRun).
	ErrNotDispatched = errors.New("retained: the run was not dispatched")
	// ErrNoCancellation: the session has no durable cancellation contract
	// (RunCanceller), so Cancel is refused rather than guessed.
	ErrNoCancellation = errors.New("retained: the provider has no durable cancellation contract")
	// ErrNoInteractions: the session does not answer interactions.
	ErrNoInteractions = errors.New("retained: the provider does not answer interactions")
	// ErrNoNativeContinuation: the session cannot continue natively (the
	// provider declares no nativeContinuation), so same-chat continuity
	// is never claimed for the run.
	ErrNoNativeContinuation = errors.New("retained: the provider cannot continue the run's session natively")
	// ErrNoBoundary: the run is still in progress, so no native boundary
	// can be proven yet; ask again once it ended.
	ErrNoBoundary = errors.New("retained: no native boundary can be proven while the run is in progress")
	// ErrEnvironmentGone: the environment that held the run no longer
	// exists, so nothing can be re-attached.
	ErrEnvironmentGone = errors.New("retained: the environment no longer exists")
)

// MismatchError reports that two things which must name the same run do
// not: a control reference and the run record, a derived identity and
// the provider's, an intent and the one recorded. Nothing is changed when
// it is returned. errors.Is(err, ErrMismatch) matches it.
type MismatchError struct {
	// What names what was compared ("control reference", "intent", …).
	What string
	// Field is the first differing member, when known.
	Field string
	// Want is what the record or caller stated; Got what was found.
	Want, Got string
}

// ErrMismatch matches every *MismatchError.
var ErrMismatch = errors.New("retained: identity mismatch")

func (e *MismatchError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("retained: the %s does not match", e.What)
	}
	return fmt.Sprintf("retained: the %s does not match at %s: want %q, got %q", e.What, e.Field, e.Want, e.Got)
}

// Is makes errors.Is(err, ErrMismatch) match.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// ReplayError reports a replay that cannot continue from the caller's
// cursor without losing or misplacing events: the event at the anchor's
// sequence has another id (the history changed), the stream ended before
// the anchor (a gap), or an event has no id or repeats one. Events are
// never silently skipped. errors.Is(err, ErrReplay) matches it.
type ReplayError struct {
	// Sequence is where the replay failed.
	Sequence int64
	// Reason says why.
	Reason string
}

// ErrReplay matches every *ReplayError.
var ErrReplay = errors.New("retained: replay anchor")

func (e *ReplayError) Error() string {
	return fmt.Sprintf("retained: replay at sequence %d: %s", e.Sequence, e.Reason)
}

// Is makes errors.Is(err, ErrReplay) match.
func (e *ReplayError) Is(target error) bool { return target == ErrReplay }

// EventsStoppedError ends a reading of a run's events (Run.Events) whose
// context ended before the run's stream did: the run goes on, only this
// reading stopped. After is the cursor of the last event delivered;
// Events(ctx, After) with a live context resumes exactly there. It
// unwraps to the context's error, so errors.Is(err,
// context.DeadlineExceeded) or context.Canceled tells which.
type EventsStoppedError struct {
	// RunID is the provider's run id.
	RunID string
	// After resumes after the last event delivered.
	After Cursor
	// Err is the context's error.
	Err error
}

func (e *EventsStoppedError) Error() string {
	return fmt.Sprintf("retained: stopped reading the events of run %s after sequence %d (resume from that cursor): %v", e.RunID, e.After.Sequence, e.Err)
}

// Unwrap returns the context's error.
func (e *EventsStoppedError) Unwrap() error { return e.Err }
