package contract

import (
	"context"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of workspace cleanup.
const (
	KindWorkspaceCleanupRequest         = "WorkspaceCleanupRequest"
	KindWorkspaceCleanupAcknowledgement = "WorkspaceCleanupAcknowledgement"
)

// Cleanup kinds. Checkpoints and forked environments are separate
// resources with separate destroy authority, so every cleanup names the
// kind it addresses and its acknowledgement echoes it: a swapped target
// cannot destroy a resource of the other kind.
const (
	WorkspaceCleanupCheckpoint = "checkpoint"
	WorkspaceCleanupFork       = "fork"
)

// Cleanup statuses. Only deleted and already_absent confirm a cleanup.
const (
	// WorkspaceCleanupDeleted: the target was deleted now.
	WorkspaceCleanupDeleted = "deleted"
	// WorkspaceCleanupAlreadyAbsent: the target was already gone (a
	// repeated cleanup).
	WorkspaceCleanupAlreadyAbsent = "already_absent"
	// WorkspaceCleanupUnknown: the outcome is not known; it carries a
	// message and retryability.
	WorkspaceCleanupUnknown = "unknown"
	// WorkspaceCleanupInUse: the target has dependents (a checkpoint with
	// live forks); nothing was deleted, and BlockingTargetIDs lists every
	// known blocker. A provider whose forks hold their own copy of the
	// checkpoint deletes it instead.
	WorkspaceCleanupInUse = "in_use"
	// WorkspaceCleanupConflict: the operation id is held by a cleanup of a
	// different target, named by ExistingRequestDigest.
	WorkspaceCleanupConflict = "conflict"
	// WorkspaceCleanupTransportFailure: the provider could not be reached
	// reliably; it carries a message and retryability.
	WorkspaceCleanupTransportFailure = "transport_failure"
)

// WorkspaceCleanupMaterial is the exact resource a cleanup addresses: its
// kind, its id and its provider.
type WorkspaceCleanupMaterial struct {
	Kind     string `json:"kind"`
	TargetID string `json:"targetId"`
	Provider string `json:"provider"`
}

// WorkspaceCleanupRequest asks a provider to delete a checkpoint or
// destroy a forked environment. The operation id is itself an idempotency
// key; the request digest binds it to the exact target.
type WorkspaceCleanupRequest struct {
	OperationID string `json:"operationId"`
	WorkspaceCleanupMaterial
	RequestDigest string `json:"requestDigest"`
}

// WorkspaceCleanupAcknowledgement answers a cleanup request. It repeats
// the request's operation id, target and digest (which must recompute
// from its own kind, target and provider). Unknown, in_use, conflict and
// transport_failure carry a message; unknown and transport_failure say
// whether a retry is safe; only in_use lists blocking targets (unique, at
// least one); only conflict names the existing, different request digest.
type WorkspaceCleanupAcknowledgement struct {
	OperationID string `json:"operationId"`
	WorkspaceCleanupMaterial
	RequestDigest         string   `json:"requestDigest"`
	Status                string   `json:"status"`
	ExistingRequestDigest *string  `json:"existingRequestDigest,omitzero"`
	Message               *string  `json:"message,omitzero"`
	Retryable             *bool    `json:"retryable,omitzero"`
	BlockingTargetIDs     []string `json:"blockingTargetIds,omitzero"`
}

var (
	brCleanupMaterialFields = []schema.Field{
		schema.Req("kind", schema.Enum(WorkspaceCleanupCheckpoint, WorkspaceCleanupFork)),
		schema.Req("targetId", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
	}
	brCleanupMaterialSchema = schema.Object(brCleanupMaterialFields...)

	// brCleanupDigestMembers are the members that are not cleanup
	// material, in either a request or an acknowledgement.
	brCleanupDigestMembers = []string{"operationId", "requestDigest", "status", "existingRequestDigest", "message", "retryable", "blockingTargetIds"}

	// WorkspaceCleanupRequestSchema is the strict WorkspaceCleanupRequest
	// shape; its requestDigest must be the digest of its target.
	WorkspaceCleanupRequestSchema = schema.Object(slices.Concat(
		[]schema.Field{schema.Req("operationId", BoundedIdentifier)},
		brCleanupMaterialFields,
		[]schema.Field{schema.Req("requestDigest", Digest)})...).
		Refine(brCheckRequestDigest(KindWorkspaceCleanupRequest, brCleanupMaterialSchema,
			"the cleanup request digest does not match its target", brCleanupDigestMembers...))

	// WorkspaceCleanupAcknowledgementSchema is the strict
	// WorkspaceCleanupAcknowledgement shape with its status rules.
	WorkspaceCleanupAcknowledgementSchema = schema.Object(slices.Concat(
		[]schema.Field{schema.Req("operationId", BoundedIdentifier)},
		brCleanupMaterialFields,
		[]schema.Field{
			schema.Req("requestDigest", Digest),
			schema.Req("status", schema.Enum(WorkspaceCleanupDeleted, WorkspaceCleanupAlreadyAbsent, WorkspaceCleanupUnknown,
				WorkspaceCleanupInUse, WorkspaceCleanupConflict, WorkspaceCleanupTransportFailure)),
			schema.Opt("existingRequestDigest", Digest),
			schema.Opt("message", obsReason),
			schema.Opt("retryable", schema.Bool()),
			schema.Opt("blockingTargetIds", schema.Array(BoundedIdentifier).MinItems(1).MaxItems(MaxArrayLength)),
		})...).
		Refine(brCheckCleanupAcknowledgement).
		Refine(brCheckRequestDigest(KindWorkspaceCleanupAcknowledgement, brCleanupMaterialSchema,
			"the cleanup acknowledgement digest does not match its target", brCleanupDigestMembers...))
)

func brCheckCleanupAcknowledgement(c *schema.Context, v canonjson.Value) {
	status := str(v, "status")
	_, hasMessage := v.Get("message")
	_, hasRetryable := v.Get("retryable")
	existing, hasExisting := v.Get("existingRequestDigest")
	blocking, hasBlocking := v.Get("blockingTargetIds")
	switch status {
	case WorkspaceCleanupUnknown, WorkspaceCleanupInUse, WorkspaceCleanupConflict, WorkspaceCleanupTransportFailure:
		if !hasMessage {
			c.Custom(status+" cleanup must include a message", "message")
		}
	}
	if status == WorkspaceCleanupInUse && !hasBlocking {
		c.Custom("in_use cleanup must identify every known blocking target", "blockingTargetIds")
	}
	if status != WorkspaceCleanupInUse && hasBlocking {
		c.Custom("only in_use cleanup may identify blocking targets", "blockingTargetIds")
	}
	if hasBlocking {
		seen := make(map[string]bool, blocking.Len())
		for _, id := range blocking.Items() {
			if seen[id.Str()] {
				c.Custom("blocking cleanup target ids must be unique", "blockingTargetIds")
				break
			}
			seen[id.Str()] = true
		}
	}
	if (status == WorkspaceCleanupUnknown || status == WorkspaceCleanupTransportFailure) && !hasRetryable {
		c.Custom(status+" cleanup must state whether retry is safe", "retryable")
	}
	if status == WorkspaceCleanupConflict && !hasExisting {
		c.Custom("a cleanup conflict must include the existing digest", "existingRequestDigest")
	}
	if status == WorkspaceCleanupConflict && hasExisting && existing.Str() == str(v, "requestDigest") {
		c.Custom("a cleanup conflict must identify a different request", "existingRequestDigest")
	}
	if status != WorkspaceCleanupConflict && hasExisting {
		c.Custom("only a cleanup conflict may include an existing digest", "existingRequestDigest")
	}
}

// WorkspaceCleanupRequestDigest returns the digest of a valid cleanup
// target.
func WorkspaceCleanupRequestDigest(m WorkspaceCleanupMaterial) (string, error) {
	v, err := canonjson.ToValue(m)
	if err != nil {
		return "", err
	}
	return brMaterialDigest(KindWorkspaceCleanupRequest, brCleanupMaterialSchema, v)
}

// NewWorkspaceCleanupRequest builds a cleanup request with its digest.
func NewWorkspaceCleanupRequest(operationID string, m WorkspaceCleanupMaterial) (*WorkspaceCleanupRequest, error) {
	digest, err := WorkspaceCleanupRequestDigest(m)
	if err != nil {
		return nil, err
	}
	r := &WorkspaceCleanupRequest{OperationID: operationID, WorkspaceCleanupMaterial: m, RequestDigest: digest}
	if _, err := Validate(KindWorkspaceCleanupRequest, WorkspaceCleanupRequestSchema, r); err != nil {
		return nil, err
	}
	return r, nil
}

// ParseWorkspaceCleanupRequest decodes and validates a cleanup request,
// digest included.
func ParseWorkspaceCleanupRequest(data []byte) (*WorkspaceCleanupRequest, error) {
	return Parse[WorkspaceCleanupRequest](KindWorkspaceCleanupRequest, WorkspaceCleanupRequestSchema, data)
}

// ParseWorkspaceCleanupAcknowledgement decodes and validates a cleanup
// acknowledgement.
func ParseWorkspaceCleanupAcknowledgement(data []byte) (*WorkspaceCleanupAcknowledgement, error) {
	return Parse[WorkspaceCleanupAcknowledgement](KindWorkspaceCleanupAcknowledgement, WorkspaceCleanupAcknowledgementSchema, data)
}

// WorkspaceCleanupAcknowledgementMatches reports whether ack confirms
// exactly the cleanup req asked for: both valid, status deleted or
// already_absent, and the same operation id, kind, target, provider and
// request digest. Any other status, or an acknowledgement of another
// target or kind, is not a confirmation.
func WorkspaceCleanupAcknowledgementMatches(req *WorkspaceCleanupRequest, ack *WorkspaceCleanupAcknowledgement) bool {
	if req == nil || ack == nil || ack.Status != WorkspaceCleanupDeleted && ack.Status != WorkspaceCleanupAlreadyAbsent {
		return false
	}
	if _, err := Validate(KindWorkspaceCleanupRequest, WorkspaceCleanupRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindWorkspaceCleanupAcknowledgement, WorkspaceCleanupAcknowledgementSchema, ack); err != nil {
		return false
	}
	return ack.OperationID == req.OperationID && ack.WorkspaceCleanupMaterial == req.WorkspaceCleanupMaterial &&
		ack.RequestDigest == req.RequestDigest
}

// Blocking reports the targets an in_use acknowledgement lists, or nil.
func (a *WorkspaceCleanupAcknowledgement) Blocking() []string {
	if a == nil || a.Status != WorkspaceCleanupInUse {
		return nil
	}
	return slices.Clone(a.BlockingTargetIDs)
}

// WorkspaceBranching is the durable workspace branching facet of a
// provider that supports recoverable workspace copies (it declares
// branching.retrySafe, branching.lookup and branching.cleanup together).
// Every operation is keyed and digest-bound: repeating a request returns
// the original resource (replayed); reusing a key with changed input
// returns conflict with the original digest; lookups recover a remote
// success after the caller restarts; results are bound to requests with
// the matchers of this package before use. Deleting a checkpoint with
// dependent forks returns in_use listing the blocking fork environment
// ids and deletes nothing, and the checkpoint stays recoverable until the
// forks are destroyed, unless the provider's forks hold their own copy,
// in which case it deletes the checkpoint without waiting. Repeating a
// cleanup returns already_absent, and lookups after cleanup return
// not_found. Durable outcomes are values; the error return is for
// refusals before any effect (invalid input, cancelled context).
type WorkspaceBranching interface {
	Checkpoint(ctx context.Context, req *WorkspaceCheckpointRequest) (*WorkspaceCheckpointResult, error)
	LookupCheckpoint(ctx context.Context, req WorkspaceOperationLookupRequest) (*WorkspaceCheckpointLookupResult, error)
	// DeleteCheckpoint takes a cleanup of kind checkpoint.
	DeleteCheckpoint(ctx context.Context, req *WorkspaceCleanupRequest) (*WorkspaceCleanupAcknowledgement, error)
	Fork(ctx context.Context, req *WorkspaceForkRequest) (*WorkspaceForkResult, error)
	LookupFork(ctx context.Context, req WorkspaceOperationLookupRequest) (*WorkspaceForkLookupResult, error)
	// DestroyFork takes a cleanup of kind fork.
	DestroyFork(ctx context.Context, req *WorkspaceCleanupRequest) (*WorkspaceCleanupAcknowledgement, error)
}
