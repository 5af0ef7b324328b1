package fleet

import (
	"errors"
	"fmt"
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
