package scripted

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// Account is one subscription account of a scripted provider's account
// owner (Script.Accounts).
type Account struct {
	// Exhausted: the account has no quota left; a create or turn bound
	// to it is refused with a *contract.QuotaRefusalError before any
	// effect.
	Exhausted bool `json:"exhausted,omitzero"`
	// RetryAfterMs is when the refusal says the quota may allow the
	// stage again (absent: it does not say).
	RetryAfterMs *int64 `json:"retryAfterMs,omitzero"`
}

// maxRecordedCredentials bounds the requests CredentialRequests keeps.
const maxRecordedCredentials = 4096

// ErrNoCredentialRequest: a provider whose script names accounts serves
// subscription seats, so every create and every new turn must carry the
// seat stage's credential request.
var ErrNoCredentialRequest = errors.New("scripted: this provider serves subscription accounts; the create or turn carries no credential request (run the profile's seats through kernel.ExecuteSeated)")

// ErrNoSuchAccount: a seat selector names an account the provider's
// account owner does not hold.
var ErrNoSuchAccount = errors.New("scripted: the seat selector names no account this provider holds")

// bind is the provider's account owner (RG-10): it binds the account
// that serves a create or turn from its credential request — the named
// account for a seat selector, the first account with quota left (in
// name order) for all-eligible — and records the request. A script
// without accounts serves no subscription and ignores requests. Errors
// never name the account: a refusal is recorded by the caller.
func (b *backend) bind(cr *contract.CredentialRequest) error {
	accounts := b.script.Accounts
	if len(accounts) == 0 {
		return nil
	}
	if cr == nil {
		return ErrNoCredentialRequest
	}
	b.mu.Lock()
	if len(b.credentials) == maxRecordedCredentials {
		// A long-served provider keeps the latest requests, bounded.
		b.credentials = append(b.credentials[:0], b.credentials[1:]...)
	}
	b.credentials = append(b.credentials, *cr)
	b.mu.Unlock()
	refuse := func(a Account) error {
		q := &contract.QuotaRefusalError{Provider: b.name, Stage: cr.Stage, Message: "the subscription's quota is used up"}
		if a.RetryAfterMs != nil {
			d := time.Duration(*a.RetryAfterMs) * time.Millisecond
			q.RetryAfter = &d
		}
		return q
	}
	switch cr.Selector.Kind {
	case profile.SelectorSeat:
		if cr.Selector.ID == nil {
			return ErrNoSuchAccount
		}
		a, ok := accounts[*cr.Selector.ID]
		if !ok {
			return ErrNoSuchAccount
		}
		if a.Exhausted {
			return refuse(a)
		}
		return nil
	case profile.SelectorAllEligible:
		names := make([]string, 0, len(accounts))
		for name := range accounts {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if !accounts[name].Exhausted {
				return nil
			}
		}
		return refuse(accounts[names[0]])
	}
	return fmt.Errorf("scripted: seat selector kind %q: %w", cr.Selector.Kind, contract.ErrUnsupported)
}

// CredentialRequests returns the credential requests the provider's
// account owner received, in order — the latest 4096 — (a script without
// accounts records none): what tests read to prove a request arrived.
func (p *Provider) CredentialRequests() []contract.CredentialRequest {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	return slices.Clone(p.b.credentials)
}
