package scripted_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/schema"
)

// RG-10: the scripted account owner binds from the credential request —
// all-eligible: the first account with quota left, in name order; seat:
// exactly that account — and refuses, before any effect, a create
// without a request, an unknown account, or an exhausted one (typed, for
// quota, with its retry-after and the refused stage).
func TestScriptedAccountOwnerBindsFromTheRequestRG10(t *testing.T) {
	const script = `{"turns":[{"repeat":true,"steps":[{"text":"ok"}]}],
	 "accounts":{"a-exhausted":{"exhausted":true,"retryAfterMs":1500},"b-open":{}}}`
	s, err := scripted.ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	req := func(k int, sel profile.SeatSelector) *contract.CredentialRequest {
		return &contract.CredentialRequest{Stage: k, Harness: "cli-base", Provider: "scripted", Model: "m", Selector: sel, Occasion: contract.CredentialOnCreate}
	}
	seat := func(id string) profile.SeatSelector { return profile.SeatSelector{Kind: profile.SelectorSeat, ID: &id} }
	eligible := profile.SeatSelector{Kind: profile.SelectorAllEligible}
	for _, tc := range []struct {
		name  string
		cred  *contract.CredentialRequest
		check func(error) bool
	}{
		{"all-eligible skips the exhausted account", req(0, eligible), func(err error) bool { return err == nil }},
		{"a seat with quota", req(1, seat("b-open")), func(err error) bool { return err == nil }},
		{"no request", nil, func(err error) bool { return errors.Is(err, scripted.ErrNoCredentialRequest) }},
		{"an unknown account", req(0, seat("nobody")), func(err error) bool { return errors.Is(err, scripted.ErrNoSuchAccount) }},
		{"an exhausted seat", req(2, seat("a-exhausted")), func(err error) bool {
			var q *contract.QuotaRefusalError
			return errors.As(err, &q) && q.Stage == 2 && q.Provider == "scripted" && q.RetryAfter != nil && *q.RetryAfter == 1500*time.Millisecond
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scripted.New(s, scripted.Options{})
			_, err := p.Create(context.Background(), &contract.CreateInput{Credential: tc.cred})
			if !tc.check(err) {
				t.Fatalf("create: %v", err)
			}
			if err != nil && p.Creates() != 0 {
				t.Errorf("a refused create provisioned %d environments", p.Creates())
			}
		})
	}
	all := `{"turns":[],"accounts":{"x":{"exhausted":true}}}`
	sx, err := scripted.ParseScript([]byte(all))
	if err != nil {
		t.Fatal(err)
	}
	_, err = scripted.New(sx, scripted.Options{}).Create(context.Background(), &contract.CreateInput{Credential: req(0, eligible)})
	if !errors.Is(err, contract.ErrQuotaRefused) {
		t.Errorf("all-eligible with every account exhausted: %v, want a quota refusal", err)
	}
}

// A script's accounts decode strictly.
func TestScriptAccountsStrict(t *testing.T) {
	for _, bad := range []string{
		`{"turns":[],"accounts":{"a":{"exhausted":"yes"}}}`,
		`{"turns":[],"accounts":{"a":{"retryAfterMs":-1}}}`,
		`{"turns":[],"accounts":{"a":{"token":"x"}}}`,
		`{"turns":[],"accounts":{"":{}}}`,
	} {
		var se *schema.Error
		if _, err := scripted.ParseScript([]byte(bad)); !errors.As(err, &se) {
			t.Errorf("%s: %v, want a *schema.Error", bad, err)
		}
	}
}
