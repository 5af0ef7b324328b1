package wire

import (
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Routes of legacy branching. Each is POST, served only when the
// capability document declares its ability (branching.checkpoint,
// branching.fork); otherwise refused with CodeUnsupported. A legacy
// checkpoint or fork has no idempotency of its own, so the body carries
// the client's OperationID: the server runs one effect per operation id
// and request, answers a re-send (after a lost answer) with the recorded
// outcome, and refuses another request under a used id with
// CodeIdempotencyConflict. The server runs the effect to its end even
// when the client goes away.
const (
	// RouteCheckpoint takes a legacy checkpoint (CheckpointCall),
	// answered with the provider's contract.CheckpointRef.
	RouteCheckpoint = "/v1/environments/{id}/checkpoints"
	// RouteFork forks a legacy checkpoint into a new environment
	// (ForkCall), answered with the fork's Environment.
	RouteFork = "/v1/environments/{id}/forks"
)

// CheckpointCall is a legacy checkpoint under the client's operation id.
type CheckpointCall struct {
	OperationID string                     `json:"operationId"`
	Request     contract.CheckpointRequest `json:"request"`
}

// ForkCall is a legacy fork of From under the client's operation id.
type ForkCall struct {
	OperationID string                 `json:"operationId"`
	From        contract.CheckpointRef `json:"from"`
	Request     contract.ForkRequest   `json:"request"`
}

// Kind names of the legacy branching bodies, for errors.
const (
	KindCheckpointCall = "SidecarCheckpointCall"
	KindForkCall       = "SidecarForkCall"
)

var (
	// CheckpointCallSchema is the strict CheckpointCall shape.
	CheckpointCallSchema = schema.Object(
		schema.Req("operationId", contract.BoundedIdentifier),
		schema.Req("request", contract.CheckpointRequestSchema))
	// ForkCallSchema is the strict ForkCall shape.
	ForkCallSchema = schema.Object(
		schema.Req("operationId", contract.BoundedIdentifier),
		schema.Req("from", contract.CheckpointRefSchema),
		schema.Req("request", contract.ForkRequestSchema))
)

// ParseCheckpointCall decodes a legacy checkpoint body.
func ParseCheckpointCall(data []byte) (*CheckpointCall, error) {
	return parse[CheckpointCall](KindCheckpointCall, CheckpointCallSchema, data)
}

// ParseForkCall decodes a legacy fork body.
func ParseForkCall(data []byte) (*ForkCall, error) {
	return parse[ForkCall](KindForkCall, ForkCallSchema, data)
}

// ParseCheckpointRef decodes a legacy checkpoint answer.
func ParseCheckpointRef(data []byte) (*contract.CheckpointRef, error) {
	return parse[contract.CheckpointRef](contract.KindCheckpointRef, contract.CheckpointRefSchema, data)
}

// Routes of durable workspace branching (branching.retrySafe, lookup and
// cleanup together), scoped to the source environment {id}. Each is POST
// with the contract's request as its body and the provider's answer as
// the contract's result, served only when the document declares durable
// branching; otherwise refused with CodeUnsupported, and with
// CodeNotFound when the provider knows no such source environment. Every
// effect carries its own idempotency (a checkpoint's or fork's key and
// digest, a cleanup's operation id and digest), so a client re-sends it
// after a lost answer and is answered replayed; the server runs each
// effect to its end even when the client goes away. A lookup has no
// effect.
const (
	// RouteBranchingCheckpoint: contract.WorkspaceCheckpointRequest →
	// contract.WorkspaceCheckpointResult.
	RouteBranchingCheckpoint = "/v1/environments/{id}/branching/checkpoint"
	// RouteBranchingCheckpointLookup:
	// contract.WorkspaceOperationLookupRequest →
	// contract.WorkspaceCheckpointLookupResult.
	RouteBranchingCheckpointLookup = "/v1/environments/{id}/branching/checkpoint-lookup"
	// RouteBranchingCheckpointDelete: contract.WorkspaceCleanupRequest
	// (kind checkpoint) → contract.WorkspaceCleanupAcknowledgement.
	RouteBranchingCheckpointDelete = "/v1/environments/{id}/branching/checkpoint-delete"
	// RouteBranchingFork: contract.WorkspaceForkRequest →
	// contract.WorkspaceForkResult.
	RouteBranchingFork = "/v1/environments/{id}/branching/fork"
	// RouteBranchingForkLookup: contract.WorkspaceOperationLookupRequest
	// → contract.WorkspaceForkLookupResult.
	RouteBranchingForkLookup = "/v1/environments/{id}/branching/fork-lookup"
	// RouteBranchingForkDestroy: contract.WorkspaceCleanupRequest (kind
	// fork) → contract.WorkspaceCleanupAcknowledgement.
	RouteBranchingForkDestroy = "/v1/environments/{id}/branching/fork-destroy"
)

// ParseWorkspaceCheckpointRequest decodes a durable checkpoint body.
func ParseWorkspaceCheckpointRequest(data []byte) (*contract.WorkspaceCheckpointRequest, error) {
	return parse[contract.WorkspaceCheckpointRequest](contract.KindWorkspaceCheckpointRequest, contract.WorkspaceCheckpointRequestSchema, data)
}

// ParseWorkspaceCheckpointResult decodes a durable checkpoint answer.
func ParseWorkspaceCheckpointResult(data []byte) (*contract.WorkspaceCheckpointResult, error) {
	return parse[contract.WorkspaceCheckpointResult](contract.KindWorkspaceCheckpointResult, contract.WorkspaceCheckpointResultSchema, data)
}

// ParseWorkspaceCheckpointLookupResult decodes a checkpoint lookup answer.
func ParseWorkspaceCheckpointLookupResult(data []byte) (*contract.WorkspaceCheckpointLookupResult, error) {
	return parse[contract.WorkspaceCheckpointLookupResult](contract.KindWorkspaceCheckpointLookupResult, contract.WorkspaceCheckpointLookupResultSchema, data)
}

// ParseWorkspaceForkRequest decodes a durable fork body.
func ParseWorkspaceForkRequest(data []byte) (*contract.WorkspaceForkRequest, error) {
	return parse[contract.WorkspaceForkRequest](contract.KindWorkspaceForkRequest, contract.WorkspaceForkRequestSchema, data)
}

// ParseWorkspaceForkResult decodes a durable fork answer.
func ParseWorkspaceForkResult(data []byte) (*contract.WorkspaceForkResult, error) {
	return parse[contract.WorkspaceForkResult](contract.KindWorkspaceForkResult, contract.WorkspaceForkResultSchema, data)
}

// ParseWorkspaceForkLookupResult decodes a fork lookup answer.
func ParseWorkspaceForkLookupResult(data []byte) (*contract.WorkspaceForkLookupResult, error) {
	return parse[contract.WorkspaceForkLookupResult](contract.KindWorkspaceForkLookupResult, contract.WorkspaceForkLookupResultSchema, data)
}

// ParseWorkspaceOperationLookupRequest decodes a lookup body.
func ParseWorkspaceOperationLookupRequest(data []byte) (*contract.WorkspaceOperationLookupRequest, error) {
	return parse[contract.WorkspaceOperationLookupRequest](contract.KindWorkspaceOperationLookupRequest, contract.WorkspaceOperationLookupRequestSchema, data)
}

// ParseWorkspaceCleanupRequest decodes a cleanup body.
func ParseWorkspaceCleanupRequest(data []byte) (*contract.WorkspaceCleanupRequest, error) {
	return parse[contract.WorkspaceCleanupRequest](contract.KindWorkspaceCleanupRequest, contract.WorkspaceCleanupRequestSchema, data)
}

// ParseWorkspaceCleanupAcknowledgement decodes a cleanup answer.
func ParseWorkspaceCleanupAcknowledgement(data []byte) (*contract.WorkspaceCleanupAcknowledgement, error) {
	return parse[contract.WorkspaceCleanupAcknowledgement](contract.KindWorkspaceCleanupAcknowledgement, contract.WorkspaceCleanupAcknowledgementSchema, data)
}
