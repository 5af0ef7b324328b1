package supervise

import (
	"context"
	"strconv"
)

// SteerSourceCoordination is the source of a steer the manager's brain
// sent in process (steer_agent), as its journal records name it.
const SteerSourceCoordination = "steer_agent"

// steerRequested journals an in-process steer_agent call the way a
// cross-process steer file is journaled (steer-requested, Data a
// SteerRequest): one journal holds every steer, whichever channel it
// came by. Its operation id is "steer_agent-<n>", counted per process.
func (c *Coordinator) steerRequested(ctx context.Context, a SteerArgs) SteerRequest {
	c.mu.Lock()
	c.steers++
	n := c.steers
	c.mu.Unlock()
	req := SteerRequest{SchemaVersion: steerSchemaVersion, OperationID: SteerSourceCoordination + "-" + strconv.Itoa(n),
		At: c.now().UnixMilli(), Source: SteerSourceCoordination, Worker: string(a.WorkerID), Message: a.Instruction, Interrupt: a.Interrupt}
	if d, err := steerDigest(req); err == nil {
		req.RequestDigest = d
	}
	c.journalControl(ctx, KindSteerRequested, a.WorkerID, req)
	return req
}

// steerAcknowledged journals the outcome of an in-process steer as a
// steer-acknowledged record (Data a SteerAck).
func (c *Coordinator) steerAcknowledged(ctx context.Context, req SteerRequest, res SteerResult) {
	ack := SteerAck{OperationID: req.OperationID, RequestDigest: req.RequestDigest, Worker: req.Worker, Effect: SteerEffect(res.Outcome),
		RequestedAt: req.At, ObservedAt: c.now().UnixMilli(), Detail: res.Reason}
	c.journalControl(ctx, KindSteerAcknowledged, NodeID(req.Worker), ack)
}
