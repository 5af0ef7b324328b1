package supervise

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
)

// SessionRef is where a settled worker's provider session can be
// continued from (§3.6 "Continuity" resume): the exact run its session
// ended at, which names the environment holding it. It is journaled with
// the worker's settlement (Record.SessionRef), so a process resuming the
// run looks the environment up by Run.EnvironmentID. Ids and a digest
// only, never a secret.
type SessionRef struct {
	// Run is the session's latest run when the worker settled.
	Run contract.ExactRunControlRef `json:"run"`
	// EnvironmentCreated says the runtime created the environment (its
	// create answered CreationCreated): a process that finds it by lookup
	// destroys it only with this proof (ENV-06).
	EnvironmentCreated bool `json:"environmentCreated,omitzero"`
}

// valid reports whether r names an exact run within the contract's
// bounds (every id a bounded identifier, the digest a digest).
func (r *SessionRef) valid() bool {
	if r == nil {
		return false
	}
	_, err := contract.Validate("AgentExactRunControlRef", contract.ExactRunControlRefSchema, r.Run)
	return err == nil
}

// checkedRef is r when valid, else nil: a reference the journal or an
// executor gave out of bounds is unknown, never half-used.
func checkedRef(r *SessionRef) *SessionRef {
	if !r.valid() {
		return nil
	}
	c := *r
	return &c
}

// Reasons of a *ResumeRefusedError.
const (
	// ResumeNoSession: the prior worker left no session that can be
	// continued (its provider observed none, or could not prove its
	// boundary when it settled).
	ResumeNoSession = "resume-no-session"
	// ResumeEnvironmentGone: the environment holding the session is no
	// longer reachable (this process does not hold it and the provider
	// cannot, or did not, find it by its id).
	ResumeEnvironmentGone = "resume-environment-gone"
	// ResumeNotProven: the provider could not prove, or refused, the
	// native continuation of the session (kernel.ContinuityError).
	ResumeNotProven = "resume-not-proven"
)

// ResumeRefusedError is a continuity-resume worker the executor refused
// before dispatching anything: it is never run fresh in the session's
// place, and it spent nothing.
type ResumeRefusedError struct {
	// Node is the resume worker; Of the settled worker it was to
	// continue.
	Node, Of NodeID
	// Reason is a ResumeXxx constant; Detail says more.
	Reason, Detail string
	// Err is the underlying error, if any.
	Err error
}

// Error says which worker was refused, why, and what to do.
func (e *ResumeRefusedError) Error() string {
	return fmt.Sprintf("supervise: worker %s cannot resume %s's session (%s): %s; spawn it with continuity fresh instead", e.Node, e.Of, e.Reason, e.Detail)
}

// Unwrap returns the underlying error.
func (e *ResumeRefusedError) Unwrap() error { return e.Err }

// SessionReleaser is implemented by an executor that keeps settled
// workers' environments while a continuity-resume spawn may continue
// their sessions. Supervise calls ReleaseSessions once the run's workers
// settled (before the run's result is made), with the SessionRef every
// settled worker left (journaled ones too: a process that died before
// its run ended left their environments with the provider): the
// executor releases every environment it keeps for runID, and those
// settled names that it does not hold, and returns those whose teardown
// it could not confirm, which the run journals teardown-unconfirmed and
// names in its result (§15 behaviour 51). A worker that keeps an
// environment after the call releases it at once.
type SessionReleaser interface {
	ReleaseSessions(ctx context.Context, runID string, settled map[NodeID]*SessionRef) []UnreleasedSession
}

// SessionTeardowns is implemented by a SessionReleaser that reports
// every environment it released at run end, destroyed or not: Supervise
// then journals each as environment-teardown (§3.6), and those not
// confirmed destroyed teardown-unconfirmed too, rather than only the
// failures ReleaseSessions returns. KernelExecutor implements it.
type SessionTeardowns interface {
	ReleaseSessionTeardowns(ctx context.Context, runID string, settled map[NodeID]*SessionRef) []SessionTeardown
}

// SessionTeardown is one kept environment released at run end: the
// worker that left it and its teardown.
type SessionTeardown struct {
	Node     NodeID
	Teardown EnvironmentTeardown
}

// UnreleasedSession is a kept environment whose teardown could not be
// confirmed: the worker that left it and why.
type UnreleasedSession struct {
	Node   NodeID
	Detail string
}

// resumesTimeout bounds KernelExecutor's one read of its provider's
// capabilities for ResumesSessions.
const resumesTimeout = 10 * time.Second

// sessionKeep is KernelExecutor's state for continuity resume: whether
// its provider can continue sessions (read once), and the environments
// of settled workers kept, by supervised run and node.
type sessionKeep struct {
	once    sync.Once
	resumes bool

	mu     sync.Mutex
	kept   map[string]map[NodeID]*keptSession
	closed map[string]bool
}

// keptSession is a settled worker's environment, kept for a resume.
type keptSession struct {
	// keeper, when this process created the environment, destroys it
	// (kernel.KeptProvider.Close); nil for one found by lookup.
	keeper *kernel.KeptProvider
	env    contract.Environment
	ref    SessionRef
}

// release destroys k's environment when the runtime provably created it
// (ENV-06), bounded by timeout; an error is the teardown unconfirmed.
func (k *keptSession) release(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if k.keeper != nil {
		return k.keeper.Close(ctx)
	}
	if !k.ref.EnvironmentCreated {
		return nil
	}
	if err := k.env.Destroy(ctx); err != nil {
		return fmt.Errorf("supervise: destroying the kept environment %s: %w", k.env.ID(), err)
	}
	return nil
}

// put keeps k for node of run; it reports false when the run already
// released its sessions (the caller releases k).
func (s *sessionKeep) put(run string, node NodeID, k *keptSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed[run] {
		return false
	}
	if s.kept == nil {
		s.kept = map[string]map[NodeID]*keptSession{}
	}
	if s.kept[run] == nil {
		s.kept[run] = map[NodeID]*keptSession{}
	}
	s.kept[run][node] = k
	return true
}

// take removes and returns the session kept for node of run, nil when
// none is.
func (s *sessionKeep) take(run string, node NodeID) *keptSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kept[run][node]
	delete(s.kept[run], node)
	return k
}

// ResumesSessions reports whether the executor honours continuity resume:
// its Provider declares native continuation with an atomic boundary and
// request idempotency (read once, within 10 s, and remembered). Without
// Accounts only: a seated worker's session belongs to its seat chain.
func (e *KernelExecutor) ResumesSessions() bool {
	if e == nil || e.Provider == nil || e.Store == nil || e.Accounts != nil {
		return false
	}
	e.keep.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), resumesTimeout)
		defer cancel()
		caps, err := e.Provider.Capabilities(ctx)
		if err != nil {
			if e.Logger != nil {
				e.Logger.Warn("supervise: reading the provider's capabilities; continuity resume refused", "err", err)
			}
			return
		}
		n := caps.NativeContinuation
		e.keep.resumes = n != nil && n.AtomicBoundary && n.RequestIdempotency
	})
	return e.keep.resumes
}

// ReleaseSessions implements SessionReleaser: it destroys the
// environments kept for runID's workers, and those of settled it does not
// hold that its Provider still has (found by id, contract.
// EnvironmentGetter; all of these lookups within one cleanup window),
// each only when the runtime created it (ENV-06), and returns those it
// could not confirm destroyed (ReleaseSessionTeardowns reports them all).
func (e *KernelExecutor) ReleaseSessions(ctx context.Context, runID string, settled map[NodeID]*SessionRef) []UnreleasedSession {
	var out []UnreleasedSession
	for _, t := range e.ReleaseSessionTeardowns(ctx, runID, settled) {
		if !t.Teardown.Destroyed {
			out = append(out, UnreleasedSession{Node: t.Node, Detail: t.Teardown.Detail})
		}
	}
	return out
}

// ReleaseSessionTeardowns implements SessionTeardowns: ReleaseSessions,
// reporting every environment it destroyed or tried to.
func (e *KernelExecutor) ReleaseSessionTeardowns(ctx context.Context, runID string, settled map[NodeID]*SessionRef) []SessionTeardown {
	if e == nil {
		return nil
	}
	e.keep.mu.Lock()
	kept := e.keep.kept[runID]
	delete(e.keep.kept, runID)
	if e.keep.closed == nil {
		e.keep.closed = map[string]bool{}
	}
	e.keep.closed[runID] = true
	e.keep.mu.Unlock()
	var out []SessionTeardown
	report := func(node NodeID, envID string, err error) {
		t := EnvironmentTeardown{Provider: e.providerName(), EnvironmentID: envID, Destroyed: err == nil}
		if err != nil {
			t.Detail = err.Error()
			if e.Logger != nil {
				e.Logger.Error("supervise: releasing a worker's kept environment", "node", node, "err", err)
			}
		}
		out = append(out, SessionTeardown{Node: node, Teardown: t})
	}
	held := map[string]bool{}
	for _, node := range slices.Sorted(maps.Keys(kept)) {
		k := kept[node]
		envID := k.env.ID()
		held[envID] = true
		err := k.release(ctx, kernel.DefaultCleanupTimeout)
		if k.keeper != nil || k.ref.EnvironmentCreated || err != nil {
			report(node, envID, err)
		}
	}
	g, ok := e.Provider.(contract.EnvironmentGetter)
	if !ok {
		return out
	}
	// What a process before this one left: one cleanup window for all.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kernel.DefaultCleanupTimeout)
	defer cancel()
	for _, node := range slices.Sorted(maps.Keys(settled)) {
		ref := checkedRef(settled[node])
		if ref == nil || !ref.EnvironmentCreated || held[ref.Run.EnvironmentID] || ref.Run.Provider != e.Provider.Name() {
			continue
		}
		held[ref.Run.EnvironmentID] = true
		env, err := g.Get(lctx, ref.Run.EnvironmentID)
		switch {
		case err != nil:
			report(node, ref.Run.EnvironmentID, fmt.Errorf("supervise: looking the kept environment %s up to destroy it: %w", ref.Run.EnvironmentID, err))
		case env != nil:
			report(node, ref.Run.EnvironmentID, (&keptSession{env: env, ref: *ref}).release(lctx, kernel.DefaultCleanupTimeout))
		}
	}
	return out
}

// keepSettled keeps the environment of a worker that settled in it, when
// a resume may follow: the executor resumes sessions and the provider
// proves the boundary of session (the one the worker's last turn
// observed: its native session id names its session). It
// reports whether it kept it (then out.SessionRef names it); otherwise
// the caller releases the environment.
func (e *KernelExecutor) keepSettled(ctx context.Context, w Work, k *keptSession, session string, out *WorkResult) bool {
	if k.env == nil || session == "" || !e.ResumesSessions() {
		return false
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), kernel.DefaultCleanupTimeout)
	defer cancel()
	run, err := kernel.ContinuableRun(pctx, k.env, session)
	if err != nil {
		if e.Logger != nil {
			e.Logger.Info("supervise: a worker's session cannot be continued; releasing its environment", "node", w.Node, "err", err)
		}
		return false
	}
	k.ref.Run = run
	if !e.keep.put(w.RunID, w.Node, k) {
		return false
	}
	out.SessionRef = checkedRef(&k.ref)
	return true
}

// resume runs a continuity-resume worker (w.ResumeOf): it takes over the
// environment the prior worker left — kept in this process, or found by
// its journaled id through the provider (contract.EnvironmentGetter) —
// and continues its session natively (kernel.Request.Continue), turn
// after turn while its inbox holds steers. Whatever cannot be proven
// before dispatch refuses the worker (*ResumeRefusedError, nothing
// spent); it never runs fresh.
func (e *KernelExecutor) resume(ctx context.Context, w Work, maxSteer int) (WorkResult, error) {
	refuse := func(reason string, err error, format string, args ...any) (WorkResult, error) {
		w.Inbox.Seal(ctx)
		return WorkResult{Spent: zeroSpend()}, &ResumeRefusedError{Node: w.Node, Of: w.ResumeOf, Reason: reason, Detail: fmt.Sprintf(format, args...), Err: err}
	}
	if e == nil || e.Provider == nil || e.Store == nil || !e.ResumesSessions() {
		return refuse(ResumeNotProven, nil, "the executor's provider declares no native continuation with an atomic boundary and request idempotency")
	}
	k := e.keep.take(w.RunID, w.ResumeOf)
	if k == nil {
		ref := checkedRef(w.ResumeRef)
		if ref == nil {
			return refuse(ResumeNoSession, nil, "worker %s left no session that can be continued", w.ResumeOf)
		}
		if ref.Run.Provider != e.Provider.Name() {
			return refuse(ResumeEnvironmentGone, nil, "the session is held by provider %s, not this executor's %s", ref.Run.Provider, e.Provider.Name())
		}
		g, ok := e.Provider.(contract.EnvironmentGetter)
		if !ok {
			return refuse(ResumeEnvironmentGone, nil, "this process does not hold environment %s and provider %s cannot look environments up", ref.Run.EnvironmentID, e.Provider.Name())
		}
		gctx, cancel := context.WithTimeout(ctx, kernel.DefaultCleanupTimeout)
		env, err := g.Get(gctx, ref.Run.EnvironmentID)
		cancel()
		switch {
		case err != nil:
			return refuse(ResumeEnvironmentGone, err, "looking environment %s up: %v", ref.Run.EnvironmentID, err)
		case env == nil:
			return refuse(ResumeEnvironmentGone, nil, "provider %s no longer has environment %s", e.Provider.Name(), ref.Run.EnvironmentID)
		}
		k = &keptSession{env: env, ref: *ref}
	}
	asking := newAskWorker(ctx, w, e.Logger)
	defer asking.close()
	asking.mu.Lock()
	asking.envs[k.env.ID()] = k.env
	asking.mu.Unlock()
	w.Observer = asking.observer(w.Observer)
	if w.Running != nil {
		w.Running() // nothing to acquire: the environment exists
	}
	out, err := e.runTurns(ctx, w, maxSteer, e.continueTurns(w, k))
	if rr, ok := errors.AsType[*ResumeRefusedError](err); ok && rr.Reason == ResumeNotProven {
		// Nothing was dispatched: the session is as the prior worker left
		// it, still kept under its node.
		if !e.keep.put(w.RunID, w.ResumeOf, k) {
			e.releaseInto(ctx, w, k, &out)
		}
		return out, err
	}
	if e.keepSettled(ctx, w, k, k.ref.Run.SessionID, &out) {
		return out, err
	}
	e.releaseInto(ctx, w, k, &out)
	return out, err
}

// releaseInto releases k, naming an unconfirmed teardown in out. A
// worker whose context ended with a cause matching contract.ErrLeaseLost
// (its run is no longer this process's) releases nothing: the run's
// next holder may be recovering the execution in that environment, and
// destroying it would end the turn as a cancel would. The environment
// is named in out.TeardownUnconfirmed: it may still exist.
func (e *KernelExecutor) releaseInto(ctx context.Context, w Work, k *keptSession, out *WorkResult) {
	envID := ""
	switch {
	case k.keeper != nil:
		envID = k.keeper.EnvironmentID()
	case k.ref.EnvironmentCreated && k.env != nil:
		envID = k.env.ID()
	}
	if cause := context.Cause(ctx); errors.Is(cause, contract.ErrLeaseLost) {
		if envID != "" {
			out.TeardownUnconfirmed = joinDetail(out.TeardownUnconfirmed,
				fmt.Sprintf("environment %s was left to the run's next holder: %v", envID, cause))
			if e.Logger != nil {
				e.Logger.Warn("supervise: leaving a worker's environment to the run's next holder", "node", w.Node, "env", envID, "err", cause)
			}
		}
		return
	}
	err := k.release(ctx, kernel.DefaultCleanupTimeout)
	if envID != "" {
		// One this process destroys (or tried to): journaled as
		// environment-teardown.
		t := EnvironmentTeardown{Provider: e.providerName(), EnvironmentID: envID, Destroyed: err == nil}
		if err != nil {
			t.Detail = err.Error()
		}
		out.Teardowns = append(out.Teardowns, t)
	}
	if err != nil {
		out.TeardownUnconfirmed = joinDetail(out.TeardownUnconfirmed, err.Error())
		if e.Logger != nil {
			e.Logger.Error("supervise: destroying a worker's environment", "node", w.Node, "err", err)
		}
	}
}

// continueTurns is the plan of w's turns as native continuations of
// k's session: each turn goes on from the run the one before left. A
// first turn the provider could not prove is a *ResumeRefusedError with
// nothing spent.
func (e *KernelExecutor) continueTurns(w Work, k *keptSession) turnPlan {
	session := cmp.Or(w.ResumeSession, k.ref.Run.SessionID)
	return turnPlan{
		request: func(id, task string) kernel.Request {
			return kernel.Request{Profile: w.Profile, Task: task, Provider: e.Provider, Store: e.Store,
				RunID: id, Kind: WorkerRunKind, JudgedBy: w.JudgedBy(), Observer: w.Observer,
				Continue: &kernel.Continue{Environment: k.env, Run: k.ref.Run, NativeSessionID: session}}
		},
		refused: func(err error) error {
			if ce, ok := errors.AsType[*kernel.ContinuityError](err); ok {
				return &ResumeRefusedError{Node: w.Node, Of: w.ResumeOf, Reason: ResumeNotProven, Detail: ce.Reason, Err: err}
			}
			return nil
		},
		session: session,
		next: func(ctx context.Context) (func(), bool) {
			// The next turn goes on from the run this one left.
			pctx, cancel := context.WithTimeout(ctx, kernel.DefaultCleanupTimeout)
			next, err := kernel.ContinuableRun(pctx, k.env, k.ref.Run.SessionID)
			cancel()
			if err != nil {
				return nil, false
			}
			return func() { k.ref.Run = next }, true
		},
	}
}

// releaseSessions has an executor that keeps settled workers'
// environments (SessionReleaser) release them at run end, journaling
// each whose teardown it could not confirm teardown-unconfirmed.
func (c *Coordinator) releaseSessions(ctx context.Context) {
	r, ok := c.exec.(SessionReleaser)
	if !ok {
		return
	}
	bg := context.WithoutCancel(ctx)
	settled := map[NodeID]*SessionRef{}
	c.mu.Lock()
	for id, w := range c.workers {
		if w.sessionRef != nil {
			settled[id] = w.sessionRef
		}
	}
	c.mu.Unlock()
	if rt, ok := r.(SessionTeardowns); ok {
		for _, t := range rt.ReleaseSessionTeardowns(bg, c.runID, settled) {
			c.environmentTeardowns(bg, t.Node, []EnvironmentTeardown{t.Teardown})
			if !t.Teardown.Destroyed {
				info, _ := c.scope.Node(t.Node)
				c.teardownUnconfirmed(bg, t.Node, RuntimeOf(c.exec), info.State, t.Teardown.Detail)
			}
		}
		return
	}
	for _, u := range r.ReleaseSessions(bg, c.runID, settled) {
		info, _ := c.scope.Node(u.Node)
		c.teardownUnconfirmed(bg, u.Node, RuntimeOf(c.exec), info.State, u.Detail)
	}
}
