package supervise

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
)

// Root steer (§3.6 "Steering"): a steer whose worker is the run id is
// addressed to the manager itself. A brain that reads an inbox
// (InboxReader) takes such steers without interrupting a running model
// call: the router brain between its turns, before its next model call;
// the external-harness brain (coordmcp.HarnessBrain) with the result of
// the harness's next coordination tool call (Inbox.TakeAtMost; a steer
// ends an await_event wait, Inbox.Waiting), sealing the inbox when the
// harness's turn ends. Any other brain — a
// caller-owned Brain that does not opt in — answers unsupported, and a
// steer that arrives after the brain's last turn is not_live.
//
// Delivered means durable in the receiver's journaled transcript (§3.6;
// issue 13). The router brain's turn takes a steer provisionally
// (Inbox.hold): the checkpoint that journals the user message holding
// it (TranscriptMessage.Took names it, TakenSteer) acknowledges it
// delivered, and a loop that ends before that gives it back — to the
// next turn, or not_live once the inbox is sealed. A process killed in
// between acknowledged nothing: its resumed run re-offers every root
// steer the journal holds as requested but not acknowledged
// (reofferSteers) ahead of new ones, and acknowledges delivered,
// without queueing it again, one its journaled transcript already
// holds — so the resumed manager sees each steer exactly once. A nested
// manager's inbox is the same: driven again on resume (runManager), it
// is re-offered the steers to its node an earlier process requested and
// never acknowledged, by the same rule. The re-offer owns their
// acknowledgement: a steer_agent call run again that finds only its
// request journaled, to the root or to a nested manager driven again,
// answers unknown (replayed) without journaling an acknowledgement of
// its own, and never queues the steer again.
//
// A manager's own steer_agent to itself is refused self-steer: the call
// holds the turn (or the tool result) that would take it.

// ReadsInbox reports true: the router brain's tool loop takes the steers
// addressed to the run's root between its turns (Coordinator.ManagerInbox).
func (b *RouterBrain) ReadsInbox() bool { return true }

// ManagerInbox returns the inbox of the steers addressed to the run's
// root (worker = the run id), or nil when the run's brain does not read
// one (it is not an InboxReader). A brain that reads it takes what it
// holds between its turns (Inbox.Take) and, on its last one,
// Inbox.TakeOrSeal; a steer is acknowledged delivered when a turn takes
// it (the router brain's: once its journaled transcript holds it).
// Supervise seals it when the brain returns.
func (c *Coordinator) ManagerInbox() *Inbox {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rootInbox
}

// openManagerInbox gives the run's root an inbox when brain reads one.
func (c *Coordinator) openManagerInbox(brain Brain) {
	r, ok := brain.(InboxReader)
	if !ok || !r.ReadsInbox() {
		return
	}
	in := newInbox(c.scope.Root(), c.log.dir, c.now, c.logger)
	in.manager = true
	in.continueSeq(context.Background())
	c.mu.Lock()
	c.rootInbox = in
	c.mu.Unlock()
	c.reofferSteers(context.Background(), in)
}

// reofferSteers gives the manager c serves — a resumed run's root, or a
// nested manager driven again — the steers to its node an earlier
// process (not this one: its own are answered where they were sent)
// accepted (journaled steer-requested before it queued them) but
// never acknowledged: that process ended before a journaled transcript
// held them, so none was delivered. Each is queued in its inbox in again
// ahead of any new steer and acknowledged (journal, and the run dir's
// acknowledgement file for a cross-process request) once its outcome is
// known. One the manager's journaled transcript already holds (its user
// message's Took names it) was delivered: it is acknowledged so, never
// queued again.
func (c *Coordinator) reofferSteers(ctx context.Context, in *Inbox) {
	var open []SteerRequest
	acked := map[string]bool{}
	c.log.mu.Lock()
	for i := range c.log.rows.len() {
		r := c.log.rows.at(i)
		if r.Node != c.self || (r.Kind != KindSteerRequested && r.Kind != KindSteerAcknowledged) {
			continue
		}
		if r.Kind == KindSteerAcknowledged {
			var a SteerAck
			if canonjson.FromValue(r.Data, &a) == nil {
				acked[a.OperationID] = true
			}
			continue
		}
		if i >= c.log.prior {
			continue // accepted by this process, which answers it
		}
		var q SteerRequest
		if canonjson.FromValue(r.Data, &q) == nil && q.OperationID != "" {
			open = append(open, q)
		}
	}
	c.log.mu.Unlock()
	open = slices.DeleteFunc(open, func(q SteerRequest) bool { return acked[q.OperationID] })
	if len(open) == 0 {
		return
	}
	_, took, _, err := c.recordedTranscript()
	if err != nil {
		c.logger.Error("supervise: reading the manager's transcript for its unacknowledged steers", "node", c.self, "err", err)
		return
	}
	held := map[string]bool{}
	for _, t := range took {
		if t.Kind == TakenSteer {
			held[t.OperationID] = true
		}
	}
	for _, q := range open {
		if acked[q.OperationID] {
			continue // a request journaled twice
		}
		acked[q.OperationID] = true
		if held[q.OperationID] {
			c.acknowledgeReoffered(ctx, q, SteerDelivered, "")
			continue
		}
		if q.Source != SteerSourceCoordination {
			// A cross-process request is re-offered only as the
			// earlier process checked it.
			if d, err := steerDigest(q); err != nil || d != q.RequestDigest {
				c.acknowledgeReoffered(ctx, q, SteerRefused, "the request digest does not match its body")
				continue
			}
		}
		// Authorized again: what an earlier process delivered is not
		// journaled narrowed, and this process's authority decides.
		msg, err := c.authorizeSteer(ctx, q, c.self)
		if err != nil {
			c.acknowledgeReoffered(ctx, q, SteerRefused, err.Error())
			continue
		}
		p, effect, why := in.enqueue(ctx, msg, q.OperationID)
		if p == nil {
			c.acknowledgeReoffered(ctx, q, effect, why)
			continue
		}
		c.reoffered.Add(1)
		go func() {
			defer c.reoffered.Done()
			effect, why := in.await(c.workCtx, p)
			effect, why = c.endedNotLive(effect, why, "the manager")
			c.acknowledgeReoffered(ctx, q, effect, why)
		}()
	}
}

// acknowledgeReoffered journals the outcome of a steer to c's manager
// an earlier process accepted and, for a cross-process request, replaces
// its acknowledgement file (the claim, unknown, that process left).
func (c *Coordinator) acknowledgeReoffered(ctx context.Context, q SteerRequest, effect SteerEffect, why string) {
	ack := SteerAck{OperationID: q.OperationID, RequestDigest: q.RequestDigest, Worker: q.Worker, Effect: effect,
		RequestedAt: q.At, ObservedAt: c.now().UnixMilli(), Detail: why}
	if q.Source != SteerSourceCoordination && c.ctl != nil {
		if err := writeReplace(filepath.Join(c.ctl.dir, SteerAcksDir, opHash(q.OperationID)+".json"), ack); err != nil {
			c.logger.Error("supervise: writing a steer acknowledgement", "op", q.OperationID, "err", err)
		}
	}
	c.journalControl(ctx, KindSteerAcknowledged, c.self, ack)
}

// closeManagerInbox seals the manager's inbox (the root's, or a nested
// manager's) once its brain returned: a steer still waiting, or arriving
// later, is not_live. It returns once every re-offered steer, and every
// in-process root steer (Steer) under way, is acknowledged.
func (c *Coordinator) closeManagerInbox(ctx context.Context) {
	c.ManagerInbox().close(context.WithoutCancel(ctx))
	c.reoffered.Wait() // each was resolved by the close, if not before
	c.rootSteers.closeAndWait()
}

// callGate counts calls under way until it is closed; closeAndWait
// closes it and waits for those that entered before. A call that
// enters (Add) always happens before the Wait, as sync.WaitGroup asks.
type callGate struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// enter counts a call under way; false, and nothing counted, once the
// gate is closed.
func (g *callGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

// leave ends a call enter counted.
func (g *callGate) leave() { g.wg.Done() }

// closeAndWait refuses later calls and waits for those under way.
func (g *callGate) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// deliverRoot puts a steer addressed to the run's root in the manager's
// inbox and waits, at most MaxSteerWait, until the brain's next turn
// takes it.
func (c *Coordinator) deliverRoot(ctx context.Context, msg, operationID string) (SteerEffect, string) {
	in := c.ManagerInbox()
	if in == nil {
		return SteerUnsupported, "the manager's brain does not take steers between its turns (the router brain of a cli-base manager, " +
			"a claude-code, codex or opencode manager's, or a Brain that reads Coordinator.ManagerInbox, does); steer one of its workers instead"
	}
	effect, why := in.post(ctx, msg, operationID)
	return c.endedNotLive(effect, why, "the manager")
}

// endedNotLive is a steer's outcome as acknowledged: one withdrawn
// because the run ended (its work context cancelled by its caller, its
// deadline or its end) before whom's next turn took it is not_live
// (§3.6 "finalization expires unseen requests as not_live"), never
// refused, which says the supervisor declined it.
func (c *Coordinator) endedNotLive(effect SteerEffect, why, whom string) (SteerEffect, string) {
	if effect == SteerRefused && c.workCtx.Err() != nil {
		return SteerNotLive, "the run ended before " + whom + "'s next turn took the message"
	}
	return effect, why
}

// interjector is the router brain's kernel.ToolLoopOptions.Interject:
// nil when the manager has no inbox.
func (j *transcriptJournal) interjector() func(ctx context.Context, answered bool) []string {
	if j.inbox == nil {
		return nil
	}
	return j.interject
}

// interject is the router brain's kernel.ToolLoopOptions.Interject,
// reading the manager's inbox: before a turn it takes what waits; after
// an answer it takes what waits or, with nothing, seals the inbox so that
// a later steer is not_live at once rather than waiting for a turn that
// will never come. It takes the steers provisionally (Inbox.hold): the
// checkpoint that journals the user message holding them acknowledges
// them delivered, and a loop that ends before that gives them back.
func (j *transcriptJournal) interject(ctx context.Context, answered bool) []string {
	steers := j.inbox.hold(answered, 0)
	if len(steers) == 0 {
		return nil
	}
	j.steers = append(j.steers, steers...)
	msgs := make([]string, len(steers))
	for i, s := range steers {
		msgs[i] = s.msg.Message
	}
	return msgs
}

// continueSeq numbers the inbox's steers on from those its projection
// already holds: a manager's projection (the root's, or a nested
// manager's driven again) outlives the process, and a resumed run posts
// to the same file, whose lines must stay distinct.
// An unreadable projection starts over from 1 (logged).
func (in *Inbox) continueSeq(ctx context.Context) {
	if in.path == "" {
		return
	}
	recs, _, err := readTolerant[InboxRecord](ctx, in.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		in.logger.Warn("supervise: reading the manager's inbox projection", "err", err)
	}
	for _, r := range recs {
		in.seq = max(in.seq, r.Seq)
	}
}
