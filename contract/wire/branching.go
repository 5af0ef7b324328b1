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
