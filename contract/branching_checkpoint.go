package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of workspace checkpoints.
const (
	KindWorkspaceCheckpointRef          = "WorkspaceCheckpointRef"
	KindWorkspaceCheckpointRequest      = "WorkspaceCheckpointRequest"
	KindWorkspaceCheckpointResult       = "WorkspaceCheckpointResult"
	KindWorkspaceCheckpointLookupResult = "WorkspaceCheckpointLookupResult"
)

// WorkspaceCheckpointMaterial is what a checkpoint request asks for: a
// checkpoint of the workspace of one exact source run, optionally named and
// annotated. Its digest is the request's identity.
type WorkspaceCheckpointMaterial struct {
	Source   ExactRunControlRef         `json:"source"`
	Name     *string                    `json:"name,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
}

// WorkspaceCheckpointRequest asks a provider for a durable checkpoint. The
// idempotency key names the operation; the request digest binds the key to
// the canonical material, so a retry with the same key and material
// replays and a reuse with changed material conflicts.
type WorkspaceCheckpointRequest struct {
	WorkspaceCheckpointMaterial
	IdempotencyKey string `json:"idempotencyKey"`
	RequestDigest  string `json:"requestDigest"`
}

// Lookup returns the lookup request that recovers this operation.
func (r *WorkspaceCheckpointRequest) Lookup() WorkspaceOperationLookupRequest {
	return WorkspaceOperationLookupRequest{IdempotencyKey: r.IdempotencyKey, RequestDigest: r.RequestDigest}
}

// WorkspaceCheckpointRef is a durable checkpoint. It repeats the key and
// digest of the operation that made it, and its provider is the source
// run's provider.
type WorkspaceCheckpointRef struct {
	CheckpointID   string                     `json:"checkpointId"`
	Provider       string                     `json:"provider"`
	Source         ExactRunControlRef         `json:"source"`
	IdempotencyKey string                     `json:"idempotencyKey"`
	RequestDigest  string                     `json:"requestDigest"`
	CreatedAt      string                     `json:"createdAt"`
	Metadata       map[string]canonjson.Value `json:"metadata,omitzero"`
}

// WorkspaceCheckpointResult answers a checkpoint request: created or
// replayed with the checkpoint, conflict with the digest of the request
// that holds the key, or unknown with a message and retryability.
type WorkspaceCheckpointResult struct {
	Status                string                  `json:"status"`
	IdempotencyKey        string                  `json:"idempotencyKey"`
	RequestDigest         string                  `json:"requestDigest"`
	Checkpoint            *WorkspaceCheckpointRef `json:"checkpoint,omitzero"`
	ExistingRequestDigest *string                 `json:"existingRequestDigest,omitzero"`
	Message               *string                 `json:"message,omitzero"`
	Retryable             *bool                   `json:"retryable,omitzero"`
}

// WorkspaceCheckpointLookupResult answers a checkpoint lookup: found with
// the checkpoint, not_found, conflict or unknown.
type WorkspaceCheckpointLookupResult struct {
	Status                string                  `json:"status"`
	IdempotencyKey        string                  `json:"idempotencyKey"`
	RequestDigest         string                  `json:"requestDigest"`
	Checkpoint            *WorkspaceCheckpointRef `json:"checkpoint,omitzero"`
	ExistingRequestDigest *string                 `json:"existingRequestDigest,omitzero"`
	Message               *string                 `json:"message,omitzero"`
	Retryable             *bool                   `json:"retryable,omitzero"`
}

var (
	brCheckpointMaterialSchema = schema.Object(
		schema.Req("source", ExactRunControlRefSchema),
		schema.Opt("name", BoundedIdentifier),
		schema.Opt("metadata", BoundedJSONRecord),
	)

	// WorkspaceCheckpointRequestSchema is the strict
	// WorkspaceCheckpointRequest shape; its requestDigest must be the
	// digest of its material.
	WorkspaceCheckpointRequestSchema = brCheckpointMaterialSchema.Extend(brOperationIdentity...).
						Refine(brCheckRequestDigest(KindWorkspaceCheckpointRequest, brCheckpointMaterialSchema,
			"the checkpoint request digest does not match its material", "idempotencyKey", "requestDigest"))

	// WorkspaceCheckpointRefSchema is the strict WorkspaceCheckpointRef
	// shape.
	WorkspaceCheckpointRefSchema = schema.Object(
		schema.Req("checkpointId", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
		schema.Req("source", ExactRunControlRefSchema),
		schema.Req("idempotencyKey", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Req("createdAt", obsTimestamp),
		schema.Opt("metadata", BoundedJSONRecord),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		source, _ := v.Get("source")
		if str(v, "provider") != str(source, "provider") {
			c.Custom("the checkpoint provider must match its source run", "provider")
		}
	})

	// WorkspaceCheckpointResultSchema is the WorkspaceCheckpointResult
	// shape, selected by status.
	WorkspaceCheckpointResultSchema = schema.Refined(
		schema.Discriminated("status", brAnswer("checkpoint", WorkspaceCheckpointRefSchema, false, BranchingCreated, BranchingReplayed)),
		brCheckIdentity("checkpoint", "the checkpoint identity must match its operation"))

	// WorkspaceCheckpointLookupResultSchema is the
	// WorkspaceCheckpointLookupResult shape, selected by status.
	WorkspaceCheckpointLookupResultSchema = schema.Refined(
		schema.Discriminated("status", brAnswer("checkpoint", WorkspaceCheckpointRefSchema, true, BranchingFound)),
		brCheckIdentity("checkpoint", "the checkpoint identity must match its lookup operation"))
)

// WorkspaceCheckpointRequestDigest returns the request digest of valid
// checkpoint material: the digest of its present fields.
func WorkspaceCheckpointRequestDigest(m WorkspaceCheckpointMaterial) (string, error) {
	v, err := canonjson.ToValue(m)
	if err != nil {
		return "", err
	}
	return brMaterialDigest(KindWorkspaceCheckpointRequest, brCheckpointMaterialSchema, v)
}

// NewWorkspaceCheckpointRequest builds a checkpoint request with its
// digest.
func NewWorkspaceCheckpointRequest(idempotencyKey string, m WorkspaceCheckpointMaterial) (*WorkspaceCheckpointRequest, error) {
	digest, err := WorkspaceCheckpointRequestDigest(m)
	if err != nil {
		return nil, err
	}
	r := &WorkspaceCheckpointRequest{WorkspaceCheckpointMaterial: m, IdempotencyKey: idempotencyKey, RequestDigest: digest}
	if _, err := Validate(KindWorkspaceCheckpointRequest, WorkspaceCheckpointRequestSchema, r); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseWorkspaceCheckpointRef decodes and validates a checkpoint.
func ParseWorkspaceCheckpointRef(data []byte) (*WorkspaceCheckpointRef, error) {
	return Parse[WorkspaceCheckpointRef](KindWorkspaceCheckpointRef, WorkspaceCheckpointRefSchema, data)
}

// ParseWorkspaceCheckpointRequest decodes and validates a checkpoint
// request, digest included.
func ParseWorkspaceCheckpointRequest(data []byte) (*WorkspaceCheckpointRequest, error) {
	return Parse[WorkspaceCheckpointRequest](KindWorkspaceCheckpointRequest, WorkspaceCheckpointRequestSchema, data)
}

// ParseWorkspaceCheckpointResult decodes and validates a checkpoint result.
func ParseWorkspaceCheckpointResult(data []byte) (*WorkspaceCheckpointResult, error) {
	return Parse[WorkspaceCheckpointResult](KindWorkspaceCheckpointResult, WorkspaceCheckpointResultSchema, data)
}

// ParseWorkspaceCheckpointLookupResult decodes and validates a checkpoint
// lookup result.
func ParseWorkspaceCheckpointLookupResult(data []byte) (*WorkspaceCheckpointLookupResult, error) {
	return Parse[WorkspaceCheckpointLookupResult](KindWorkspaceCheckpointLookupResult, WorkspaceCheckpointLookupResultSchema, data)
}

// WorkspaceCheckpointResultMatchesRequest reports whether res delivers the
// checkpoint req asked for, so the caller may use it: both valid, status
// created or replayed, the answer and the checkpoint repeat the request's
// key and digest, and the checkpoint has the request's exact source run,
// its metadata (both absent or canonically equal) and the source's
// provider. Conflicts and unknown outcomes never match.
func WorkspaceCheckpointResultMatchesRequest(req *WorkspaceCheckpointRequest, res *WorkspaceCheckpointResult) bool {
	if req == nil || res == nil || res.Status != BranchingCreated && res.Status != BranchingReplayed {
		return false
	}
	if _, err := Validate(KindWorkspaceCheckpointRequest, WorkspaceCheckpointRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindWorkspaceCheckpointResult, WorkspaceCheckpointResultSchema, res); err != nil {
		return false
	}
	return brCheckpointDelivers(req, res.IdempotencyKey, res.RequestDigest, res.Checkpoint)
}

// WorkspaceCheckpointLookupResultMatchesRequest is
// WorkspaceCheckpointResultMatchesRequest for a lookup answer: only found
// matches, on the same terms. It is how a caller that restarted after
// sending req recovers the checkpoint made remotely.
func WorkspaceCheckpointLookupResultMatchesRequest(req *WorkspaceCheckpointRequest, res *WorkspaceCheckpointLookupResult) bool {
	if req == nil || res == nil || res.Status != BranchingFound {
		return false
	}
	if _, err := Validate(KindWorkspaceCheckpointRequest, WorkspaceCheckpointRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindWorkspaceCheckpointLookupResult, WorkspaceCheckpointLookupResultSchema, res); err != nil {
		return false
	}
	return brCheckpointDelivers(req, res.IdempotencyKey, res.RequestDigest, res.Checkpoint)
}

func brCheckpointDelivers(req *WorkspaceCheckpointRequest, key, digest string, cp *WorkspaceCheckpointRef) bool {
	return cp != nil &&
		key == req.IdempotencyKey && digest == req.RequestDigest &&
		cp.IdempotencyKey == req.IdempotencyKey && cp.RequestDigest == req.RequestDigest &&
		brSameWire(cp.Source, req.Source) &&
		brSameOptionalMetadata(cp.Metadata, req.Metadata) &&
		cp.Provider == req.Source.Provider
}
