package search

import (
	"context"
	"errors"

	"github.com/agentrt/agentrt/profile"
)

// ValidationError refuses a candidate that Options.ValidateCandidate did
// not accept: it returned an error, or panicked.
type ValidationError struct {
	// Digest is the candidate profile's digest.
	Digest string
	// Panicked is set when the hook panicked rather than returned.
	Panicked bool
	// Err is the hook's error (for a panic, one that says so).
	Err error
}

func (e *ValidationError) Error() string {
	return "search: ValidateCandidate refused the candidate " + e.Digest + ": " + Scrub(e.Err.Error())
}

// Unwrap returns the hook's error.
func (e *ValidationError) Unwrap() error { return e.Err }

// errHookPanicked marks the error guarded makes of a panic.
var errHookPanicked = errors.New("the hook panicked")

// validate asks Options.ValidateCandidate, once per digest, whether a
// candidate is accepted; the base profile is not a candidate and needs
// no acceptance. The hook gets its own copy of the profile.
func (r *run) validate(ctx context.Context, p *profile.Profile, digest string) error {
	h := r.o.ValidateCandidate
	if h == nil || digest == r.baseDigest {
		return nil
	}
	if err, ok := r.validated[digest]; ok {
		return err
	}
	own, err := profile.Clone(p)
	if err != nil {
		return err
	}
	_, herr := guarded(func() (struct{}, error) { return struct{}{}, h(ctx, own) })
	if herr != nil {
		herr = &ValidationError{Digest: digest, Panicked: errors.Is(herr, errHookPanicked), Err: herr}
	}
	if r.validated == nil {
		r.validated = map[string]error{}
	}
	r.validated[digest] = herr
	return herr
}
