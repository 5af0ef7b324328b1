package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
)

func TestConfidentialExecutionRequestDigest(t *testing.T) {
	full := contract.ConfidentialExecutionRequest{Requested: true, Nonce: brPtr("n-1"), Policy: brPtr("p-1"), ProfileDigest: brPtr(brDigest('e'))}
	d1, err := contract.ConfidentialExecutionRequestDigest(full)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := contract.DigestOf(full)
	if d1 != want {
		t.Fatalf("digest %s, want the digest of the present fields %s", d1, want)
	}
	other := full
	other.Nonce = brPtr("n-2")
	if d2, _ := contract.ConfidentialExecutionRequestDigest(other); d2 == d1 {
		t.Fatal("nonce is not bound")
	}
	plain, err := contract.ConfidentialExecutionRequestDigest(contract.ConfidentialExecutionRequest{})
	if err != nil || plain == d1 {
		t.Fatalf("plain request: %s %v", plain, err)
	}
	for name, bad := range map[string]contract.ConfidentialExecutionRequest{
		"requested but incomplete":   {Requested: true, Nonce: brPtr("n")},
		"complete but not requested": {Nonce: brPtr("n"), Policy: brPtr("p"), ProfileDigest: brPtr(brDigest('e'))},
	} {
		if _, err := contract.ConfidentialExecutionRequestDigest(bad); !brIssueAt(err, "/requested") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A partial set is allowed when confidentiality was not requested.
	if _, err := contract.ConfidentialExecutionRequestDigest(contract.ConfidentialExecutionRequest{Policy: brPtr("p")}); err != nil {
		t.Errorf("partial non-confidential request: %v", err)
	}
}

func TestConfidentialAttestationRules(t *testing.T) {
	req := brForkRequest(t)
	att := *brAttestation(req, brForkedFor(req))
	if _, err := contract.ParseConfidentialAttestation(brMarshal(t, att)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		change func(a *contract.ConfidentialAttestation)
		path   string
	}{
		"nonce reuses the policy": {func(a *contract.ConfidentialAttestation) { a.Nonce = a.Policy }, "/nonce"},
		"signature is the quote":  {func(a *contract.ConfidentialAttestation) { a.ProviderSignature = a.Quote }, "/providerSignature"},
		"not requested":           {func(a *contract.ConfidentialAttestation) { a.Requested = false }, "/requested"},
		"bad measurement":         {func(a *contract.ConfidentialAttestation) { a.Measurement = "sha256:XYZ" }, "/measurement"},
		"offset timestamp":        {func(a *contract.ConfidentialAttestation) { a.VerifiedAt = "2026-08-01T20:00:02+02:00" }, "/verifiedAt"},
	}
	for name, c := range cases {
		a := att
		c.change(&a)
		if _, err := contract.ParseConfidentialAttestation(brMarshal(t, a)); !brIssueAt(err, c.path) {
			t.Errorf("%s: want issue at %s, got %v", name, c.path, err)
		}
	}
}

func TestConfidentialExecutionVerified(t *testing.T) {
	req := brForkRequest(t)
	env := brForkedFor(req)
	att := brAttestation(req, env)
	environment := contract.ConfidentialExecutionEnvironment{Provider: env.Provider, EnvironmentID: env.EnvironmentID,
		Source: env.Source, RequestDigest: env.RequestDigest, ConfidentialRequested: true}
	var seen *contract.ConfidentialExecutionEnvironment
	verify := func(_ contract.ConfidentialAttestation, e contract.ConfidentialExecutionEnvironment) bool {
		seen = &e
		return true
	}
	if !contract.ConfidentialExecutionVerified(*req.Confidential, environment, att, verify) {
		t.Fatal("bound attestation not verified")
	}
	if seen == nil || seen.EnvironmentID != env.EnvironmentID {
		t.Fatal("the verifier did not receive the expected environment")
	}
	cases := map[string]func(r *contract.ConfidentialExecutionRequest, e *contract.ConfidentialExecutionEnvironment){
		"not requested": func(r *contract.ConfidentialExecutionRequest, _ *contract.ConfidentialExecutionEnvironment) {
			*r = contract.ConfidentialExecutionRequest{}
		},
		"environment did not ask": func(_ *contract.ConfidentialExecutionRequest, e *contract.ConfidentialExecutionEnvironment) {
			e.ConfidentialRequested = false
		},
		"other environment": func(_ *contract.ConfidentialExecutionRequest, e *contract.ConfidentialExecutionEnvironment) {
			e.EnvironmentID = "environment-other"
		},
		"other admission": func(_ *contract.ConfidentialExecutionRequest, e *contract.ConfidentialExecutionEnvironment) {
			e.RequestDigest = brDigest('7')
		},
		"other source run": func(_ *contract.ConfidentialExecutionRequest, e *contract.ConfidentialExecutionEnvironment) {
			e.Source.ExecutionID = "execution-9"
		},
		"other policy": func(r *contract.ConfidentialExecutionRequest, _ *contract.ConfidentialExecutionEnvironment) {
			r.Policy = brPtr("policy-9")
		},
	}
	for name, change := range cases {
		r, e := *req.Confidential, environment
		change(&r, &e)
		if contract.ConfidentialExecutionVerified(r, e, att, verify) {
			t.Errorf("%s: verified", name)
		}
	}
	if contract.ConfidentialExecutionVerified(*req.Confidential, environment, nil, verify) ||
		contract.ConfidentialExecutionVerified(*req.Confidential, environment, att, nil) {
		t.Error("verified without attestation or verifier")
	}
}
