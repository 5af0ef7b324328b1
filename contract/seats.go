package contract

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// Occasions on which a seat's credential request reaches its provider.
const (
	CredentialOnCreate = "create"
	CredentialOnTurn   = "turn"
)

// CredentialRequest is what a seat stage of a subscription profile asks
// of its provider: the stage's harness, provider and model and its
// account selector. The provider's account owner binds the credential
// that serves the request (all-eligible: any eligible account, in the
// owner's order; seat: exactly that account); the runtime never selects
// a credential itself (RG-10). It travels with every create and every
// turn (CreateInput.Credential, TurnInput.Credential) and is never part
// of their canonical form or digest.
type CredentialRequest struct {
	Stage    int
	Harness  harness.Type
	Provider string
	Model    string
	Selector profile.SeatSelector
	// Occasion is CredentialOnCreate or CredentialOnTurn.
	Occasion string
}

// CredentialRequestFor returns the credential request of stage k of p,
// or nil when p has no seats (the legacy single-provider policy).
func CredentialRequestFor(p *profile.Profile, k int, occasion string) *CredentialRequest {
	if p == nil || k < 0 || k >= len(p.Seats) {
		return nil
	}
	s := p.Seats[k]
	return &CredentialRequest{Stage: k, Harness: s.Harness, Provider: s.Provider, Model: s.Model, Selector: s.Selector, Occasion: occasion}
}

// ErrQuotaRefused matches every *QuotaRefusalError.
var ErrQuotaRefused = errors.New("contract: quota refused")

// QuotaRefusalError is a provider's typed refusal of a stage because the
// account its owner would bind has no quota left. Refused at a create or
// at a turn's start, nothing was dispatched under it (Run is nil); an
// account that ran out part way through a turn breaks the turn off with
// it, naming the run (Run): what ran stays in the session's native
// history, and nothing more is dispatched under that account. A seated
// run continues on the next authored stage — in the same native session
// when Run names it and the provider proves continuity from it, else
// fresh; on the last stage the run ends with this refusal.
type QuotaRefusalError struct {
	Provider string
	// Stage is the seat stage refused. A seated run sets it to the
	// stage it ran, whatever the provider put there (a provider does
	// not always know its stage; 0 would then say stage 0).
	Stage int
	// RetryAfter is when the quota may allow the stage again; nil when
	// the provider does not say.
	RetryAfter *time.Duration
	Message    string
	// Run is the exact run the refusal broke off part way; nil when the
	// refusal came before anything was admitted.
	Run *ExactRunControlRef
}

func (e *QuotaRefusalError) Error() string {
	msg := fmt.Sprintf("provider %s refused stage %d: quota exhausted", e.Provider, e.Stage)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.RetryAfter != nil {
		msg += fmt.Sprintf(" (retry after %v)", *e.RetryAfter)
	}
	return msg
}

// Is makes errors.Is(err, ErrQuotaRefused) match.
func (e *QuotaRefusalError) Is(target error) bool { return target == ErrQuotaRefused }
