package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
)

// Journal record kinds of the control files: every request the running
// supervisor picks up and every acknowledgement it writes (Node is the
// resolved worker, Data the request or acknowledgement).
const (
	KindSteerRequested        = "steer-requested"
	KindSteerAcknowledged     = "steer-acknowledged"
	KindCancelRequested       = "cancel-requested"
	KindCancelAcknowledged    = "cancel-acknowledged"
	KindRunCancelRequested    = "run-cancel-requested"
	KindRunCancelAcknowledged = "run-cancel-acknowledged"
)

// WorkerCancelledError is the cause a cancelled worker's context carries.
type WorkerCancelledError struct {
	OperationID, Reason string
}

func (e *WorkerCancelledError) Error() string {
	s := "supervise: worker cancelled by operation " + e.OperationID
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// RunCancelledError is the cause the run's contexts carry once a run
// cancellation was applied.
type RunCancelledError struct {
	OperationID, Source, Reason string
}

func (e *RunCancelledError) Error() string {
	return "supervise: run cancelled by operation " + e.OperationID + " from " + e.Source
}

// noControlScanKey, set on Supervise's context by tests only, leaves the
// run dir's control requests to run end.
type noControlScanKey struct{}

// control is a running supervisor's side of the run dir's control files.
type control struct {
	dir    string
	noScan bool // only run end looks at the requests

	// passMu keeps scans from overlapping.
	passMu sync.Mutex
	// deliveries counts steer deliveries under way; run end waits for
	// them before it expires what is left.
	deliveries sync.WaitGroup
	// cancelOff is how far into the cancellation requests log the scans
	// have read (passMu): each scan reads only what was appended since.
	cancelOff int64
	// steersAcked holds the steer request files known to have an
	// acknowledgement (passMu), so a scan stats only the new ones.
	steersAcked map[string]bool
	// steersDir is steers/requests as stat saw it just before its last
	// listing, when that listing left every request acknowledged and
	// the directory had not been changed for steerDirSlack (passMu); nil
	// otherwise. While the directory is still that one, unmodified, a
	// scan does not list it again (see steersUnchanged).
	steersDir os.FileInfo
	// steersListed is when steersDir was taken.
	steersListed time.Time
	// pending holds, in the order written, the worker cancellations
	// whose worker no node answers to yet (passMu): each scan resolves
	// them again, so a label the manager spawns later is cancelled then;
	// run end expires what is left.
	pending []CancelRequest

	// mu guards everything below and orders cancellation record writes.
	mu   sync.Mutex
	seen map[string]bool                // worker-cancel operation ids handled by this process
	open map[string]*WorkerCancellation // records whose abort was issued and target not yet settled
	// down holds each open record's Terminated as a set, and stale the
	// open records whose Terminated grew since they were last written:
	// the next scan writes them, so a subtree of k nodes going down
	// costs a write per scan, not k writes of up to k nodes each.
	down  map[string]map[NodeID]bool
	stale map[string]bool
	run   *RunCancelRequest // the applied run cancellation
	runAt time.Time         // when it was applied
}

func newControl(dir string, noScan bool) *control {
	if dir == "" {
		return nil
	}
	return &control{dir: dir, noScan: noScan, seen: map[string]bool{}, open: map[string]*WorkerCancellation{},
		down: map[string]map[NodeID]bool{}, stale: map[string]bool{}}
}

// watchControl scans the run dir every ControlScanInterval until ctx
// ends; the returned function stops it and waits for the scan in
// progress.
func (c *Coordinator) watchControl(ctx context.Context) (stop func()) {
	if c.ctl == nil || c.ctl.noScan {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(ControlScanInterval)
		defer t.Stop()
		for {
			c.controlPass(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}

// controlPass handles every new request. Cancellations come first, so a
// slow steer delivery never delays them.
func (c *Coordinator) controlPass(ctx context.Context) {
	c.ctl.passMu.Lock()
	defer c.ctl.passMu.Unlock()
	c.checkRunCancel(ctx)
	c.checkWorkerCancels(ctx)
	c.writeStaleCancellations(ctx)
	c.checkSteers(ctx)
}

// writeStaleCancellations writes the open cancellation records whose
// Terminated grew since they were last written.
func (c *Coordinator) writeStaleCancellations(ctx context.Context) {
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	for op := range c.ctl.stale {
		if rec, ok := c.ctl.open[op]; ok {
			c.writeCancellationLocked(ctx, rec)
		}
	}
	clear(c.ctl.stale)
}

func (c *Coordinator) journalControl(ctx context.Context, kind string, node NodeID, v any) {
	data, err := canonjson.ToValue(v)
	if err == nil {
		err = c.log.appendOrLose(context.WithoutCancel(ctx), Record{Kind: kind, Node: node, Data: data})
	} else {
		c.log.lose(kind, node, err)
	}
	if err != nil {
		c.logger.Error("supervise: journaling a control record", "kind", kind, "err", err)
	}
}

// resolveWorker maps a request's worker to a node: an exact node id at
// any depth, else the one direct child of the root with that label (or,
// unlabelled, that profile name).
func (c *Coordinator) resolveWorker(w string) (NodeInfo, bool) {
	if info, ok := c.scope.Node(NodeID(w)); ok {
		return info, true
	}
	// A reused label names its newest worker.
	return c.scope.Labelled(c.scope.Root(), w)
}

// inDoubtDetail says why a request to a worker in doubt (started by an
// earlier process of the run, without a terminal record) is not applied.
const inDoubtDetail = "the worker is in doubt: an earlier process of the run started it and recorded no end, so it may still run there and this run cannot stop or reach it (recover it first: resume the run once its holder's lease has passed)"

// notLiveDetail says why a steer cannot reach n, a worker not live.
func notLiveDetail(n NodeInfo) string {
	if n.InDoubt || n.NeverSettled {
		return inDoubtDetail
	}
	return "the worker is " + string(n.State)
}

func live(n NodeInfo) bool { return n.State.Live() && !n.InDoubt && !n.NeverSettled }

// steerDirSlack is how long steers/requests must have gone unchanged
// before a listing of it is trusted to hold while its modification time
// stays the same: longer than the coarsest timestamp a filesystem keeps
// (FAT's 2 s), so a request written after the listing cannot share the
// directory's time with the last change the listing saw.
const steerDirSlack = 3 * time.Second

// steerRelist is the longest a scan trusts an unchanged steers/requests
// without listing it: a filesystem that does not keep a directory's
// modification time delays a request by at most this.
const steerRelist = 10 * time.Second

// steersUnchanged reports whether steers/requests (st, as stat sees it
// now) is the directory last listed, unmodified since, every request
// it held acknowledged: a scan then has nothing to do, and does not pay
// for listing every request the run was ever sent.
func (ctl *control) steersUnchanged(st os.FileInfo, now time.Time) bool {
	return ctl.steersDir != nil && os.SameFile(ctl.steersDir, st) && st.ModTime().Equal(ctl.steersDir.ModTime()) &&
		now.Sub(ctl.steersListed) < steerRelist
}

// checkSteers delivers each steer request no acknowledgement claims yet.
// The claim (effect unknown) is written before delivery is attempted, so
// a process that dies mid-delivery leaves unknown, never retried.
func (c *Coordinator) checkSteers(ctx context.Context) {
	// The directory is looked at before it is listed: a request written
	// during the listing changes what the next look sees.
	now := time.Now()
	st, statErr := os.Stat(filepath.Join(c.ctl.dir, SteerRequestsDir))
	if statErr == nil && c.ctl.steersUnchanged(st, now) {
		return
	}
	c.ctl.steersDir = nil
	names, err := listSteerRequests(c.ctl.dir)
	if err != nil {
		c.logger.Warn("supervise: listing steer requests", "err", err)
		return
	}
	if c.ctl.steersAcked == nil {
		c.ctl.steersAcked = map[string]bool{}
	}
	defer func() {
		if statErr != nil || now.Sub(st.ModTime()) <= steerDirSlack || ctx.Err() != nil {
			return
		}
		for _, name := range names {
			if !c.ctl.steersAcked[name] {
				return // left for the next scan to try again
			}
		}
		c.ctl.steersDir, c.ctl.steersListed = st, now
	}()
	for _, name := range names {
		if ctx.Err() != nil {
			return
		}
		if c.ctl.steersAcked[name] {
			continue
		}
		ackPath := filepath.Join(c.ctl.dir, SteerAcksDir, name)
		if _, err := os.Stat(ackPath); err == nil {
			c.ctl.steersAcked[name] = true
			continue
		}
		var req SteerRequest
		if err := readJSON(filepath.Join(c.ctl.dir, SteerRequestsDir, name), &req); err != nil {
			c.logger.Warn("supervise: an unreadable steer request", "file", name, "err", err)
			var bad *ControlFileError
			if !errors.As(err, &bad) {
				continue // perhaps passing (a read error): the next scan tries again
			}
			// A request that will never read (damaged, oversized, not a
			// regular file) is refused once, saying why, so whoever
			// waits on it learns its fate and later scans skip it.
			// Its operation id is unread: the file's name is its hash.
			// When it was asked is when the file was written.
			now := c.now().UnixMilli()
			at := now
			if fi, err := os.Lstat(filepath.Join(c.ctl.dir, SteerRequestsDir, name)); err == nil {
				at = fi.ModTime().UnixMilli()
			}
			if _, err := writeExclusive(ackPath, SteerAck{Effect: SteerRefused, RequestedAt: at, ObservedAt: now,
				Detail: "an unreadable request: " + err.Error()}); err != nil {
				c.logger.Warn("supervise: refusing an unreadable steer request", "file", name, "err", err)
				continue
			}
			c.ctl.steersAcked[name] = true
			continue
		}
		ack := SteerAck{OperationID: req.OperationID, RequestDigest: req.RequestDigest, Worker: req.Worker, Effect: SteerUnknown,
			RequestedAt: req.At, ObservedAt: c.now().UnixMilli()}
		created, err := writeExclusive(ackPath, ack)
		if err != nil {
			c.logger.Warn("supervise: claiming a steer request", "op", req.OperationID, "err", err)
			continue
		}
		c.ctl.steersAcked[name] = true // by this claim or another's
		if !created {
			continue
		}
		info, _ := c.resolveWorker(req.Worker)
		if req.Worker == c.runID {
			info.ID = c.scope.Root() // a root steer
		}
		c.journalControl(ctx, KindSteerRequested, info.ID, req)
		// Delivery may wait for the worker's next turn, so it runs on its
		// own: the claim stays unknown until it ends, and the next pass
		// (cancellations first) is not held up. Run end waits for it.
		c.ctl.deliveries.Add(1)
		go func() {
			defer c.ctl.deliveries.Done()
			ack.Effect, ack.Detail = c.deliverSteer(req, name)
			ack.ObservedAt = c.now().UnixMilli()
			if err := writeReplace(ackPath, ack); err != nil {
				c.logger.Error("supervise: writing a steer acknowledgement", "op", req.OperationID, "err", err)
			}
			c.journalControl(ctx, KindSteerAcknowledged, info.ID, ack)
		}()
	}
}

func (c *Coordinator) deliverSteer(req SteerRequest, name string) (SteerEffect, string) {
	// Its request was journaled (or refused by the fence) just before: a
	// process that no longer holds the run's store journal steers none
	// of the workers the run's next holder drives; it stays unknown, as
	// a claim never acknowledged does.
	if err := c.log.current(); err != nil {
		return SteerUnknown, "this process lost the run before delivering the steer: " + err.Error()
	}
	if req.SchemaVersion != steerSchemaVersion || validOperationID(req.OperationID) != nil || opHash(req.OperationID)+".json" != name {
		return SteerRefused, "a malformed request"
	}
	if d, err := steerDigest(req); err != nil || d != req.RequestDigest {
		return SteerRefused, "the request digest does not match its body"
	}
	if req.Worker == c.runID {
		msg, err := c.authorizeSteer(c.workCtx, req, c.scope.Root())
		if err != nil {
			return SteerRefused, err.Error()
		}
		return c.deliverRoot(c.workCtx, msg, req.OperationID)
	}
	info, ok := c.resolveWorker(req.Worker)
	if !ok {
		return SteerRefused, "the run has no worker " + req.Worker
	}
	if !live(info) {
		return SteerNotLive, notLiveDetail(info)
	}
	msg, err := c.authorizeSteer(c.workCtx, req, info.ID)
	if err != nil {
		return SteerRefused, err.Error()
	}
	ctx := c.workCtx
	if r, ok := c.exec.(InboxReader); !ok || !r.ReadsInbox() {
		// A Steerer only accepts into its inbox: that takes no turn.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, controlDeliverTimeout)
		defer cancel()
	}
	return c.deliver(ctx, info, msg, req.OperationID)
}

func (c *Coordinator) cancellationPath(op string) string {
	return filepath.Join(c.ctl.dir, CancellationsDir, op+".json")
}

// writeCancellation persists rec; c.ctl.mu is held.
func (c *Coordinator) writeCancellationLocked(ctx context.Context, rec *WorkerCancellation) {
	rec.ObservedAt = c.now().UnixMilli()
	if err := writeReplace(c.cancellationPath(rec.OperationID), rec); err != nil {
		c.logger.Error("supervise: writing a cancellation record", "op", rec.OperationID, "err", err)
	}
	c.journalControl(ctx, KindCancelAcknowledged, rec.WorkerID, rec)
}

// checkWorkerCancels applies each worker cancellation request once.
func (c *Coordinator) checkWorkerCancels(ctx context.Context) {
	reqs, next, err := readCancelRequestsFrom(c.ctl.dir, c.ctl.cancelOff, false)
	if err != nil {
		c.logger.Warn("supervise: reading cancellation requests", "err", err)
		return
	}
	c.ctl.cancelOff = next
	// The requests still waiting for their worker come first, in the
	// order written, then the new ones.
	pending := c.ctl.pending
	c.ctl.pending = nil
	for i, r := range append(pending, reqs...) {
		c.ctl.mu.Lock()
		// earlier is the record of a request an earlier process of this
		// run issued the abort of (cancel_requested) and died before its
		// target's end was observed: still open, so applied again here.
		var earlier *WorkerCancellation
		if i >= len(pending) {
			if c.ctl.seen[r.OperationID] {
				c.ctl.mu.Unlock()
				continue
			}
			c.ctl.seen[r.OperationID] = true
			path := c.cancellationPath(r.OperationID)
			if _, err := os.Stat(path); err == nil {
				var prior WorkerCancellation
				if readJSON(path, &prior) != nil || prior.Effect != kernel.EffectCancelRequested || prior.OperationID != r.OperationID {
					c.ctl.mu.Unlock()
					continue // resolved by an earlier process of this run
				}
				earlier = &prior
			}
		}
		info, found := c.resolveWorker(r.Worker)
		if !found {
			// No worker answers to it yet: it stays open (unknown, never
			// success), for a later scan to apply once the manager spawns
			// one, or run end to expire.
			c.ctl.pending = append(c.ctl.pending, r)
			c.ctl.mu.Unlock()
			continue
		}
		rec := &WorkerCancellation{OperationID: r.OperationID, Worker: r.Worker, RequestedAt: r.At, Reason: r.Reason,
			WorkerID: info.ID, Terminated: []NodeID{}}
		if earlier == nil {
			c.journalControl(ctx, KindCancelRequested, info.ID, r)
		} else {
			// Its Terminated only grows: the nodes the earlier process
			// saw end, or its journal shows ending down after the
			// request, stay named, and are not named twice.
			// (cancelDown is written only by the replay, before the
			// scans start.)
			journaled := c.cancelDown[r.OperationID]
			c.ctl.down[r.OperationID] = map[NodeID]bool{}
			for _, id := range slices.Concat(earlier.Terminated, journaled) {
				if !c.ctl.down[r.OperationID][id] {
					c.ctl.down[r.OperationID][id] = true
					rec.Terminated = append(rec.Terminated, id)
				}
			}
		}
		switch {
		case info.ID == c.scope.Root():
			rec.Effect, rec.Detail = kernel.EffectUnknown, "the root is cancelled with CancelRun"
		case earlier != nil && info.State.Terminal():
			// Its end was journaled before the earlier process could
			// write the record: that end answers the abort.
			rec.Effect, rec.Detail = kernel.EffectNotLive, "the worker settled "+string(info.State)+" despite the abort"
			if info.State == StateCancelled || info.State == StateFailed {
				if !c.ctl.down[r.OperationID][info.ID] {
					rec.Terminated = append(rec.Terminated, info.ID)
				}
				rec.Effect, rec.Detail = c.wentDown(info.ID)
			}
		case info.InDoubt || info.NeverSettled:
			// Started by an earlier process of the run with no terminal
			// record: it may still run elsewhere, and this run cannot
			// abort it. Never success, and not "nothing live" either.
			rec.Effect, rec.Detail = kernel.EffectUnknown, inDoubtDetail
		case !live(info):
			rec.Effect, rec.Detail = kernel.EffectNotLive, "the worker had already settled "+string(info.State)
		default:
			rec.Effect = kernel.EffectCancelRequested
			c.ctl.open[r.OperationID] = rec
		}
		if rec.Effect != kernel.EffectCancelRequested {
			delete(c.ctl.down, r.OperationID)
		}
		c.writeCancellationLocked(ctx, rec)
		// rec is open to cancelObserved once the lock is released: its
		// effect is read here, not after.
		requested := rec.Effect == kernel.EffectCancelRequested
		c.ctl.mu.Unlock()
		if !requested {
			continue
		}
		cause := &WorkerCancelledError{OperationID: r.OperationID, Reason: r.Reason}
		c.mu.Lock()
		var targets []*worker
		for id, w := range c.workers {
			if id.within(info.ID) && w.cancel != nil {
				targets = append(targets, w)
			}
		}
		c.mu.Unlock()
		for _, w := range targets {
			w.cancel(cause)
		}
		// The worker may have settled before the abort reached it.
		if now, ok := c.scope.Node(info.ID); ok && now.State.Terminal() {
			c.cancelObserved(ctx, info.ID, now.State)
		}
	}
}

// cancelObserved updates the open cancellations a settlement answers:
// a node of a cancelled subtree that went down is terminated (written by
// the next scan); the target's own end decides the effect, written at
// once.
func (c *Coordinator) cancelObserved(ctx context.Context, id NodeID, state State) {
	if c.ctl == nil {
		return
	}
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	for op, rec := range c.ctl.open {
		if !id.within(rec.WorkerID) {
			continue
		}
		down := state == StateCancelled || state == StateFailed
		if down && !c.ctl.down[op][id] {
			if c.ctl.down[op] == nil {
				c.ctl.down[op] = map[NodeID]bool{}
			}
			c.ctl.down[op][id] = true
			rec.Terminated = append(rec.Terminated, id)
		}
		if id != rec.WorkerID {
			c.ctl.stale[op] = c.ctl.stale[op] || down
			continue
		}
		if down {
			rec.Effect, rec.Detail = c.wentDown(rec.WorkerID)
		} else {
			rec.Effect, rec.Detail = kernel.EffectNotLive, "the worker settled "+string(state)+" despite the abort"
		}
		delete(c.ctl.open, op)
		delete(c.ctl.down, op)
		delete(c.ctl.stale, op)
		c.writeCancellationLocked(ctx, rec)
	}
}

// wentDown is the answer of a worker cancellation whose target went
// down (cancelled or failed): cancelled, unless a node of the target's
// subtree is in doubt — an earlier process of the run started it and
// journaled no end, so it may still run under that process — whose end
// was not observed: then unknown, naming them.
func (c *Coordinator) wentDown(target NodeID) (kernel.Effect, string) {
	var lost []string
	for _, n := range c.scope.Nodes() {
		if n.ID != target && n.ID.within(target) && (n.InDoubt || n.NeverSettled) && !n.State.Terminal() {
			lost = append(lost, string(n.ID))
		}
	}
	if len(lost) == 0 {
		return kernel.EffectCancelled, ""
	}
	return kernel.EffectUnknown, clip("the worker went down, but its subtree's "+strings.Join(lost, ", ")+
		" started under an earlier process of the run and journaled no end (in doubt): their end is not confirmed", MaxReasonBytes)
}

// checkRunCancel applies the run cancellation request once: the brain
// and every worker are cancelled with a *RunCancelledError.
func (c *Coordinator) checkRunCancel(ctx context.Context) {
	c.ctl.mu.Lock()
	applied := c.ctl.run != nil
	c.ctl.mu.Unlock()
	if applied {
		return
	}
	var req RunCancelRequest
	if err := readJSON(filepath.Join(c.ctl.dir, RunCancelRequestFile), &req); err != nil || validOperationID(req.OperationID) != nil {
		return
	}
	var prior RunCancellation
	if err := readJSON(filepath.Join(c.ctl.dir, RunCancellationFile), &prior); err == nil && prior.Effect != kernel.EffectCancelRequested {
		return // answered by an earlier process of this run
	}
	// A process that issued the abort and died left cancel_requested:
	// the resumed run is cancelled too.
	at := c.now()
	c.ctl.mu.Lock()
	c.ctl.run, c.ctl.runAt = &req, at
	c.ctl.mu.Unlock()
	c.journalControl(ctx, KindRunCancelRequested, "", req)
	cause := &RunCancelledError{OperationID: req.OperationID, Source: req.Source, Reason: req.Reason}
	c.mu.Lock()
	c.stopped = true
	fn := c.stopFn
	c.mu.Unlock()
	if fn != nil {
		fn(cause)
	}
	c.cancelWork(cause)
	ack := c.runAck(req, at, kernel.EffectCancelRequested)
	if err := writeReplace(filepath.Join(c.ctl.dir, RunCancellationFile), ack); err != nil {
		c.logger.Error("supervise: writing the run cancellation", "err", err)
	}
}

func (c *Coordinator) runAck(req RunCancelRequest, at time.Time, effect kernel.Effect) RunCancellation {
	after := max(at.UnixMilli()-req.At, 0)
	ack := RunCancellation{OperationID: req.OperationID, Effect: effect, Path: PathFallback, RequestedAt: req.At,
		ObservedAt: c.now().UnixMilli(), AppliedAfterMS: &after, Source: req.Source, Reason: req.Reason}
	if req.DeadlineMS != nil {
		ack.DeadlineExceeded = new(after > *req.DeadlineMS)
	}
	return ack
}

// appliedRunCancel returns the applied run cancellation, if any.
func (c *Coordinator) appliedRunCancel() *RunCancelRequest {
	if c.ctl == nil {
		return nil
	}
	c.ctl.mu.Lock()
	defer c.ctl.mu.Unlock()
	return c.ctl.run
}

// finalizeControl runs once the run's result is known: a last scan, then
// every request still open expires. Steers nobody claimed are not_live,
// cancellations never applied are not_live, aborts whose end was not
// observed are unknown, and the run cancellation is acknowledged
// cancelled or, when workers' ends were not confirmed, unknown.
func (c *Coordinator) finalizeControl(ctx context.Context, res *SupervisedResult) {
	if c.ctl == nil {
		return
	}
	c.ctl.passMu.Lock()
	defer c.ctl.passMu.Unlock()
	// Workers were cancelled, so a delivery still waiting for a turn
	// ends now; its acknowledgement is written before run end.
	c.ctl.deliveries.Wait()
	ctx = context.WithoutCancel(ctx)
	end := "the run ended before the request was applied"

	if names, err := listSteerRequests(c.ctl.dir); err == nil {
		for _, name := range names {
			var req SteerRequest
			if readJSON(filepath.Join(c.ctl.dir, SteerRequestsDir, name), &req) != nil {
				continue
			}
			ack := SteerAck{OperationID: req.OperationID, RequestDigest: req.RequestDigest, Worker: req.Worker, Effect: SteerNotLive,
				RequestedAt: req.At, ObservedAt: c.now().UnixMilli(), Detail: end}
			if created, err := writeExclusive(filepath.Join(c.ctl.dir, SteerAcksDir, name), ack); err == nil && created {
				c.journalControl(ctx, KindSteerAcknowledged, "", ack)
			}
		}
	}

	reqs, _ := readCancelRequestList(c.ctl.dir)
	c.ctl.mu.Lock()
	for op, rec := range c.ctl.open {
		rec.Effect, rec.Detail = kernel.EffectUnknown, "the run ended before the worker's end was observed"
		c.writeCancellationLocked(ctx, rec)
		delete(c.ctl.open, op)
	}
	clear(c.ctl.down)
	clear(c.ctl.stale)
	for _, r := range reqs {
		path := c.cancellationPath(r.OperationID)
		var prior WorkerCancellation
		if err := readJSON(path, &prior); err == nil {
			if prior.Effect == kernel.EffectCancelRequested {
				// An earlier process issued the abort and died.
				prior.Effect, prior.Detail = kernel.EffectUnknown, "the run ended before the worker's end was observed"
				c.writeCancellationLocked(ctx, &prior)
			}
			continue
		}
		rec := &WorkerCancellation{OperationID: r.OperationID, Worker: r.Worker, Effect: kernel.EffectNotLive, RequestedAt: r.At,
			Reason: r.Reason, Detail: end, Terminated: []NodeID{}}
		if info, ok := c.resolveWorker(r.Worker); !ok && r.Worker != c.runID {
			// No worker of the run ever answered to it: unknown, as a
			// request written after the run's end to a worker it never
			// had reads (endedDetail), not a settled worker's not_live.
			rec.Effect, rec.Detail = kernel.EffectUnknown, end+"; the run has no worker "+r.Worker
		} else {
			rec.WorkerID = info.ID
		}
		c.writeCancellationLocked(ctx, rec)
	}
	c.ctl.pending = nil
	run, at := c.ctl.run, c.ctl.runAt
	c.ctl.mu.Unlock()

	runPath := filepath.Join(c.ctl.dir, RunCancellationFile)
	if run != nil {
		effect := kernel.EffectCancelled
		ack := c.runAck(*run, at, effect)
		if len(res.TeardownUnconfirmed) > 0 {
			ack.Effect, ack.Affected = kernel.EffectUnknown, teardownIDs(res.TeardownUnconfirmed)
			ack.Detail = "workers still running when the run ended"
		}
		if err := writeReplace(runPath, ack); err != nil {
			c.logger.Error("supervise: writing the run cancellation", "err", err)
		}
		c.journalControl(ctx, KindRunCancelAcknowledged, "", ack)
		return
	}
	var req RunCancelRequest
	if readJSON(filepath.Join(c.ctl.dir, RunCancelRequestFile), &req) != nil || validOperationID(req.OperationID) != nil {
		return
	}
	if _, err := os.Stat(runPath); err == nil {
		return
	}
	ack := RunCancellation{OperationID: req.OperationID, Effect: kernel.EffectNotLive, RequestedAt: req.At, ObservedAt: c.now().UnixMilli(),
		Source: req.Source, Reason: req.Reason, Detail: fmt.Sprintf("the run settled %s before the request was applied", res.Status)}
	if created, err := writeExclusive(runPath, ack); err == nil && created {
		c.journalControl(ctx, KindRunCancelAcknowledged, "", ack)
	}
}
