package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of workspace forks.
const (
	KindWorkspaceForkRequest      = "WorkspaceForkRequest"
	KindWorkspaceForkResult       = "WorkspaceForkResult"
	KindWorkspaceForkLookupResult = "WorkspaceForkLookupResult"
	KindForkedEnvironmentRef      = "ForkedEnvironmentRef"
)

// WorkspaceForkMaterial is what a fork request asks for: a new environment
// from one checkpoint, at a requested placement (part of the operation's
// identity), optionally named, annotated and asked to run confidentially.
// Confidential is what the caller asked for, never what the provider
// proved.
type WorkspaceForkMaterial struct {
	Checkpoint   WorkspaceCheckpointRef        `json:"checkpoint"`
	Name         *string                       `json:"name,omitzero"`
	Metadata     map[string]canonjson.Value    `json:"metadata,omitzero"`
	Placement    PlacementInfo                 `json:"placement"`
	Confidential *ConfidentialExecutionRequest `json:"confidential,omitzero"`
}

// WorkspaceForkRequest asks a provider for a durable fork; key and digest
// work as for a checkpoint request.
type WorkspaceForkRequest struct {
	WorkspaceForkMaterial
	IdempotencyKey string `json:"idempotencyKey"`
	RequestDigest  string `json:"requestDigest"`
}

// Lookup returns the lookup request that recovers this operation.
func (r *WorkspaceForkRequest) Lookup() WorkspaceOperationLookupRequest {
	return WorkspaceOperationLookupRequest{IdempotencyKey: r.IdempotencyKey, RequestDigest: r.RequestDigest}
}

// ForkedEnvironmentRef is an environment forked from a checkpoint. It
// repeats the key and digest of the operation that made it, names its full
// source run (an environment id alone is not enough) and is never the
// source environment. ConfidentialRequested records what was asked;
// ConfidentialAttestation, present only when the provider produced
// evidence, is read only through ForkedEnvironmentConfidentialityVerified.
// Confidential is a legacy assertion kept for wire compatibility and never
// trusted as proof.
type ForkedEnvironmentRef struct {
	Provider                string                     `json:"provider"`
	EnvironmentID           string                     `json:"environmentId"`
	SourceEnvironmentID     string                     `json:"sourceEnvironmentId"`
	Source                  ExactRunControlRef         `json:"source"`
	SourceCheckpointID      string                     `json:"sourceCheckpointId"`
	IdempotencyKey          string                     `json:"idempotencyKey"`
	RequestDigest           string                     `json:"requestDigest"`
	CreatedAt               string                     `json:"createdAt"`
	Placement               PlacementInfo              `json:"placement"`
	ConfidentialRequested   bool                       `json:"confidentialRequested"`
	ConfidentialAttestation *ConfidentialAttestation   `json:"confidentialAttestation,omitzero"`
	Confidential            *bool                      `json:"confidential,omitzero"`
	Metadata                map[string]canonjson.Value `json:"metadata,omitzero"`
}

// WorkspaceForkResult answers a fork request: created or replayed with the
// environment, conflict or unknown.
type WorkspaceForkResult struct {
	Status                string                `json:"status"`
	IdempotencyKey        string                `json:"idempotencyKey"`
	RequestDigest         string                `json:"requestDigest"`
	Environment           *ForkedEnvironmentRef `json:"environment,omitzero"`
	ExistingRequestDigest *string               `json:"existingRequestDigest,omitzero"`
	Message               *string               `json:"message,omitzero"`
	Retryable             *bool                 `json:"retryable,omitzero"`
}

// WorkspaceForkLookupResult answers a fork lookup: found with the
// environment, not_found, conflict or unknown.
type WorkspaceForkLookupResult struct {
	Status                string                `json:"status"`
	IdempotencyKey        string                `json:"idempotencyKey"`
	RequestDigest         string                `json:"requestDigest"`
	Environment           *ForkedEnvironmentRef `json:"environment,omitzero"`
	ExistingRequestDigest *string               `json:"existingRequestDigest,omitzero"`
	Message               *string               `json:"message,omitzero"`
	Retryable             *bool                 `json:"retryable,omitzero"`
}

var (
	// brForkMaterialSchema validates fork material. Its metadata records
	// (the request's and the checkpoint's) keep every member, "__proto__"
	// included, and the digest is computed over this validated material,
	// so such a member is part of the request's identity.
	brForkMaterialSchema = schema.Object(
		schema.Req("checkpoint", WorkspaceCheckpointRefSchema),
		schema.Opt("name", BoundedIdentifier),
		schema.Opt("metadata", BoundedJSONRecord),
		schema.Req("placement", PlacementInfoSchema),
		schema.Opt("confidential", ConfidentialExecutionRequestSchema),
	)

	// WorkspaceForkRequestSchema is the strict WorkspaceForkRequest shape;
	// its requestDigest must be the digest of its material, and a
	// confidential request must be complete.
	WorkspaceForkRequestSchema = brForkMaterialSchema.Extend(brOperationIdentity...).
					Refine(brCheckRequestDigest(KindWorkspaceForkRequest, brForkMaterialSchema,
			"the fork request digest does not match its material", "idempotencyKey", "requestDigest")).
		Refine(func(c *schema.Context, v canonjson.Value) {
			conf, ok := v.Get("confidential")
			if !ok {
				return
			}
			requested, _ := conf.Get("requested")
			_, hasNonce := conf.Get("nonce")
			_, hasPolicy := conf.Get("policy")
			_, hasProfile := conf.Get("profileDigest")
			if requested.Bool() && !(hasNonce && hasPolicy && hasProfile) {
				c.Custom("a confidential fork request must bind a nonce, policy and profile digest", "confidential")
			}
		})

	// ForkedEnvironmentRefSchema is the strict ForkedEnvironmentRef shape
	// with its binding rules.
	ForkedEnvironmentRefSchema = schema.Object(
		schema.Req("provider", BoundedIdentifier),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Req("sourceEnvironmentId", BoundedIdentifier),
		schema.Req("source", ExactRunControlRefSchema),
		schema.Req("sourceCheckpointId", BoundedIdentifier),
		schema.Req("idempotencyKey", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Req("createdAt", obsTimestamp),
		schema.Req("placement", PlacementInfoSchema),
		schema.Req("confidentialRequested", schema.Bool()),
		schema.Opt("confidentialAttestation", ConfidentialAttestationSchema),
		schema.Opt("confidential", schema.Bool()),
		schema.Opt("metadata", BoundedJSONRecord),
	).Refine(brCheckForkedEnvironment)

	// WorkspaceForkResultSchema is the WorkspaceForkResult shape, selected
	// by status.
	WorkspaceForkResultSchema = schema.Refined(
		schema.Discriminated("status", brAnswer("environment", ForkedEnvironmentRefSchema, false, BranchingCreated, BranchingReplayed)),
		brCheckIdentity("environment", "the forked environment identity must match its operation"))

	// WorkspaceForkLookupResultSchema is the WorkspaceForkLookupResult
	// shape, selected by status.
	WorkspaceForkLookupResultSchema = schema.Refined(
		schema.Discriminated("status", brAnswer("environment", ForkedEnvironmentRefSchema, true, BranchingFound)),
		brCheckIdentity("environment", "the forked environment identity must match its lookup operation"))
)

func brCheckForkedEnvironment(c *schema.Context, v canonjson.Value) {
	source, _ := v.Get("source")
	if str(v, "environmentId") == str(v, "sourceEnvironmentId") {
		c.Custom("a forked environment must differ from its source environment", "environmentId")
	}
	if str(source, "environmentId") != str(v, "sourceEnvironmentId") {
		c.Custom("the source environment id must match the complete source identity", "sourceEnvironmentId")
	}
	if str(v, "provider") != str(source, "provider") {
		c.Custom("the fork provider must match the source provider", "provider")
	}
	attestation, attested := v.Get("confidentialAttestation")
	if attested && str(attestation, "environmentId") != str(v, "environmentId") {
		c.Custom("the attestation must be bound to the forked environment", "confidentialAttestation", "environmentId")
	}
	if requested, _ := v.Get("confidentialRequested"); attested && !requested.Bool() {
		c.Custom("an attestation cannot accompany a fork that did not request confidentiality", "confidentialAttestation")
	}
}

// WorkspaceForkRequestDigest returns the request digest of valid fork
// material: the digest of its present fields.
func WorkspaceForkRequestDigest(m WorkspaceForkMaterial) (string, error) {
	v, err := canonjson.ToValue(m)
	if err != nil {
		return "", err
	}
	return brMaterialDigest(KindWorkspaceForkRequest, brForkMaterialSchema, v)
}

// NewWorkspaceForkRequest builds a fork request with its digest.
func NewWorkspaceForkRequest(idempotencyKey string, m WorkspaceForkMaterial) (*WorkspaceForkRequest, error) {
	digest, err := WorkspaceForkRequestDigest(m)
	if err != nil {
		return nil, err
	}
	r := &WorkspaceForkRequest{WorkspaceForkMaterial: m, IdempotencyKey: idempotencyKey, RequestDigest: digest}
	if _, err := Validate(KindWorkspaceForkRequest, WorkspaceForkRequestSchema, r); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseWorkspaceForkRequest decodes and validates a fork request, digest
// included.
func ParseWorkspaceForkRequest(data []byte) (*WorkspaceForkRequest, error) {
	return Parse[WorkspaceForkRequest](KindWorkspaceForkRequest, WorkspaceForkRequestSchema, data)
}

// ParseForkedEnvironmentRef decodes and validates a forked environment.
func ParseForkedEnvironmentRef(data []byte) (*ForkedEnvironmentRef, error) {
	return Parse[ForkedEnvironmentRef](KindForkedEnvironmentRef, ForkedEnvironmentRefSchema, data)
}

// ParseWorkspaceForkResult decodes and validates a fork result.
func ParseWorkspaceForkResult(data []byte) (*WorkspaceForkResult, error) {
	return Parse[WorkspaceForkResult](KindWorkspaceForkResult, WorkspaceForkResultSchema, data)
}

// ParseWorkspaceForkLookupResult decodes and validates a fork lookup
// result.
func ParseWorkspaceForkLookupResult(data []byte) (*WorkspaceForkLookupResult, error) {
	return Parse[WorkspaceForkLookupResult](KindWorkspaceForkLookupResult, WorkspaceForkLookupResultSchema, data)
}

// WorkspaceForkResultMatchesRequest reports whether res delivers the fork
// req asked for: both valid, status created or replayed, the answer and
// the environment repeat the request's key and digest, and the environment
// comes from the requested checkpoint (id, provider, source environment and
// exact source run), is a new environment, has the requested placement,
// records the requested confidentiality and carries the request's metadata.
func WorkspaceForkResultMatchesRequest(req *WorkspaceForkRequest, res *WorkspaceForkResult) bool {
	if req == nil || res == nil || res.Status != BranchingCreated && res.Status != BranchingReplayed {
		return false
	}
	if _, err := Validate(KindWorkspaceForkRequest, WorkspaceForkRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindWorkspaceForkResult, WorkspaceForkResultSchema, res); err != nil {
		return false
	}
	return brForkDelivers(req, res.IdempotencyKey, res.RequestDigest, res.Environment)
}

// WorkspaceForkLookupResultMatchesRequest is
// WorkspaceForkResultMatchesRequest for a lookup answer: only found
// matches, on the same terms.
func WorkspaceForkLookupResultMatchesRequest(req *WorkspaceForkRequest, res *WorkspaceForkLookupResult) bool {
	if req == nil || res == nil || res.Status != BranchingFound {
		return false
	}
	if _, err := Validate(KindWorkspaceForkRequest, WorkspaceForkRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindWorkspaceForkLookupResult, WorkspaceForkLookupResultSchema, res); err != nil {
		return false
	}
	return brForkDelivers(req, res.IdempotencyKey, res.RequestDigest, res.Environment)
}

func brForkDelivers(req *WorkspaceForkRequest, key, digest string, env *ForkedEnvironmentRef) bool {
	if env == nil {
		return false
	}
	source := req.Checkpoint.Source
	requested := req.Confidential != nil && req.Confidential.Requested
	return key == req.IdempotencyKey && digest == req.RequestDigest &&
		env.IdempotencyKey == req.IdempotencyKey && env.RequestDigest == req.RequestDigest &&
		env.SourceCheckpointID == req.Checkpoint.CheckpointID &&
		env.Provider == req.Checkpoint.Provider &&
		env.SourceEnvironmentID == source.EnvironmentID &&
		brSameWire(env.Source, source) &&
		env.EnvironmentID != source.EnvironmentID &&
		brSameWire(env.Placement, req.Placement) &&
		env.ConfidentialRequested == requested &&
		brSameOptionalMetadata(env.Metadata, req.Metadata)
}

// ForkedEnvironmentConfidentialityVerified is the only supported way to
// decide whether a fork may be shown as confidential: env must be the fork
// req asked for (digest, provider, checkpoint, source run, placement,
// metadata) and ConfidentialExecutionVerified must hold for the request's
// confidentiality, the environment and its attestation, with verify
// checking the provider's signature. The legacy Confidential flag is
// ignored.
func ForkedEnvironmentConfidentialityVerified(req *WorkspaceForkRequest, env *ForkedEnvironmentRef, verify ConfidentialAttestationVerifier) bool {
	if req == nil || env == nil {
		return false
	}
	if _, err := Validate(KindWorkspaceForkRequest, WorkspaceForkRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindForkedEnvironmentRef, ForkedEnvironmentRefSchema, env); err != nil {
		return false
	}
	if env.RequestDigest != req.RequestDigest ||
		env.Provider != req.Checkpoint.Provider ||
		env.SourceCheckpointID != req.Checkpoint.CheckpointID ||
		env.SourceEnvironmentID != req.Checkpoint.Source.EnvironmentID ||
		!brSameWire(env.Source, req.Checkpoint.Source) ||
		!brSameWire(env.Placement, req.Placement) ||
		!brSameOptionalMetadata(env.Metadata, req.Metadata) {
		return false
	}
	request := ConfidentialExecutionRequest{Requested: false}
	if req.Confidential != nil {
		request = *req.Confidential
	}
	return ConfidentialExecutionVerified(request, ConfidentialExecutionEnvironment{
		Provider:              env.Provider,
		EnvironmentID:         env.EnvironmentID,
		Source:                env.Source,
		RequestDigest:         env.RequestDigest,
		ConfidentialRequested: env.ConfidentialRequested,
	}, env.ConfidentialAttestation, verify)
}
