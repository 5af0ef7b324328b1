package contract

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Statuses of durable workspace operations (checkpoint and fork, and their
// lookups). Treat the set as open: an unknown status in a response is a
// reason to fail closed.
const (
	// BranchingCreated: the operation ran now and made the resource.
	BranchingCreated = "created"
	// BranchingReplayed: the same key and digest ran before; the original
	// resource is returned.
	BranchingReplayed = "replayed"
	// BranchingFound: a lookup recovered the resource of an earlier
	// operation with this key and digest.
	BranchingFound = "found"
	// BranchingNotFound: a lookup found no operation with this key.
	BranchingNotFound = "not_found"
	// BranchingConflict: the key is held by a different request, named by
	// ExistingRequestDigest.
	BranchingConflict = "conflict"
	// BranchingUnknown: the outcome is not known; Message explains and
	// Retryable says whether sending the same request again is safe.
	BranchingUnknown = "unknown"
)

// ErrBranchingMaterial is wrapped by digest functions whose operation
// material exceeds the contract bounds or has no canonical form.
var ErrBranchingMaterial = errors.New("operation material exceeds the contract bounds")

// ErrOutOfScope is wrapped by a source-scoped handle's refusal of a
// resource outside its source scope (a checkpoint, fork or source of
// another environment or provider; spec provider.md, durable branching:
// "it rejects resources outside its source scope"). The refusal is final:
// the same request through the same handle is refused again.
var ErrOutOfScope = errors.New("the request is outside the handle's source scope")

// PlacementInfo is a requested placement: where an environment should run,
// with optional provider-specific metadata. A fork's placement is part of
// its operation identity.
type PlacementInfo struct {
	Kind             string                     `json:"kind"`
	SandboxID        *string                    `json:"sandboxId,omitzero"`
	FleetID          *string                    `json:"fleetId,omitzero"`
	MachineID        *string                    `json:"machineId,omitzero"`
	Region           *string                    `json:"region,omitzero"`
	ProviderMetadata map[string]canonjson.Value `json:"providerMetadata,omitzero"`
}

// WorkspaceOperationLookupRequest asks a provider to recover a durable
// operation by its key; the digest lets it answer conflict when the key was
// used for different input.
type WorkspaceOperationLookupRequest struct {
	IdempotencyKey string `json:"idempotencyKey"`
	RequestDigest  string `json:"requestDigest"`
}

// KindWorkspaceOperationLookupRequest names the lookup request (no
// reference vectors).
const KindWorkspaceOperationLookupRequest = "WorkspaceOperationLookupRequest"

var (
	// PlacementInfoSchema is the strict PlacementInfo shape.
	PlacementInfoSchema = schema.Object(
		schema.Req("kind", schema.Enum("local", "sandbox", "fleet", "provider")),
		schema.Opt("sandboxId", BoundedIdentifier),
		schema.Opt("fleetId", BoundedIdentifier),
		schema.Opt("machineId", BoundedIdentifier),
		schema.Opt("region", BoundedIdentifier),
		schema.Opt("providerMetadata", BoundedJSONRecord),
	)

	// WorkspaceOperationLookupRequestSchema is the strict lookup request
	// shape.
	WorkspaceOperationLookupRequestSchema = schema.Object(brOperationIdentity...)

	// brOperationIdentity are the two fields that identify one durable
	// workspace operation; every result and lookup answer carries them.
	brOperationIdentity = []schema.Field{
		schema.Req("idempotencyKey", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
	}
)

// ParseWorkspaceOperationLookupRequest decodes and validates a lookup
// request.
func ParseWorkspaceOperationLookupRequest(data []byte) (*WorkspaceOperationLookupRequest, error) {
	return Parse[WorkspaceOperationLookupRequest](KindWorkspaceOperationLookupRequest, WorkspaceOperationLookupRequestSchema, data)
}

// brFields returns identity followed by more: the field list of one
// answer shape.
func brFields(more ...schema.Field) []schema.Field {
	return append(append([]schema.Field(nil), brOperationIdentity...), more...)
}

// brWireDigest is the digest of operation material: the material must be
// within the contract bounds (as digest input: every node counted once),
// serialize to at most MaxJSONBytes, and have a canonical form.
func brWireDigest(x any) (string, error) {
	v, ok := x.(canonjson.Value)
	if !ok {
		var err error
		if v, err = canonjson.ToValue(x); err != nil {
			return "", fmt.Errorf("%w: %w", ErrBranchingMaterial, err)
		}
	}
	nodes := 0
	if !brBoundedMaterial(v, 0, &nodes) {
		return "", ErrBranchingMaterial
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return "", fmt.Errorf("%w: %w: %w", ErrBranchingMaterial, ErrNotCanonical, err)
	}
	if len(b) > MaxJSONBytes {
		return "", fmt.Errorf("%w: serialized material exceeds %d bytes", ErrBranchingMaterial, MaxJSONBytes)
	}
	return canonjson.DigestBytes(b), nil
}

// brBoundedMaterial is IsBoundedJSON for digest input: the same limits,
// but a container counts once toward MaxJSONNodes.
func brBoundedMaterial(v canonjson.Value, depth int, nodes *int) bool {
	*nodes++
	if *nodes > MaxJSONNodes {
		return false
	}
	switch v.Kind() {
	case canonjson.Null, canonjson.Bool:
		return true
	case canonjson.String:
		return canonjson.UTF16Len(v.Str()) <= MaxStringLength
	case canonjson.Number:
		return canonjson.IsFinite(v.Float())
	case canonjson.Array:
		if depth >= MaxJSONDepth || v.Len() > MaxArrayLength {
			return false
		}
		for _, item := range v.Items() {
			if !brBoundedMaterial(item, depth+1, nodes) {
				return false
			}
		}
		return true
	case canonjson.Object:
		if depth >= MaxJSONDepth || v.Len() > MaxMapEntries {
			return false
		}
		for _, m := range v.Members() {
			if canonjson.UTF16Len(m.Name) > MaxIdentifierLength || !brBoundedMaterial(m.Value, depth+1, nodes) {
				return false
			}
		}
		return true
	}
	return false
}

// brSameWire reports whether a and b have the same canonical form. Values
// without one (out of bounds, lone surrogates) are never the same.
func brSameWire(a, b any) bool {
	da, err := brWireDigest(a)
	if err != nil {
		return false
	}
	db, err := brWireDigest(b)
	return err == nil && da == db
}

// brSameOptionalMetadata reports whether two optional records are both
// absent or both present with the same canonical form.
func brSameOptionalMetadata(a, b map[string]canonjson.Value) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return brSameWire(a, b)
}

// brMaterialDigest validates material (a request without its own key and
// digest members) and returns its wire digest.
func brMaterialDigest(kind string, node schema.Node, material canonjson.Value) (string, error) {
	out, err := schema.Run(kind, node, material)
	if err != nil {
		return "", err
	}
	return brWireDigest(out)
}

// brCheckRequestDigest is a refinement: the request's requestDigest must be
// the digest of its material, which is the request without the members
// named in drop. Material that fails its schema or cannot be digested
// refuses the whole request (the reference throws there).
func brCheckRequestDigest(kind string, material schema.Node, message string, drop ...string) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		m := v
		for _, name := range drop {
			m = withoutMember(m, name)
		}
		want, err := brMaterialDigest(kind, material, m)
		if err != nil {
			c.Custom("the operation material is invalid or exceeds the contract bounds, so its digest cannot be computed")
			return
		}
		if str(v, "requestDigest") != want {
			c.Custom(message, "requestDigest")
		}
	}
}

// brCheckIdentity is a refinement of operation answers: the resource named
// by member (when present) must repeat the answer's key and digest, and a
// conflict must name a different request.
func brCheckIdentity(member, message string) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		if r, ok := v.Get(member); ok && !brSameIdentity(v, r) {
			c.Custom(message, member)
		}
		brRefuseSelfConflict(c, v)
	}
}

// brSameIdentity reports whether resource repeats the idempotency key and
// request digest of operation.
func brSameIdentity(operation, resource canonjson.Value) bool {
	return str(resource, "idempotencyKey") == str(operation, "idempotencyKey") &&
		str(resource, "requestDigest") == str(operation, "requestDigest")
}

// brRefuseSelfConflict refuses a conflict that names its own request: that
// is a replay, and a caller would retry a request already accepted.
func brRefuseSelfConflict(c *schema.Context, v canonjson.Value) {
	existing, ok := v.Get("existingRequestDigest")
	if str(v, "status") == BranchingConflict && ok && existing.Str() == str(v, "requestDigest") {
		c.Custom("a conflict must identify a different existing request", "existingRequestDigest")
	}
}

// brAnswer builds the discriminated shape of an operation answer: the
// statuses in resourceStatuses carry the resource under member, conflict
// carries the existing digest, unknown a message and retryability, and
// notFound (when set) nothing more.
func brAnswer(member string, resource schema.Node, notFound bool, resourceStatuses ...string) map[string]schema.Node {
	withResource := schema.Object(brFields(
		schema.Req("status", schema.Enum(resourceStatuses...)),
		schema.Req(member, resource))...)
	options := map[string]schema.Node{
		BranchingConflict: schema.Object(brFields(
			schema.Req("status", schema.LiteralString(BranchingConflict)),
			schema.Req("existingRequestDigest", Digest))...),
		BranchingUnknown: schema.Object(brFields(
			schema.Req("status", schema.LiteralString(BranchingUnknown)),
			schema.Req("message", obsReason),
			schema.Req("retryable", schema.Bool()))...),
	}
	for _, s := range resourceStatuses {
		options[s] = withResource
	}
	if notFound {
		options[BranchingNotFound] = schema.Object(brFields(schema.Req("status", schema.LiteralString(BranchingNotFound)))...)
	}
	return options
}
