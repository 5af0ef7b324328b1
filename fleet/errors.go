package fleet

import (
	"errors"
	"fmt"
	"time"
)

// Errors the fleet returns (wrapped).
var (
	// ErrInvalid is a submission or option the fleet refuses.
	ErrInvalid = errors.New("fleet: invalid")
	// ErrNotFleetRun is a run id that names a run of another kind.
	ErrNotFleetRun = errors.New("fleet: not a fleet run")
)

// ConflictError is a submission whose idempotency key was already used
// for a different request.
type ConflictError struct {
	Key string
	// RunID is the run the key already names.
	RunID string
	// Digest is the digest of the request the key was first used for;
	// Got that of the new one.
	Digest, Got string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("fleet: idempotency key %q already submitted run %s with request %s, not %s", e.Key, e.RunID, e.Digest, e.Got)
}

// NotMigratedError is a database whose River schema lacks migrations.
type NotMigratedError struct {
	Schema string
	Err    error
}

func (e *NotMigratedError) Error() string {
	return fmt.Sprintf("fleet: River's schema %s is not migrated (run `agentrt fleet migrate`): %v", e.Schema, e.Err)
}

func (e *NotMigratedError) Unwrap() error { return e.Err }

// AccessRefusedError is a provider that refused this process's
// credentials (an HTTP 401 or 403 answer: an `agentrt serve` given the
// wrong bearer token, say) while Recover looked up the environment of a
// run in doubt. It says nothing of the environment or its turn: nothing
// was learned and nothing recorded, and the run stays in doubt until a
// recovery with the right credentials settles it.
type AccessRefusedError struct {
	RunID, EnvironmentID string
	// Status is the HTTP status of the refusal (401 or 403).
	Status int
	Err    error
}

func (e *AccessRefusedError) Error() string {
	return fmt.Sprintf("fleet: recover %s: the provider refused this process's credentials (HTTP %d) when asked for environment %s; nothing was learned or recorded, and the run stays in doubt: %v",
		e.RunID, e.Status, e.EnvironmentID, e.Err)
}

func (e *AccessRefusedError) Unwrap() error { return e.Err }

// accessRefused is the HTTP status of err when it is a provider's refusal
// of the caller's credentials (401 or 403; an error in the chain carries
// it as HTTPStatus, as contract/wire and the vendor providers do), else 0.
func accessRefused(err error) int {
	var h interface{ HTTPStatus() int }
	if errors.As(err, &h) {
		if s := h.HTTPStatus(); s == 401 || s == 403 {
			return s
		}
	}
	return 0
}

// StalledError is a read of the run store that did not answer within
// FollowOptions.ReadTimeout while Follow followed a run: the database
// stopped answering. Follow again once it answers, with
// FollowOptions.After the cursor of the last event yielded (Cursor).
type StalledError struct {
	RunID string
	// Timeout is the bound the read exceeded.
	Timeout time.Duration
	// Cursor is the fleet cursor (Event.FleetCursor) of the last event
	// yielded, "" when none was.
	Cursor string
	Err    error
}

func (e *StalledError) Error() string {
	resume := "follow it again from the start"
	if e.Cursor != "" {
		resume = "resume after " + e.Cursor
	}
	// Follow's own wrapping names the run.
	return fmt.Sprintf("the run store did not answer within %s (is the database reachable?); once it answers, %s: %v", e.Timeout, resume, e.Err)
}

func (e *StalledError) Unwrap() error { return e.Err }
