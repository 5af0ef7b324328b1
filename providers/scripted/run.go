package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// Errors of turn admission and session access. Each is wrapped, and each
// refusal happens before any effect.
var (
	// ErrTurnConflict: a turn id already admitted a different turn.
	ErrTurnConflict = errors.New("scripted: the turn id already admitted a different turn")
	// ErrSessionBusy: the session's current run has not ended.
	ErrSessionBusy = errors.New("scripted: the session's current run has not ended")
	// ErrUnknownSession: no session has that id.
	ErrUnknownSession = errors.New("scripted: no such session")
	// ErrUnknownRun: no run has exactly those coordinates.
	ErrUnknownRun = errors.New("scripted: no run has exactly those coordinates")
	// ErrCompetingRun: a control reference names another run than the
	// session's.
	ErrCompetingRun = errors.New("scripted: the control reference names a different run")
	// ErrUnknownEvent: a replay cursor names no event of the run.
	ErrUnknownEvent = errors.New("scripted: the replay cursor names no event of this run")
)

// sessionState is one provider session: the runs it holds, in order.
type sessionState struct {
	id string
	// runs is guarded by the environment's lock.
	runs []*runState
}

// runState is one run (one turn): its exact identity, its recorded
// events, how it ended, and its interactions.
type runState struct {
	env     *envState
	session *sessionState
	// ref is the run's identity; its RequestDigest is read through exact,
	// which computes the admission digest on first use (a streamed turn
	// nobody retains never pays for it).
	ref        contract.ExactRunControlRef
	digestOnce sync.Once
	digest     string
	turnNo     int
	input      *contract.TurnInput

	mu           sync.Mutex
	cancel       context.CancelFunc
	stopped      bool
	events       []contract.EnvironmentEvent
	changed      chan struct{}
	done         chan struct{}
	finished     bool
	terminal     contract.TerminalKind
	status       contract.SessionStatus
	err          error
	text         strings.Builder
	interactions map[string]*interactionState
	// receipt proves the context a transfer admitted into this run.
	receipt *contract.ContextTransferReceipt
}

func newRun(env *envState, session *sessionState, ref contract.ExactRunControlRef, turnNo int, in *contract.TurnInput) *runState {
	return &runState{env: env, session: session, ref: ref, turnNo: turnNo, input: in,
		done: make(chan struct{}), status: contract.SessionRunning}
}

// exact is the run's exact control reference, with its admission digest:
// the digest given at admission, else the turn's (turnDigest). A turn
// without a canonical form (which the typed input cannot express) gets
// the digest of its run's identity instead.
func (r *runState) exact() contract.ExactRunControlRef {
	r.digestOnce.Do(func() {
		r.digest = r.ref.RequestDigest
		if r.digest != "" {
			return
		}
		d, err := turnDigest(r.input)
		if err != nil {
			d, _ = contract.DigestOf(map[string]string{"undigestableTurn": r.ref.RunID})
		}
		r.digest = d
	})
	ref := r.ref
	ref.RequestDigest = r.digest
	return ref
}

// wake wakes the run's followers; the caller holds r.mu.
func (r *runState) wake() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// setCancel arms the run's cancellation; a run stopped before it armed is
// cancelled at once.
func (r *runState) setCancel(cancel context.CancelFunc) {
	r.mu.Lock()
	r.cancel = cancel
	stopped := r.stopped
	r.mu.Unlock()
	if stopped {
		cancel()
	}
}

// stop cancels the run if it is live.
func (r *runState) stop() {
	r.mu.Lock()
	r.stopped = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// live reports whether the run has not ended.
func (r *runState) live() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.finished
}

// record appends an event (or the run's breaking error) and wakes
// followers.
func (r *runState) record(ev contract.EnvironmentEvent, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.err = err
	} else {
		r.events = append(r.events, ev)
		if kind, ok := contract.EnvironmentEventTerminal(ev); ok && r.terminal == "" {
			r.terminal = kind
		}
	}
	r.wake()
}

// finish ends the run: its status follows its terminal event, else its
// error, else the cancellation of ctx; outstanding interactions are
// cancelled.
func (r *runState) finish(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	switch {
	case r.terminal == contract.TerminalCompleted:
		r.status = contract.SessionCompleted
	case r.terminal == contract.TerminalCancelled:
		r.status = contract.SessionCancelled
	case r.terminal != "" || r.err != nil:
		r.status = contract.SessionFailed
	case ctx.Err() != nil:
		r.status = contract.SessionCancelled
	default:
		r.status = contract.SessionUnknown
	}
	for _, is := range r.interactions {
		if is.state == interactionOutstanding {
			is.state = interactionCancelled
		}
	}
	r.finished = true
	close(r.done)
	r.wake()
}

// follow replays the run's events after the event id since (exclusive;
// "" from the start) and follows live ones until the run ends; a run
// that broke yields its error last.
func (r *runState) follow(ctx context.Context, since string) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		next := 0
		if since != "" {
			r.mu.Lock()
			next = -1
			for i, ev := range r.events {
				if ev.ID != nil && *ev.ID == since {
					next = i + 1
					break
				}
			}
			r.mu.Unlock()
			if next < 0 {
				yield(contract.EnvironmentEvent{}, fmt.Errorf("%w: %s", ErrUnknownEvent, since))
				return
			}
		}
		for {
			r.mu.Lock()
			batch := append([]contract.EnvironmentEvent(nil), r.events[next:]...)
			finished, err := r.finished, r.err
			if len(batch) == 0 && !finished && r.changed == nil {
				r.changed = make(chan struct{})
			}
			changed := r.changed
			r.mu.Unlock()
			for _, ev := range batch {
				if !yield(ev, nil) {
					return
				}
			}
			next += len(batch)
			if finished && len(batch) == 0 {
				if err != nil {
					yield(contract.EnvironmentEvent{}, err)
				}
				return
			}
			if len(batch) > 0 {
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
				yield(contract.EnvironmentEvent{}, ctx.Err())
				return
			}
		}
	}
}

// result is the run's turn result once it ended: its text, whether it
// completed, its error, its session, its usage when it reported exactly
// one usage figure (several figures are not summed here), and its events.
func (r *runState) result() *contract.TurnResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := &contract.TurnResult{Text: r.text.String(), Success: r.status == contract.SessionCompleted,
		SessionID: ptr(r.session.id), ContextTransferReceipt: r.receipt}
	var usage []*contract.TokenUsage
	for _, ev := range r.events {
		if ev.Usage != nil {
			usage = append(usage, ev.Usage)
		}
	}
	if len(usage) == 1 {
		u := *usage[0]
		res.Usage = &u
	}
	if n := len(r.events); n > 0 {
		res.Events = append([]contract.EnvironmentEvent(nil), r.events[max(0, n-contract.MaxArrayLength):]...)
	}
	if !res.Success {
		msg := "the turn ended " + string(r.status)
		switch {
		case r.err != nil:
			msg = r.err.Error()
		case r.status == contract.SessionUnknown:
			msg = "the turn ended without a terminal event"
		}
		res.Error = &msg
	}
	return res
}

// wait blocks until the run ended or ctx is done.
func (r *runState) wait(ctx context.Context) error {
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sessionRef is the reference Dispatch returns for the run.
func (r *runState) sessionRef() *contract.SessionRef {
	ref := r.exact().Ref()
	return &contract.SessionRef{ID: r.session.id, Provider: ptr(r.ref.Provider), ControlRef: &ref}
}

// executionBinding is the interaction binding of the run.
func (r *runState) executionBinding() contract.InteractionExecutionBinding {
	return contract.InteractionExecutionBinding{RunID: r.ref.RunID, Provider: r.ref.Provider,
		EnvironmentID: r.ref.EnvironmentID, SessionID: r.ref.SessionID, ExecutionID: r.ref.ExecutionID}
}

// turnDigest is a turn's admission digest: the digest of the turn as sent,
// without its detach flag (a transport choice, not the turn).
func turnDigest(in *contract.TurnInput) (string, error) {
	v, err := canonjson.ToValue(in)
	if err != nil {
		return "", err
	}
	return contract.DigestOf(v.Without("detach"))
}

// play runs one admitted turn, sending every event and error to yield.
type play func(ctx context.Context, yield func(contract.EnvironmentEvent, error) bool)

// start checks and admits one turn of env: it returns the new run and how
// to play it, or an earlier run and no play when the turn reattaches to
// it (a control reference, or a turn id already admitted with the same
// turn). Every refusal happens before any effect.
func (e *environment) start(ctx context.Context, in *contract.TurnInput) (*runState, play, error) {
	if in == nil {
		in = &contract.TurnInput{}
	}
	st, b := e.st, e.st.b
	if st.isDestroyed() {
		return nil, nil, st.gone()
	}
	prof := st.profile
	if in.Profile != nil {
		if err := contract.CheckProfileSupport(&b.caps.Profile, in.Profile); err != nil {
			return nil, nil, fmt.Errorf("scripted: turn refused before dispatch: %w", err)
		}
		prof = in.Profile
	}
	switch {
	case in.ContextTransfer != nil:
		return nil, nil, fmt.Errorf("scripted: a turn does not carry a context transfer; use the provider's TransferContext: %w", contract.ErrUnsupported)
	case in.NativeContinuation != nil:
		return nil, nil, fmt.Errorf("scripted: a turn does not carry a native continuation; use Session.ContinueNative: %w", contract.ErrUnsupported)
	case in.ControlRef != nil:
		run, err := st.findRun(*in.ControlRef)
		return run, nil, err
	}
	// The admission digest is computed now only to compare a turn id's
	// turns; otherwise the run computes it when first needed.
	digest := ""
	if in.TurnID != nil {
		var err error
		if digest, err = turnDigest(in); err != nil {
			return nil, nil, fmt.Errorf("scripted: the turn has no canonical form: %w", err)
		}
		st.mu.Lock()
		prior := st.turnKeys[*in.TurnID]
		st.mu.Unlock()
		if prior != nil {
			if prior.exact().RequestDigest != digest {
				return nil, nil, fmt.Errorf("%w: %s", ErrTurnConflict, *in.TurnID)
			}
			return prior, nil, nil
		}
	}
	if err := st.checkSession(in.SessionID); err != nil {
		return nil, nil, err
	}
	if err := b.bind(in.Credential); err != nil {
		return nil, nil, err
	}
	prompt := promptText(in)
	var turn Turn
	if b.answer == nil {
		var ok bool
		if turn, ok = b.nextTurn(prompt); !ok {
			return nil, nil, fmt.Errorf("scripted: no scripted turn matches prompt %q", truncate(prompt, 80))
		}
	}
	run, err := st.admit(in, digest, nil)
	if err != nil {
		return nil, nil, err
	}
	started := func() {
		b.turns.Add(1)
		if b.onTurn != nil {
			ts := TurnStarted{EnvironmentID: st.id, Prompt: prompt}
			if in.TurnID != nil {
				ts.TurnID = *in.TurnID
			}
			b.onTurn(ts)
		}
	}
	if b.answer != nil {
		return run, func(ctx context.Context, yield func(contract.EnvironmentEvent, error) bool) {
			started()
			pl := &player{env: st, run: run, yield: yield, now: b.now, prompt: prompt}
			pl.worker(ctx, in)
		}, nil
	}
	return run, func(ctx context.Context, yield func(contract.EnvironmentEvent, error) bool) {
		started()
		pl := &player{env: st, run: run, yield: yield, now: b.now, prompt: prompt}
		pl.script(ctx, turn, served(b.script, turn, prof))
	}, nil
}

// checkSession refuses a turn into a session whose current run is live.
func (st *envState) checkSession(id *string) error {
	if id == nil {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if s := st.sessions[*id]; s != nil && len(s.runs) > 0 && s.runs[len(s.runs)-1].live() {
		return fmt.Errorf("%w: %s", ErrSessionBusy, *id)
	}
	return nil
}

// admit registers a new run of the turn in (its session named by the
// turn, else a new one) and execution (the turn's execution id, else a
// new one) with its admission digest; ids, when given, fix
// the session, run and execution ids (a context transfer destination).
func (st *envState) admit(in *contract.TurnInput, digest string, ids *contract.ExactRunControlRef) (*runState, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return nil, st.gone()
	}
	st.turn++
	n := st.turn
	ref := contract.ExactRunControlRef{Provider: st.b.name, EnvironmentID: st.id, RequestDigest: digest,
		RunID: fmt.Sprintf("%s-run-%d", st.id, n), ExecutionID: fmt.Sprintf("%s-exec-%d", st.id, n),
		SessionID: fmt.Sprintf("%s-session-%d", st.id, n)}
	if in.SessionID != nil {
		ref.SessionID = *in.SessionID
	}
	if in.ExecutionID != nil {
		// The caller names the execution (a retained run derives it from
		// its idempotency key and turn id); one execution id names one
		// run of the environment.
		for _, other := range st.runs {
			if other.ref.ExecutionID == *in.ExecutionID {
				return nil, fmt.Errorf("%w: execution id %s already names run %s", ErrTurnConflict, *in.ExecutionID, other.ref.RunID)
			}
		}
		ref.ExecutionID = *in.ExecutionID
	}
	if ids != nil {
		ref.SessionID, ref.RunID, ref.ExecutionID = ids.SessionID, ids.RunID, ids.ExecutionID
	}
	if _, taken := st.runs[ref.RunID]; taken {
		return nil, fmt.Errorf("scripted: run id %s is taken", ref.RunID)
	}
	s := st.sessions[ref.SessionID]
	if s == nil {
		s = &sessionState{id: ref.SessionID}
		if st.sessions == nil {
			st.sessions = map[string]*sessionState{}
		}
		st.sessions[s.id] = s
	} else if len(s.runs) > 0 && s.runs[len(s.runs)-1].live() {
		return nil, fmt.Errorf("%w: %s", ErrSessionBusy, s.id)
	}
	run := newRun(st, s, ref, n, in)
	s.runs = append(s.runs, run)
	if st.runs == nil {
		st.runs = map[string]*runState{}
	}
	st.runs[ref.RunID] = run
	if in.TurnID != nil {
		if st.turnKeys == nil {
			st.turnKeys = map[string]*runState{}
		}
		st.turnKeys[*in.TurnID] = run
	}
	return run, nil
}

// findRun returns the run a control reference names: every coordinate it
// states must be the run's.
func (st *envState) findRun(ref contract.RunControlRef) (*runState, error) {
	if _, err := contract.Validate(contract.KindRunControlRef, contract.RunControlRefSchema, ref); err != nil {
		return nil, err
	}
	st.mu.Lock()
	run := st.runs[ref.RunID]
	st.mu.Unlock()
	if run == nil || !sameCoordinates(ref, run.exact()) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownRun, ref.RunID)
	}
	return run, nil
}

// sameCoordinates reports whether every coordinate ref states is run's.
func sameCoordinates(ref contract.RunControlRef, run contract.ExactRunControlRef) bool {
	same := func(p *string, v string) bool { return p == nil || *p == v }
	return ref.RunID == run.RunID && ref.Provider == run.Provider && ref.EnvironmentID == run.EnvironmentID &&
		same(ref.SessionID, run.SessionID) && same(ref.ExecutionID, run.ExecutionID) && same(ref.RequestDigest, run.RequestDigest)
}

// Stream implements contract.Environment: it plays the next scripted turn
// for the turn's prompt, as a run of a session (the turn's session id,
// else a new session), so a later Session can replay it. A turn carrying
// a control reference, or a turn id already admitted with the same turn,
// follows the existing run instead of playing again.
func (e *environment) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return e.stream(ctx, in, false)
}

// StreamOwned implements contract.OwnedStreamer: Stream for the turn's
// execution owner, which first receives the private
// native.session.observed event naming the session the turn runs in —
// the scripted provider's own conversation identity, observed once the
// turn is admitted (NSO-01; the provider declares native continuation of
// exactly that session). The observation is never recorded in the run's
// replay, so no session or sidecar stream can carry it (NSO-03).
func (e *environment) StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return e.stream(ctx, in, true)
}

// observation is the private native session observation of run, or
// false when its names do not form one (then there is none to report).
func (e *environment) observation(run *runState) (contract.EnvironmentEvent, bool) {
	obs, err := contract.NewNativeSessionObserved(e.st.b.name, run.session.id)
	if err != nil {
		return contract.EnvironmentEvent{}, false
	}
	n := obs.Event()
	id := run.ref.ExecutionID + "-native"
	return contract.EnvironmentEvent{Type: contract.EventTypeNativeSessionObserved, ID: &id, Normalized: &n,
		Data: map[string]canonjson.Value{"provider": canonjson.StringValue(obs.Provider), "nativeSessionId": canonjson.StringValue(obs.NativeSessionID)}}, true
}

func (e *environment) stream(ctx context.Context, in *contract.TurnInput, owned bool) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		run, play, err := e.start(ctx, in)
		if err != nil {
			yield(contract.EnvironmentEvent{}, err)
			return
		}
		if owned {
			if ev, ok := e.observation(run); ok && !yield(ev, nil) {
				return
			}
		}
		if play == nil {
			for ev, err := range run.follow(ctx, "") {
				if !yield(ev, err) {
					return
				}
			}
			return
		}
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		run.setCancel(cancel)
		// A reader that stops reading before the turn ended walks away
		// from it: the turn is cancelled, as a remote server cancels the
		// turn of a caller that went away, and ends with its cancelled
		// terminal event, so that a turn that re-attaches to it (by its
		// turn id) replays how it ended rather than a stream that stops.
		reading := true
		play(runCtx, func(ev contract.EnvironmentEvent, err error) bool {
			run.record(ev, err)
			if reading && !yield(ev, err) {
				reading = false
				cancel()
			}
			return true
		})
		run.finish(runCtx)
	}
}

// Dispatch implements contract.Dispatcher: the turn runs detached from
// the caller (its context only bounds admission) and the returned
// reference names its session and exact run.
func (e *environment) Dispatch(ctx context.Context, in *contract.TurnInput) (*contract.SessionRef, error) {
	run, play, err := e.start(ctx, in)
	if err != nil {
		return nil, err
	}
	if play != nil {
		e.detach(run, play)
	}
	return run.sessionRef(), nil
}

// detach plays run in the background.
func (e *environment) detach(run *runState, p play) {
	runCtx, cancel := context.WithCancel(context.Background())
	run.setCancel(cancel)
	go func() {
		defer cancel()
		p(runCtx, func(ev contract.EnvironmentEvent, err error) bool {
			run.record(ev, err)
			return true
		})
		run.finish(runCtx)
	}()
}

// Session implements contract.SessionOpener. Without a reference the
// session is bound to its latest run. A reference must name a run of
// this session with every coordinate it states; a reference naming a
// different run is refused, so another run's events are never served.
func (e *environment) Session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error) {
	st := e.st
	st.mu.Lock()
	s, destroyed := st.sessions[id], st.destroyed
	var latest *runState
	if s != nil && len(s.runs) > 0 {
		latest = s.runs[len(s.runs)-1]
	}
	st.mu.Unlock()
	if destroyed {
		return nil, st.gone()
	}
	if s == nil || latest == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownSession, id)
	}
	cur := latest
	if ref != nil {
		run, err := st.findRun(*ref)
		if err != nil || run.session != s {
			return nil, fmt.Errorf("%w: session %s, run %s", ErrCompetingRun, id, ref.RunID)
		}
		cur = run
	}
	return e.sessionView(&session{e: e, s: s, cur: cur}), nil
}

// session is a client of one provider session, bound to one of its
// runs, with every ability but answering interactions.
type session struct {
	e  *environment
	s  *sessionState
	mu sync.Mutex
	// cur is the run the session is bound to.
	cur *runState
}

// Session is a client of one provider session of a provider that
// originates interactions, bound to one of its runs (the run its control
// reference names). Besides contract.Session it implements RunCanceller,
// NativeContinuer and InteractionResponder; sessions of a provider that
// originates no interactions have the same abilities but
// InteractionResponder.
type Session struct {
	*session
}

// plainSession is a session of a provider that originates no
// interactions.
type plainSession struct {
	*session
}

var (
	_ contract.Session              = (*Session)(nil)
	_ contract.RunCanceller         = (*Session)(nil)
	_ contract.NativeContinuer      = (*Session)(nil)
	_ contract.InteractionResponder = (*Session)(nil)
	_ contract.Session              = (*plainSession)(nil)
)

// sessionView returns s as the provider's clients see it.
func (e *environment) sessionView(s *session) contract.Session {
	if e.p.b.interactive {
		return &Session{s}
	}
	return &plainSession{s}
}

func (s *session) run() *runState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// ID implements contract.Session.
func (s *session) ID() string { return s.s.id }

// ControlRef implements contract.Session: the exact reference of the run
// the session is bound to.
func (s *session) ControlRef() *contract.RunControlRef {
	ref := s.run().exact().Ref()
	return &ref
}

// ObservedNativeSession implements contract.NativeSessionReporter: the
// native identity of the run the session is bound to — the session the
// turn runs in, as StreamOwned observes it — once a run was admitted.
func (s *session) ObservedNativeSession(context.Context) (*contract.NativeSessionObserved, bool, error) {
	r := s.run()
	if r == nil {
		return nil, false, nil
	}
	obs, err := contract.NewNativeSessionObserved(s.e.st.b.name, r.session.id)
	if err != nil {
		return nil, false, nil
	}
	return obs, true, nil
}

// Status implements contract.Session.
func (s *session) Status(ctx context.Context) (contract.SessionStatus, bool, error) {
	r := s.run()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status, true, nil
}

// Events implements contract.Session: the bound run's events after since,
// then live ones until the run ends. executionID, when set, selects
// another run of this session by its execution id.
func (s *session) Events(ctx context.Context, since, executionID string) iter.Seq2[contract.EnvironmentEvent, error] {
	r := s.run()
	if executionID != "" && executionID != r.ref.ExecutionID {
		st := s.e.st
		st.mu.Lock()
		r = nil
		for _, candidate := range s.s.runs {
			if candidate.ref.ExecutionID == executionID {
				r = candidate
			}
		}
		st.mu.Unlock()
		if r == nil {
			return func(yield func(contract.EnvironmentEvent, error) bool) {
				yield(contract.EnvironmentEvent{}, fmt.Errorf("%w: execution %s in session %s", ErrUnknownRun, executionID, s.s.id))
			}
		}
	}
	return r.follow(ctx, since)
}

// Result implements contract.Session: the bound run's result, once it
// ended.
func (s *session) Result(ctx context.Context) (*contract.TurnResult, error) {
	r := s.run()
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// Prompt implements contract.Session: it plays another turn in this
// session, waits for it, binds the session to it and returns its result.
func (s *session) Prompt(ctx context.Context, in *contract.TurnInput) (*contract.TurnResult, error) {
	turn := contract.TurnInput{}
	if in != nil {
		turn = *in
	}
	if turn.SessionID != nil && *turn.SessionID != s.s.id {
		return nil, fmt.Errorf("scripted: the turn names session %s, not %s", *turn.SessionID, s.s.id)
	}
	turn.SessionID = ptr(s.s.id)
	run, p, err := s.e.start(ctx, &turn)
	if err != nil {
		return nil, err
	}
	if p != nil {
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		run.setCancel(cancel)
		p(runCtx, func(ev contract.EnvironmentEvent, err error) bool {
			run.record(ev, err)
			return true
		})
		run.finish(runCtx)
	} else if err := run.wait(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.cur = run
	s.mu.Unlock()
	return run.result(), nil
}

// Cancel implements contract.Session: best-effort cancellation of the
// bound run.
func (s *session) Cancel(ctx context.Context) error {
	s.run().stop()
	return nil
}

// cancelRecord is an admitted cancellation operation.
type cancelRecord struct {
	digest string
	ack    contract.RunCancellationAcknowledgement
}

// CancelRun implements contract.RunCanceller. The request names one exact
// run of this session. A live run is asked to stop (cancel_requested); an
// ended run is not_live. The operation id is bound to the request
// digest: the same request again is replayed with the same effect; a
// different request under the same operation id is a conflict naming the
// original digest, with no effect; a run this session does not hold is
// unknown (not retryable) and binds nothing.
func (s *session) CancelRun(ctx context.Context, req *contract.RunCancellationRequest) (*contract.RunCancellationAcknowledgement, error) {
	if req == nil {
		return nil, errors.New("scripted: no cancellation request")
	}
	if _, err := contract.Validate(contract.KindRunCancellationRequest, contract.RunCancellationRequestSchema, req); err != nil {
		return nil, err
	}
	st := s.e.st
	st.mu.Lock()
	if rec := st.cancels[req.OperationID]; rec != nil {
		st.mu.Unlock()
		if rec.digest == req.RequestDigest {
			ack := rec.ack
			ack.Status = contract.StatusReplayed
			return &ack, nil
		}
		existing := rec.digest
		return &contract.RunCancellationAcknowledgement{OperationID: req.OperationID, RequestDigest: req.RequestDigest, Run: req.Run,
			Status: contract.StatusConflict, Effect: contract.EffectUnknown, ExistingRequestDigest: &existing,
			Message: ptr("the operation id is bound to a different cancellation request")}, nil
	}
	run := st.runs[req.Run.RunID]
	if run == nil || run.session != s.s || !contract.SameRunControlRef(run.exact(), req.Run) {
		st.mu.Unlock()
		return &contract.RunCancellationAcknowledgement{OperationID: req.OperationID, RequestDigest: req.RequestDigest, Run: req.Run,
			Status: contract.StatusUnknown, Effect: contract.EffectUnknown, Retryable: ptr(false),
			Message: ptr("this session holds no run with exactly these coordinates")}, nil
	}
	effect := contract.EffectNotLive
	if run.live() {
		effect = contract.EffectCancelRequested
	}
	ack := contract.RunCancellationAcknowledgement{OperationID: req.OperationID, RequestDigest: req.RequestDigest, Run: req.Run,
		Status: contract.StatusAccepted, Effect: effect}
	if st.cancels == nil {
		st.cancels = map[string]*cancelRecord{}
	}
	st.cancels[req.OperationID] = &cancelRecord{digest: req.RequestDigest, ack: ack}
	st.mu.Unlock()
	if effect == contract.EffectCancelRequested {
		run.stop()
	}
	return &ack, nil
}

func promptText(in *contract.TurnInput) string {
	if in == nil {
		return ""
	}
	var b strings.Builder
	if in.Prompt != nil {
		b.WriteString(*in.Prompt)
	}
	for _, part := range in.Parts {
		if part.Text != nil {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(*part.Text)
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
