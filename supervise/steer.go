package supervise

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
)

// SteerSourceCoordination is the source of a steer the manager's brain
// sent in process (steer_agent), as its journal records name it.
const SteerSourceCoordination = "steer_agent"

// steerOperationID is the operation id of an in-process steer_agent
// call. A call of the manager's tool loop (kernel.ToolCallID) gets
// "steer_agent-" and a digest of the run, the manager's node and the call
// id: the same for the call a resumed manager runs again (its result was
// not journaled), so that call finds what the first run of it did. A
// call without one (an external harness's, over MCP) is counted,
// "steer_agent-<n>", past the numbers the journal holds (an earlier
// process's).
func (c *Coordinator) steerOperationID(ctx context.Context) (string, bool) {
	if id := kernel.ToolCallID(ctx); id != "" {
		sum := sha256.Sum256([]byte(c.runID + "\x00" + string(c.self) + "\x00" + id))
		return SteerSourceCoordination + "-" + hex.EncodeToString(sum[:16]), true
	}
	for {
		c.mu.Lock()
		c.steers++
		n := c.steers
		c.mu.Unlock()
		op := SteerSourceCoordination + "-" + strconv.Itoa(n)
		if _, _, taken := c.journaledSteer(op); !taken {
			return op, false
		}
	}
}

// steerRequested journals an in-process steer_agent call the way a
// cross-process steer file is journaled (steer-requested, Data a
// SteerRequest): one journal holds every steer, whichever channel it
// came by, under operation id op (steerOperationID's). A request the
// journal already holds under op (a root steer's call run again) is
// returned as journaled, not journaled twice.
func (c *Coordinator) steerRequested(ctx context.Context, a SteerArgs, op string) SteerRequest {
	req := SteerRequest{SchemaVersion: steerSchemaVersion, OperationID: op,
		At: c.now().UnixMilli(), Source: SteerSourceCoordination, Worker: string(a.WorkerID), Message: a.Instruction, Interrupt: a.Interrupt}
	if d, err := steerDigest(req); err == nil {
		req.RequestDigest = d
	}
	if prior, _, ok := c.journaledSteer(op); ok {
		return prior // journaled by the first run of the call
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

// journaledSteer finds the in-process steer op in the run's journal
// (earlier processes' records included): its request, and its
// acknowledgement when one was journaled.
func (c *Coordinator) journaledSteer(op string) (SteerRequest, *SteerAck, bool) {
	return c.log.journaledSteer(op)
}

// steerIndex holds the in-process steers of a run's journal by
// operation id, folded from its rows in order: upTo rows are folded, so
// each row is read once however many steers look their op up.
type steerIndex struct {
	upTo int
	byOp map[string]*journaledSteerOp
}

// journaledSteerOp is an op's first journaled request and the last
// acknowledgement journaled after it.
type journaledSteerOp struct {
	req SteerRequest
	ack *SteerAck
}

// journaledSteer is Coordinator.journaledSteer over l's rows: the rows
// appended since the last lookup are folded into l.steers first.
func (l *runLog) journaledSteer(op string) (SteerRequest, *SteerAck, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.steers.byOp == nil {
		l.steers.byOp = map[string]*journaledSteerOp{}
	}
	for ; l.steers.upTo < l.rows.len(); l.steers.upTo++ {
		r := l.rows.at(l.steers.upTo)
		l.steerRowsRead++
		switch r.Kind {
		case KindSteerRequested:
			var v SteerRequest
			if canonjson.FromValue(r.Data, &v) == nil && v.Source == SteerSourceCoordination && l.steers.byOp[v.OperationID] == nil {
				l.steers.byOp[v.OperationID] = &journaledSteerOp{req: v}
			}
		case KindSteerAcknowledged:
			var v SteerAck
			if canonjson.FromValue(r.Data, &v) == nil {
				if e := l.steers.byOp[v.OperationID]; e != nil {
					e.ack = &v
				}
			}
		}
	}
	e := l.steers.byOp[op]
	if e == nil {
		return SteerRequest{}, nil, false
	}
	return e.req, e.ack, true
}

// replayedSteer answers a steer_agent call a resumed manager runs again
// whose steer an earlier run of the same call already requested to a
// worker: the journaled outcome, or unknown when the process ended
// before its outcome was journaled — the steer is never delivered twice
// (at most once, as a claimed steer file is never retried).
func (c *Coordinator) replayedSteer(ctx context.Context, req SteerRequest, ack *SteerAck) SteerResult {
	if ack != nil {
		return SteerResult{Delivered: ack.Effect == SteerDelivered, Outcome: string(ack.Effect), Reason: ack.Detail, Replayed: true}
	}
	res := SteerResult{Outcome: string(SteerUnknown), Reason: "the process that requested the steer ended before its outcome was journaled", Replayed: true}
	c.steerAcknowledged(ctx, req, res)
	return res
}

// reofferedSteer answers a steer_agent call a resumed manager runs again
// whose steer, to a manager, an earlier run of the call requested and
// no process acknowledged: the resumed run re-offered it to that manager
// (reofferSteers), which journals its acknowledgement; the call sends
// nothing and journals none.
func reofferedSteer() SteerResult {
	return SteerResult{Outcome: string(SteerUnknown), Replayed: true,
		Reason: "the process that requested the steer ended before its outcome was known; the resumed run re-offered it to the manager"}
}

// reoffersSteers reports whether id is a nested manager this process
// drives with an inbox: one driven again on resume is re-offered the
// steers to it no process acknowledged (runManager, reofferSteers).
func (c *Coordinator) reoffersSteers(id NodeID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.workers[id]
	return w != nil && w.runtime == RuntimeManager && w.inbox != nil
}
