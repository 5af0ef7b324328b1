package supervise

import (
	"context"
	"errors"
	"io/fs"
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
// it. Supervise seals it when the brain returns.
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
}

// closeManagerInbox seals the root's inbox once the brain returned: a
// steer still waiting, or arriving later, is not_live.
func (c *Coordinator) closeManagerInbox(ctx context.Context) {
	c.ManagerInbox().close(context.WithoutCancel(ctx))
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
	return in.post(ctx, msg, operationID)
}

// interjectFrom is a tool loop's Interject reading in: before a turn it
// takes what waits; after an answer it takes what waits or, with
// nothing, seals in so that a later steer is not_live at once rather
// than waiting for a turn that will never come.
func interjectFrom(in *Inbox) func(ctx context.Context, answered bool) []string {
	if in == nil {
		return nil
	}
	return func(ctx context.Context, answered bool) []string {
		var steers []SteerMessage
		if answered {
			steers = in.TakeOrSeal(ctx)
		} else {
			steers = in.Take(ctx)
		}
		if len(steers) == 0 {
			return nil
		}
		msgs := make([]string, len(steers))
		for i, s := range steers {
			msgs[i] = s.Message
		}
		return msgs
	}
}

// continueSeq numbers the inbox's steers on from those its projection
// already holds: the root's projection outlives the process, and a
// resumed run posts to the same file, whose lines must stay distinct.
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
