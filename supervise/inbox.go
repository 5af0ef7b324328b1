package supervise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// WorkersDir holds one inbox projection per steered worker of a run
// directory, workers/<stem>.inbox.ndjson (§3.6 "Supervisor run layout"):
// every steer the worker's inbox accepted, and when its next turn took it
// or why it never will.
const WorkersDir = "workers"

// Inbox limits.
const (
	// MaxInboxPending bounds the steers waiting in one worker's inbox; a
	// further one is refused until the worker's next turn takes them.
	MaxInboxPending = 64
	// MaxSteerWait bounds how long a steer waits for the worker's next
	// turn to take it. A steer still waiting then is withdrawn (the
	// projection says so) and refused, never left to arrive later.
	MaxSteerWait = 10 * time.Minute
)

// Inbox record kinds of a worker's projection file.
const (
	InboxPosted  = "posted"
	InboxTaken   = "taken"
	InboxDropped = "dropped"
)

// InboxReader is implemented by an executor whose workers take steers
// from Work.Inbox between turns (KernelExecutor does). Supervise gives
// each worker of such an executor an inbox, and a steer, from the
// manager's steer_agent or from another process through the run dir, is
// acknowledged delivered once the worker's next turn has taken it — a
// router manager's (the root's, or a nested manager's) once the
// transcript message holding it is journaled.
//
// A Brain that implements it (RouterBrain and coordmcp.HarnessBrain do)
// takes the steers addressed to the run's root (worker = the run id) from
// Coordinator.ManagerInbox between its turns, the same way.
type InboxReader interface {
	ReadsInbox() bool
}

// SteerMessage is one steer a worker's inbox holds.
type SteerMessage struct {
	// Seq numbers the worker's steers from 1, in the order posted.
	Seq int64
	// Message is the steer's text, as sent.
	Message string
	// OperationID is the run dir steer request's operation id; "" for
	// the manager's own steer_agent.
	OperationID string
}

// InboxRecord is one line of a worker's inbox projection: a steer
// posted (Seq, Message, OperationID), taken by the worker's next turn
// (Seq), or dropped (Seq, Reason): withdrawn unread or refused because
// the worker took its last turn.
type InboxRecord struct {
	Kind        string `json:"kind"`
	Seq         int64  `json:"seq"`
	AtMS        int64  `json:"atMs"`
	Message     string `json:"message,omitzero"`
	OperationID string `json:"operationId,omitzero"`
	Reason      string `json:"reason,omitzero"`
}

// WorkerStem is the file stem of a worker's files in a run directory:
// its node id with every character outside [A-Za-z0-9._-] replaced by
// '_' ("worker" when empty).
func WorkerStem(worker NodeID) string {
	if worker == "" {
		return "worker"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, string(worker))
}

// InboxPath is where worker's inbox projection lives in runDir.
func InboxPath(runDir string, worker NodeID) string {
	return filepath.Join(runDir, WorkersDir, WorkerStem(worker)+".inbox.ndjson")
}

// ReadInbox reads worker's inbox projection in runDir without locking
// it, tolerantly (a torn tail is ignored; a corrupt line or one that is
// not an InboxRecord is skipped and counted). A worker never steered has
// no projection: the error matches fs.ErrNotExist.
func ReadInbox(ctx context.Context, runDir string, worker NodeID) ([]InboxRecord, int, error) {
	return readTolerant[InboxRecord](ctx, InboxPath(runDir, worker))
}

// Inbox is one live worker's steer inbox. The executor takes what it
// holds between the worker's turns (Take, TakeOrSeal) and seals it when
// the worker takes no more turns; a steer waits until a turn takes it,
// the inbox is sealed, or its wait ends. A turn may take steers in two
// steps (hold, then confirm once what holds them is durable, or release
// them back): a held steer is neither waiting nor delivered, Seal leaves
// it to its holder, and its sender's wait ending withdraws it only if it
// is released. With a run dir every steer, take
// and drop is also appended to the worker's projection file before it
// is acknowledged. A nil *Inbox holds nothing: Take returns nil. Its
// methods are safe for concurrent use.
type Inbox struct {
	node   NodeID
	path   string // the projection; "" without a run dir
	now    func() time.Time
	logger *slog.Logger

	// fileMu guards the projection journal, opened on the first post.
	// Lock order: mu before fileMu.
	fileMu     sync.Mutex
	j          *journal.Journal
	fileClosed bool

	mu      sync.Mutex
	pending []*posting
	seq     int64
	sealed  bool
	// waiting is closed when a steer is posted (Waiting); nil until asked
	// for, and after a post.
	waiting chan struct{}

	// manager: the run's root, whose turns the manager's brain takes.
	manager bool
}

// whom names the inbox's reader in the reasons it gives.
func (in *Inbox) whom() string {
	if in.manager {
		return "the manager"
	}
	return "the worker"
}

// posting is one steer waiting for its outcome.
type posting struct {
	msg      SteerMessage
	resolved bool // taken or dropped; guarded by Inbox.mu
	taken    bool
	// held: a turn took the steer provisionally (hold) and has not yet
	// confirmed or released it; guarded by Inbox.mu.
	held bool
	// expired: its sender's wait ended while a turn held it; released,
	// it is withdrawn instead of waiting again. Guarded by Inbox.mu.
	expired bool
	// reason, when a drop resolved it, is why (for its sender).
	reason string
	done   chan struct{}
}

func newInbox(node NodeID, runDir string, now func() time.Time, logger *slog.Logger) *Inbox {
	in := &Inbox{node: node, now: now, logger: logger}
	if runDir != "" {
		in.path = InboxPath(runDir, node)
	}
	return in
}

// Take returns the steers waiting in the inbox, oldest first, and
// acknowledges them delivered at once: the caller's next turn takes
// them. It returns nil when none wait. (The router brain instead holds
// them until its journaled transcript holds them: see hold.)
func (in *Inbox) Take(ctx context.Context) []SteerMessage {
	return in.take(ctx, false, 0)
}

// TakeAtMost is Take for a reader that hands steers on in a bounded
// message (an external harness's tool result): it takes the oldest
// waiting steers whose messages total at most maxBytes, and always the
// oldest one (a steer is at most 64 KiB), leaving the rest waiting for
// the reader's next take. maxBytes <= 0 takes them all.
func (in *Inbox) TakeAtMost(ctx context.Context, maxBytes int) []SteerMessage {
	return in.take(ctx, false, maxBytes)
}

// Waiting returns a channel that is closed once a steer waits in the
// inbox: at once when one already does. A reader blocked on something
// else (an external harness's await_event) ends that wait to take it. It
// is nil — never ready — for a nil or sealed inbox.
func (in *Inbox) Waiting() <-chan struct{} {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case len(in.pending) > 0:
		ch := make(chan struct{})
		close(ch)
		return ch
	case in.sealed:
		return nil
	}
	if in.waiting == nil {
		in.waiting = make(chan struct{})
	}
	return in.waiting
}

// TakeOrSeal is Take for a worker whose turn just ended: with steers
// waiting it takes them, and with none it seals the inbox in the same
// step, so a steer arriving after is refused not_live instead of waiting
// for a turn that will never come.
func (in *Inbox) TakeOrSeal(ctx context.Context) []SteerMessage {
	return in.take(ctx, true, 0)
}

// take takes the waiting steers (with maxBytes > 0, the oldest whose
// messages fit in it, at least one) and, with none waiting and
// sealIfEmpty, seals the inbox; they are acknowledged delivered at once.
func (in *Inbox) take(ctx context.Context, sealIfEmpty bool, maxBytes int) []SteerMessage {
	ps := in.hold(sealIfEmpty, maxBytes)
	if len(ps) == 0 {
		return nil
	}
	in.confirm(ctx, ps)
	msgs := make([]SteerMessage, len(ps))
	for i, p := range ps {
		msgs[i] = p.msg
	}
	return msgs
}

// hold is the first step of a two-step take (§3.6: a steer is
// delivered once the receiver's transcript holding it is durable): it
// takes the waiting steers (with maxBytes > 0, the oldest whose messages
// fit in it, at least one) provisionally — no longer waiting, not yet
// delivered — and, with none waiting and sealIfEmpty, seals the inbox.
// The caller confirms them once what holds them is durable, or releases
// them.
func (in *Inbox) hold(sealIfEmpty bool, maxBytes int) []*posting {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.pending) == 0 {
		if sealIfEmpty {
			in.sealed = true
		}
		return nil
	}
	n, size := len(in.pending), 0
	if maxBytes > 0 {
		for i, p := range in.pending {
			size += len(p.msg.Message)
			if i > 0 && size > maxBytes {
				n = i
				break
			}
		}
	}
	ps := in.pending[:n:n]
	in.pending = slices.Clone(in.pending[n:])
	if len(in.pending) == 0 {
		in.pending = nil
	}
	for _, p := range ps {
		p.held = true
	}
	return ps
}

// confirm acknowledges held steers delivered: what holds them is
// durable. The projection records them taken.
func (in *Inbox) confirm(ctx context.Context, ps []*posting) {
	if in == nil || len(ps) == 0 {
		return
	}
	in.mu.Lock()
	for _, p := range ps {
		p.held, p.resolved, p.taken = false, true, true
	}
	in.mu.Unlock()
	recs := make([]InboxRecord, len(ps))
	at := in.now().UnixMilli()
	for i, p := range ps {
		recs[i] = InboxRecord{Kind: InboxTaken, Seq: p.msg.Seq, AtMS: at}
	}
	if err := in.record(ctx, recs...); err != nil {
		// Delivered either way; only the projection lags.
		in.logger.Error("supervise: recording taken steers", "node", in.node, "err", err)
	}
	for _, p := range ps {
		close(p.done)
	}
}

// release gives held steers back: the turn that held them ended before
// what holds them was durable. They wait again, ahead of later ones, for
// the next turn — unless the inbox is sealed (dropped, not_live) or
// their sender stopped waiting (withdrawn).
func (in *Inbox) release(ctx context.Context, ps []*posting) {
	if in == nil || len(ps) == 0 {
		return
	}
	var dropped []*posting
	in.mu.Lock()
	back := make([]*posting, 0, len(ps))
	for _, p := range ps {
		p.held = false
		switch {
		case p.expired:
			p.resolved, p.reason = true, in.whom()+"'s turn that took the message ended before it was recorded, and the steer's wait ended"
			dropped = append(dropped, p)
		case in.sealed:
			p.resolved = true
			dropped = append(dropped, p)
		default:
			back = append(back, p)
		}
	}
	if len(back) > 0 {
		in.pending = append(back, in.pending...)
		if in.waiting != nil {
			close(in.waiting)
			in.waiting = nil
		}
	}
	in.mu.Unlock()
	for _, p := range dropped {
		in.drop(ctx, p, cmp.Or(p.reason, in.whom()+" took its last turn before recording the message"))
		close(p.done)
	}
}

// Seal refuses every later steer and drops those still waiting (they
// are acknowledged not_live); it returns how many it dropped. An
// executor seals the inbox of a worker that may take no more turns.
func (in *Inbox) Seal(ctx context.Context) int {
	if in == nil {
		return 0
	}
	in.mu.Lock()
	in.sealed = true
	ps := in.pending
	in.pending = nil
	for _, p := range ps {
		p.resolved = true
	}
	in.mu.Unlock()
	if len(ps) > 0 {
		recs := make([]InboxRecord, len(ps))
		at := in.now().UnixMilli()
		for i, p := range ps {
			recs[i] = InboxRecord{Kind: InboxDropped, Seq: p.msg.Seq, AtMS: at, Reason: in.whom() + " took its last turn"}
		}
		if err := in.record(ctx, recs...); err != nil {
			in.logger.Error("supervise: recording dropped steers", "node", in.node, "err", err)
		}
	}
	for _, p := range ps {
		close(p.done)
	}
	return len(ps)
}

// close seals the inbox and closes its projection; the worker's
// execution has returned.
func (in *Inbox) close(ctx context.Context) {
	if in == nil {
		return
	}
	in.Seal(ctx)
	in.fileMu.Lock()
	defer in.fileMu.Unlock()
	in.fileClosed = true
	if in.j != nil {
		if err := in.j.Close(); err != nil {
			in.logger.Error("supervise: closing an inbox projection", "node", in.node, "err", err)
		}
		in.j = nil
	}
}

// post puts msg in the inbox and waits, at most MaxSteerWait or until
// ctx ends, for the worker's next turn to take it; it returns the steer
// effect and, when not delivered, why.
func (in *Inbox) post(ctx context.Context, msg, operationID string) (SteerEffect, string) {
	p, effect, why := in.enqueue(ctx, msg, operationID)
	if p == nil {
		return effect, why
	}
	return in.await(ctx, p)
}

// enqueue puts msg in the inbox, its posted line durable first; with
// the inbox sealed, full, or its projection failing it returns no
// posting and why.
func (in *Inbox) enqueue(ctx context.Context, msg, operationID string) (*posting, SteerEffect, string) {
	// The posted line is made durable under the lock, so a turn taking
	// the inbox meanwhile waits for it: the projection's posted line
	// always precedes its taken or dropped line, and a steer whose
	// posted line is visible is already queued.
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.sealed:
		return nil, SteerNotLive, in.whom() + " took its last turn"
	case len(in.pending) >= MaxInboxPending:
		return nil, SteerRefused, fmt.Sprintf("%s's inbox holds %d steers its next turn has not taken; wait for it", in.whom(), MaxInboxPending)
	}
	in.seq++
	p := &posting{msg: SteerMessage{Seq: in.seq, Message: msg, OperationID: operationID}, done: make(chan struct{})}
	if err := in.record(ctx, InboxRecord{Kind: InboxPosted, Seq: p.msg.Seq, AtMS: in.now().UnixMilli(), Message: msg, OperationID: operationID}); err != nil {
		return nil, SteerRefused, in.whom() + "'s inbox could not record the message: " + err.Error()
	}
	in.pending = append(in.pending, p)
	if in.waiting != nil {
		close(in.waiting)
		in.waiting = nil
	}
	return p, "", ""
}

// await waits, at most MaxSteerWait or until ctx ends, for p's outcome:
// delivered once the turn that took it confirmed it (the worker's turn
// took it; the router manager's journaled transcript holds it).
func (in *Inbox) await(ctx context.Context, p *posting) (SteerEffect, string) {
	// limit is the wait the refusal names: MaxSteerWait, or the
	// caller's sooner deadline.
	limit := MaxSteerWait
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		limit = max(time.Until(d), 0).Round(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(ctx, MaxSteerWait)
	defer cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
		in.mu.Lock()
		withdrawn := !p.resolved && !p.held
		// Held by a turn: its outcome is that turn's (release withdraws
		// it, as it is no longer waited for).
		p.expired = p.held
		if withdrawn {
			p.resolved = true
			for i, q := range in.pending {
				if q == p {
					in.pending = append(in.pending[:i], in.pending[i+1:]...)
					break
				}
			}
		}
		in.mu.Unlock()
		if withdrawn {
			why := in.whom() + "'s next turn did not take the message before the steer's wait ended"
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				why = fmt.Sprintf("%s's next turn did not take the message within %s", in.whom(), limit)
			}
			in.drop(context.WithoutCancel(ctx), p, why)
			return SteerRefused, why + "; it was withdrawn"
		}
		<-p.done // resolved meanwhile: its outcome is being recorded
	}
	if p.taken {
		return SteerDelivered, ""
	}
	if p.reason != "" {
		return SteerRefused, p.reason + "; it was withdrawn"
	}
	return SteerNotLive, in.whom() + " took its last turn before taking the message"
}

// drop records p as dropped; p is already out of the queue.
func (in *Inbox) drop(ctx context.Context, p *posting, reason string) {
	if err := in.record(ctx, InboxRecord{Kind: InboxDropped, Seq: p.msg.Seq, AtMS: in.now().UnixMilli(), Reason: reason}); err != nil {
		in.logger.Error("supervise: recording a dropped steer", "node", in.node, "err", err)
	}
}

// record appends recs to the projection, opening it on first use;
// without a run dir it does nothing.
func (in *Inbox) record(ctx context.Context, recs ...InboxRecord) error {
	if in.path == "" {
		return nil
	}
	vals := make([]canonjson.Value, len(recs))
	for i, r := range recs {
		v, err := canonjson.ToValue(r)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	in.fileMu.Lock()
	defer in.fileMu.Unlock()
	if in.fileClosed {
		return journal.ErrClosed
	}
	if in.j == nil {
		j, err := journal.Open(in.path, journal.Options{CreateDir: true})
		if err != nil {
			return err
		}
		in.j = j
	}
	_, err := in.j.Append(context.WithoutCancel(ctx), vals...)
	return err
}

// deliver puts a steer in live worker info's inbox: the worker's own
// inbox when its executor reads one (delivered once its next turn takes
// the message), else the executor's Steerer port. It is the one rule
// behind steer_agent and the run dir's steer requests.
func (c *Coordinator) deliver(ctx context.Context, info NodeInfo, msg, operationID string) (SteerEffect, string) {
	if !live(info) {
		return SteerNotLive, notLiveDetail(info)
	}
	c.mu.Lock()
	w := c.workers[info.ID]
	c.mu.Unlock()
	if w != nil && w.inbox != nil {
		effect, why := w.inbox.post(ctx, msg, operationID)
		return c.endedNotLive(effect, why, "the worker")
	}
	if w != nil && w.runtime == RuntimeManager {
		// A nested manager runs no executor: only its brain's inbox
		// could take the message.
		return SteerUnsupported, "the nested manager's brain takes no steers between its turns"
	}
	s, ok := c.exec.(Steerer)
	if !ok {
		return SteerUnsupported, "the executor exposes no inbox"
	}
	if s.Deliver(ctx, info.ID, msg) {
		return SteerDelivered, ""
	}
	// The worker may have settled while its inbox was asked.
	if now, ok := c.scope.Node(info.ID); ok && !live(now) {
		return SteerNotLive, "the worker is " + string(now.State)
	}
	return SteerRefused, "the worker's inbox did not accept the message"
}
