package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of confidential execution.
const (
	KindConfidentialAttestation      = "ConfidentialAttestation"
	KindConfidentialExecutionRequest = "ConfidentialExecutionRequest"
)

// ConfidentialAttestation is a provider's evidence that an environment
// runs confidentially. It binds the provider, the environment, the source
// run, the admission request and profile digests, the caller's nonce and
// policy, and a measurement. The quote is provider-produced and the
// signature must be checked against the provider's key by an external
// verifier: an attestation is never authenticated on its own.
type ConfidentialAttestation struct {
	Provider          string             `json:"provider"`
	Requested         bool               `json:"requested"`
	Nonce             string             `json:"nonce"`
	Measurement       string             `json:"measurement"`
	EnvironmentID     string             `json:"environmentId"`
	Source            ExactRunControlRef `json:"source"`
	RequestDigest     string             `json:"requestDigest"`
	ProfileDigest     string             `json:"profileDigest"`
	Policy            string             `json:"policy"`
	Quote             string             `json:"quote"`
	ProviderKeyID     string             `json:"providerKeyId"`
	ProviderSignature string             `json:"providerSignature"`
	VerifiedAt        string             `json:"verifiedAt"`
}

// ConfidentialExecutionRequest is what a caller asked for, kept apart from
// what the provider proved. A confidential request (Requested true) binds a
// nonce, a policy and a profile digest; a non-confidential one carries no
// complete set of them.
type ConfidentialExecutionRequest struct {
	Requested     bool    `json:"requested"`
	Nonce         *string `json:"nonce,omitzero"`
	Policy        *string `json:"policy,omitzero"`
	ProfileDigest *string `json:"profileDigest,omitzero"`
}

// ConfidentialExecutionEnvironment is the environment an attestation must
// be bound to.
type ConfidentialExecutionEnvironment struct {
	Provider              string             `json:"provider"`
	EnvironmentID         string             `json:"environmentId"`
	Source                ExactRunControlRef `json:"source"`
	RequestDigest         string             `json:"requestDigest"`
	ConfidentialRequested bool               `json:"confidentialRequested"`
}

// ConfidentialAttestationVerifier checks an attestation's provider
// signature against the provider's key, outside this package. It is the
// only source of a positive confidentiality result.
type ConfidentialAttestationVerifier func(attestation ConfidentialAttestation, expected ConfidentialExecutionEnvironment) bool

var (
	// ConfidentialAttestationSchema is the strict ConfidentialAttestation
	// shape: the nonce is not the policy and the signature is not a copy
	// of the quote.
	ConfidentialAttestationSchema = schema.Object(
		schema.Req("provider", BoundedIdentifier),
		schema.Req("requested", schema.Literal(canonjson.BoolValue(true))),
		schema.Req("nonce", BoundedIdentifier),
		schema.Req("measurement", Digest),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Req("source", ExactRunControlRefSchema),
		schema.Req("requestDigest", Digest),
		schema.Req("profileDigest", Digest),
		schema.Req("policy", BoundedIdentifier),
		schema.Req("quote", obsReason),
		schema.Req("providerKeyId", BoundedIdentifier),
		schema.Req("providerSignature", obsReason),
		schema.Req("verifiedAt", obsTimestamp),
	).Refine(obsCheckAttestation)

	// ConfidentialExecutionRequestSchema is the strict
	// ConfidentialExecutionRequest shape: requested exactly when nonce,
	// policy and profile digest are all present.
	ConfidentialExecutionRequestSchema = schema.Object(
		schema.Req("requested", schema.Bool()),
		schema.Opt("nonce", BoundedIdentifier),
		schema.Opt("policy", BoundedIdentifier),
		schema.Opt("profileDigest", Digest),
	).Refine(obsCheckConfidentialRequest)

	// obsConfidentialEnvironmentSchema accepts only an environment that
	// asked for confidentiality.
	obsConfidentialEnvironmentSchema = schema.Object(
		schema.Req("provider", BoundedIdentifier),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Req("source", ExactRunControlRefSchema),
		schema.Req("requestDigest", Digest),
		schema.Req("confidentialRequested", schema.Literal(canonjson.BoolValue(true))),
	)
)

func obsCheckAttestation(c *schema.Context, v canonjson.Value) {
	if str(v, "nonce") == str(v, "policy") {
		c.Custom("the attestation nonce must not reuse the policy identifier", "nonce")
	}
	if str(v, "providerSignature") == str(v, "quote") {
		c.Custom("provider authentication must not be a copied quote", "providerSignature")
	}
}

func obsCheckConfidentialRequest(c *schema.Context, v canonjson.Value) {
	_, hasNonce := v.Get("nonce")
	_, hasPolicy := v.Get("policy")
	_, hasProfile := v.Get("profileDigest")
	complete := hasNonce && hasPolicy && hasProfile
	requested, _ := v.Get("requested")
	if requested.Bool() && !complete {
		c.Custom("a confidential execution request must bind nonce, policy and profile digest", "requested")
	}
	if !requested.Bool() && complete {
		c.Custom("a non-confidential execution request cannot carry confidential admission fields", "requested")
	}
}

// ParseConfidentialAttestation decodes and validates an attestation.
func ParseConfidentialAttestation(data []byte) (*ConfidentialAttestation, error) {
	return Parse[ConfidentialAttestation](KindConfidentialAttestation, ConfidentialAttestationSchema, data)
}

// ParseConfidentialExecutionRequest decodes and validates a confidential
// execution request.
func ParseConfidentialExecutionRequest(data []byte) (*ConfidentialExecutionRequest, error) {
	return Parse[ConfidentialExecutionRequest](KindConfidentialExecutionRequest, ConfidentialExecutionRequestSchema, data)
}

// ConfidentialExecutionRequestDigest returns the digest of a valid
// confidential execution request (its present fields only).
func ConfidentialExecutionRequestDigest(r ConfidentialExecutionRequest) (string, error) {
	v, err := Validate(KindConfidentialExecutionRequest, ConfidentialExecutionRequestSchema, r)
	if err != nil {
		return "", err
	}
	return brWireDigest(v)
}

// ConfidentialExecutionVerified reports whether an execution may be shown
// as confidential: the request asked for it and is complete, the
// environment asked for it, the attestation is valid and binds every
// request and environment field (provider, environment, exact source run,
// admission digest, nonce, policy, profile digest), and the external
// verifier accepts the provider's signature. Without an attestation or a
// verifier the answer is false.
func ConfidentialExecutionVerified(request ConfidentialExecutionRequest, environment ConfidentialExecutionEnvironment,
	attestation *ConfidentialAttestation, verify ConfidentialAttestationVerifier) bool {
	if _, err := Validate(KindConfidentialExecutionRequest, ConfidentialExecutionRequestSchema, request); err != nil || !request.Requested {
		return false
	}
	if attestation == nil || verify == nil {
		return false
	}
	if _, err := Validate("ConfidentialExecutionEnvironment", obsConfidentialEnvironmentSchema, environment); err != nil {
		return false
	}
	if _, err := Validate(KindConfidentialAttestation, ConfidentialAttestationSchema, attestation); err != nil {
		return false
	}
	a := *attestation
	if request.Nonce == nil || request.Policy == nil || request.ProfileDigest == nil ||
		a.Requested != request.Requested ||
		a.Provider != environment.Provider ||
		a.EnvironmentID != environment.EnvironmentID ||
		a.Source.Provider != environment.Source.Provider ||
		!brSameWire(a.Source, environment.Source) ||
		a.RequestDigest != environment.RequestDigest ||
		a.Nonce != *request.Nonce ||
		a.Policy != *request.Policy ||
		a.ProfileDigest != *request.ProfileDigest ||
		environment.ConfidentialRequested != request.Requested {
		return false
	}
	return verify(a, environment)
}
