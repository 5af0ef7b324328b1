package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/ctxsleep"
	"github.com/agentrt/agentrt/store"
)

// Lifecycle defaults and limits, the same for every front door.
const (
	// DefaultLeaseTTL is a run's lease when the options leave it zero: a
	// run whose process dies reads as interrupted this long after its
	// last renewal.
	DefaultLeaseTTL = 15 * time.Second
	// MinLeaseTTL is the shortest lease a run may ask for. The lease is
	// renewed every third of its length, and one store round trip must
	// fit in that with room to spare; a shorter lease is refused, never
	// stretched.
	MinLeaseTTL = time.Second
	// DefaultCleanupTimeout bounds the store and provider calls a run
	// makes once its context has ended or it has begun to finish
	// (recording the last events, the ledger entry and the terminal
	// state; destroying the environment), and each call of the lease
	// heartbeat: a front door returns at most this long after the
	// caller's deadline, even when the store stops answering.
	DefaultCleanupTimeout = 5 * time.Second
)

// ErrInvalidOptions matches every *OptionsError: a front door's options
// were refused before anything was recorded or spent.
var ErrInvalidOptions = errors.New("kernel: invalid options")

// OptionsError names one refused option of a front door.
type OptionsError struct {
	// Field is the option's name as the options struct spells it.
	Field string
	// Problem says what is wrong with it.
	Problem string
}

func (e *OptionsError) Error() string {
	return fmt.Sprintf("kernel: invalid options: %s: %s", e.Field, e.Problem)
}

// Is makes errors.Is(err, ErrInvalidOptions) match.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }

// optionErrors collects a front door's refused options.
type optionErrors []error

func (o *optionErrors) add(field, format string, args ...any) {
	*o = append(*o, &OptionsError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (o optionErrors) err() error { return errors.Join(o...) }

// lifeOptions are the options every front door shares for its record.
type lifeOptions struct {
	Store          store.Store
	RunID, Kind    string
	LeaseTTL       time.Duration
	CleanupTimeout time.Duration
	Logger         *slog.Logger
}

// check refuses what cannot be honored, naming each field, and fills in
// the defaults.
func (o *lifeOptions) check(errs *optionErrors) {
	if o.Store == nil {
		errs.add("Store", "a store is required: the run is recorded there")
	}
	switch {
	case o.LeaseTTL == 0:
		o.LeaseTTL = DefaultLeaseTTL
	case o.LeaseTTL < MinLeaseTTL:
		errs.add("LeaseTTL", "%v is below the minimum of %v", o.LeaseTTL, MinLeaseTTL)
	}
	switch {
	case o.CleanupTimeout == 0:
		o.CleanupTimeout = DefaultCleanupTimeout
	case o.CleanupTimeout < 0:
		errs.add("CleanupTimeout", "%v is negative", o.CleanupTimeout)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// LeaseLostError is the cause of a run cancelled because its process no
// longer holds the run's lease: it lapsed (the process was paused, or
// the store could not be reached to renew it), or another holder took
// the run over. Readers already see the run interrupted, and the store
// refuses everything more this process would record; the front door
// returns a *RunError with StatusInterrupted and ReasonLeaseLost. A run
// whose caller lost the lease it held the run under (Holder) is lost so
// too, and records itself interrupted.
type LeaseLostError struct {
	RunID string
	// Fence is the store's refusal, when a write was refused; nil when the
	// lease ran out before any write could say so.
	Fence *store.FenceError
	// Holder is the cause the run's caller's context ended with, when
	// that is why the run was lost: it matches contract.ErrLeaseLost (the
	// caller lost the lease it held the run under — a supervisor's spawn
	// journal or a fleet run's claim taken over), so the run is no longer
	// this process's though its own lease still held. Nil when the run's
	// own lease was lost.
	Holder error
}

func (e *LeaseLostError) Error() string {
	switch {
	case e.Fence != nil:
		return "the run's lease was lost: " + e.Fence.Error()
	case e.Holder != nil:
		return fmt.Sprintf("the caller of run %s lost the lease it held the run under: %v", e.RunID, e.Holder)
	}
	return fmt.Sprintf("the lease of run %s ran out before it could be renewed", e.RunID)
}

// Is makes errors.Is(err, contract.ErrLeaseLost) match: a provider
// seeing a turn's context end with this cause leaves the turn to
// whichever process holds the run now.
func (e *LeaseLostError) Is(target error) bool { return target == contract.ErrLeaseLost }

// Unwrap returns the store's refusal, or the caller's loss (Holder).
func (e *LeaseLostError) Unwrap() error {
	if e.Fence == nil {
		return e.Holder
	}
	return e.Fence
}

// life is one run's lifecycle, owned once for every front door: the run
// is created under this process's lease, every later write is fenced by
// the lease generation, the lease is renewed (and cancel requests
// watched) by a heartbeat that holds no lock across I/O, each record
// write of the live run is bounded by the lease (liveWrite), and every
// store call made after the run's context ended, or once it is
// finishing, is bounded by the cleanup timeout.
type life struct {
	s       store.Store
	fence   store.Fence
	ttl     time.Duration
	cleanup time.Duration
	log     *slog.Logger
	cancel  context.CancelCauseFunc

	// io is the context of the run's store and cleanup calls: detached
	// from the caller's cancellation so that what happened is recorded,
	// and cancelled cleanup after the caller's context ends or the run
	// begins to finish, whichever is first.
	io       context.Context
	ioCancel context.CancelFunc
	// caller is the caller's context: the terminal write is tried again
	// only while it lives (see end).
	caller    context.Context
	armOnce   sync.Once
	stopAfter func() bool

	// leaseUntil is when the lease lapses, as last renewed: nanoseconds
	// after base, on the monotonic clock (see until). A step of the wall
	// clock — a VM's time sync — neither lapses a lease this process
	// renewed in time nor stretches one it did not; another process
	// reads the store's wall-clock LeaseUntil, and the fence keeps what
	// it decides.
	base       time.Time
	leaseUntil atomic.Int64
	// lost is set once this process knows it no longer holds the lease,
	// after the run was cancelled with the loss (loseLease); lossMu
	// serializes the goroutines that find it.
	lost   atomic.Pointer[LeaseLostError]
	lossMu sync.Mutex
	// lostC is closed when lost is set.
	lostC chan struct{}

	beat *heartbeat
}

// startLife records a new run (status running, this process's lease) and
// starts its heartbeat. cancel is called with the cause when a cancel
// request arrives or the lease is lost.
func startLife(ctx context.Context, o lifeOptions, doc canonjson.Value, cancel context.CancelCauseFunc) (*life, error) {
	l := &life{s: o.Store, ttl: o.LeaseTTL, cleanup: o.CleanupTimeout, log: o.Logger, cancel: cancel, caller: ctx, lostC: make(chan struct{}), base: time.Now()}
	l.io, l.ioCancel = context.WithCancel(context.WithoutCancel(ctx))
	l.stopAfter = context.AfterFunc(ctx, l.armCleanup)
	until := time.Now().Add(l.ttl)
	run := store.Run{ID: o.RunID, Kind: o.Kind, Status: store.StatusRunning, Owner: owner(), LeaseUntil: until, Doc: doc}
	// The create is bounded by the lease it grants: a record that lands
	// after that reads interrupted at once, and a caller without a
	// deadline must not wait forever on a store that stopped answering.
	cctx, cancelCreate := context.WithTimeout(l.bounded(ctx), l.ttl)
	created, err := o.Store.CreateRun(cctx, run)
	cancelCreate()
	if err != nil {
		l.release()
		if ctx.Err() == nil && !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrInvalid) {
			err = &StoreError{RunID: o.RunID, Op: "create", Err: err}
		}
		return nil, fmt.Errorf("kernel: recording run %s: %w", o.RunID, err)
	}
	l.fence = created.Fence()
	l.setUntil(until)
	l.beat = startHeartbeat(l)
	return l, nil
}

// bounded returns ctx for a call made while ctx is live, bounded by
// ctx's own deadline; once ctx has ended, the run's cleanup context.
func (l *life) bounded(ctx context.Context) context.Context {
	if ctx.Err() == nil {
		return ctx
	}
	l.armCleanup()
	return l.io
}

// armCleanup starts the cleanup window: the run's remaining store and
// provider calls must end within it.
func (l *life) armCleanup() {
	l.armOnce.Do(func() { time.AfterFunc(l.cleanup, l.ioCancel) })
}

// teardownCtx is the context of destroying the run's environment: the
// run's I/O context, but given at most half the cleanup window, so that
// a provider that does not answer leaves the run's last records (its
// ledger entry, its end) the time to be written — and bounded by the
// lease (leaseBound): once it lapses another process may take the run
// over and re-attach to the environment, and a destroy landing then
// would end that holder's turn.
func (l *life) teardownCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(l.io, l.cleanup/2)
	bound, cancelBound := l.leaseBound(ctx)
	return bound, func() { cancelBound(); cancel() }
}

// leaseBound returns ctx bounded by this process's lease as the
// heartbeat renews it: it ends, its cause the *LeaseLostError, as soon
// as the lease is found lost or, as last renewed, runs out. A call that
// must not land once another process may hold the run runs under it
// (a provider that received it before then may still act on it: the
// bound shrinks that window to the call's flight, it cannot fence a
// provider).
func (l *life) leaseBound(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		for {
			t := time.NewTimer(time.Until(l.until()))
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-l.lostC:
				t.Stop()
			case <-t.C:
			}
			if err := l.holds(); err != nil {
				cancel(err)
				return
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// writeCtx is the context of a terminal write: the run's I/O context, so
// that what happened is recorded after the caller cancels, within the
// cleanup window (end arms it before writing).
func (l *life) writeCtx() context.Context { return l.io }

// liveWrite makes one record write of the live run (an event, a ledger
// entry, the run's document, a confirmation). Its context is the run's
// I/O context — events that arrive as the caller cancels are still
// recorded, within the cleanup window — given a deadline at the lease's
// end as this process last renewed it when the write began: a write that
// has not returned by then would land after the lease lapsed, which
// fenced counts as a loss anyway, and one store call that hangs (a
// half-open connection) while renewals succeed on other connections must
// not hold the run, whose caller may have set no deadline, forever. A
// write cut by that deadline while the lease was renewed meanwhile is an
// error of the store (the run fails, ReasonStoreFailed); one cut after
// the lease lapsed is the *LeaseLostError. A fence refusal is noted
// (fenced) and returned as the store's *FenceError.
func (l *life) liveWrite(write func(ctx context.Context) error) error {
	if err := l.holds(); err != nil {
		return err
	}
	until := l.until()
	ctx, cancel := context.WithDeadline(l.io, until)
	defer cancel()
	err := l.fenced(write(ctx))
	if err == nil || errors.Is(err, store.ErrFenced) {
		return err
	}
	if lost := l.holds(); lost != nil {
		return lost
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && l.io.Err() == nil {
		return fmt.Errorf("the write did not return before the run's lease, as renewed when it began, ran out (%s): %w",
			until.UTC().Format(time.RFC3339Nano), err)
	}
	return err
}

// fenced notes a write refused because the lease no longer holds and
// cancels the run with that cause; it returns err unchanged. A write the
// store accepted, but that returned after the lease (as this process
// last renewed it) ran out, counts as a loss too: the store checked the
// fence when the write began, and a process paused inside the write may
// have committed it after readers saw the run interrupted — so the run
// must not go on as if it still held the lease. So does a write that
// failed and returned after the lease ran out: its failure is the lost
// lease's (TestWriteFailingAfterThePausedLeaseLapsedIsALostLease).
func (l *life) fenced(err error) error {
	if fe, ok := errors.AsType[*store.FenceError](err); ok {
		l.loseLease(&LeaseLostError{RunID: l.fence.RunID, Fence: fe})
	} else if l.lapsed(time.Now()) {
		// Whether it landed or failed, a write that returned after the
		// lease lapsed was this process's no more: a failure then (the
		// database closed the connection of a process paused past its
		// lease) is the lost lease's, not the store's, and the run is cut
		// off as a lost lease cuts it — before its consumer stops reading,
		// so that a provider leaves the turn to the next holder.
		l.loseLease(&LeaseLostError{RunID: l.fence.RunID})
	}
	return err
}

// lapsed reports whether the lease, as last renewed, had run out at now.
func (l *life) lapsed(now time.Time) bool { return now.After(l.until()) }

// until is when the lease lapses, as last renewed, with a monotonic
// reading (comparisons with time.Now ignore wall-clock steps).
func (l *life) until() time.Time { return l.base.Add(time.Duration(l.leaseUntil.Load())) }

// setUntil records until, a time.Now()-based instant, as the lease's
// end.
func (l *life) setUntil(until time.Time) { l.leaseUntil.Store(int64(until.Sub(l.base))) }

// loseLease cancels the run with the loss, starts the cleanup window — a
// write still in flight can no longer land as this process's, and the
// front door must end soon, whichever context its lifecycle watches —
// and only then notes the loss where every other goroutine looks for it
// (holds, leaseLost, lostC). That order is the rule: a goroutine that
// learns of the loss from the note (the run's consumer, whose next write
// holds refuses) stops reading its turn, and its provider must then find
// the turn's context already ended with the *LeaseLostError — a remote
// provider seeing a caller stop without it cancels the turn on the
// server, and the run's next holder may have re-attached to that turn
// (TestConsumerStopsOnlyAfterTheLostLeaseCutTheTurn). A second loser
// waits on lossMu until the first has cut the run.
func (l *life) loseLease(e *LeaseLostError) {
	l.lossMu.Lock()
	first := l.lost.Load() == nil
	if first {
		l.cancel(e)
		l.armCleanup()
		l.lost.Store(e)
		close(l.lostC)
	}
	l.lossMu.Unlock()
	if first {
		l.log.Warn("lease lost", "run", l.fence.RunID, "err", e)
	}
}

// leaseLost returns why this process no longer holds the run, or nil.
// A run whose caller's context ended with a cause matching
// contract.ErrLeaseLost is lost here, as if its own lease were
// (loseLease, the cause as the *LeaseLostError's Holder): the caller no
// longer holds the work the run does, and its successor may have
// re-attached to the run's environment and turn, so the run must not
// record itself cancelled (the work's end, to a successor's recovery)
// nor destroy its environment. The turn's context already ended with
// that cause, so a provider leaves the turn running.
func (l *life) leaseLost() *LeaseLostError {
	if lost := l.lost.Load(); lost != nil {
		return lost
	}
	if l.caller.Err() != nil {
		if cause := context.Cause(l.caller); errors.Is(cause, contract.ErrLeaseLost) {
			// The run's own loss, cancelled with before it is noted,
			// matches too: loseLease waits for it and keeps it.
			l.loseLease(&LeaseLostError{RunID: l.fence.RunID, Holder: cause})
			return l.lost.Load()
		}
	}
	return nil
}

// holds reports whether this process may still write: nil, or the
// *LeaseLostError. The store fences every write, but a process knows
// first when its own lease ran out (it was paused, or its renewals
// failed), and a write it does not send cannot land late.
func (l *life) holds() error {
	if lost := l.leaseLost(); lost != nil {
		return lost
	}
	if l.lapsed(time.Now()) {
		l.loseLease(&LeaseLostError{RunID: l.fence.RunID})
		return l.leaseLost()
	}
	return nil
}

// confirm proves, by a write fenced by the lease generation that also
// renews the lease, that this process holds the run now; it returns the
// lease's new end. ctx bounds the write too. A lease found lost (by the
// store's fence, or by this process's clock when the write returned) is
// the *LeaseLostError.
func (l *life) confirm(ctx context.Context) (time.Time, error) {
	until := time.Now().Add(l.ttl)
	err := l.liveWrite(func(wctx context.Context) error {
		cctx, cancel := context.WithCancel(wctx)
		defer cancel()
		defer context.AfterFunc(ctx, cancel)()
		_, err := l.s.UpdateFenced(cctx, l.fence, func(r *store.Run) error {
			r.LeaseUntil = until
			return nil
		})
		return err
	})
	if lost := l.leaseLost(); lost != nil {
		return time.Time{}, lost
	}
	if err != nil {
		return time.Time{}, err
	}
	l.setUntil(until)
	return until, nil
}

// appendEvents durably appends events, fenced, bounded as liveWrite says.
func (l *life) appendEvents(events []store.NewEvent) ([]store.Event, error) {
	var out []store.Event
	err := l.liveWrite(func(ctx context.Context) (err error) {
		out, err = l.s.AppendEvents(ctx, l.fence, events)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// appendLedger durably appends ledger entries, fenced, bounded as
// liveWrite says.
func (l *life) appendLedger(bodies []canonjson.Value, at time.Time) error {
	return l.liveWrite(func(ctx context.Context) error {
		_, err := l.s.AppendLedger(ctx, l.fence, bodies, at)
		return err
	})
}

// appendClosing appends the run's closing ledger entry (what the run
// spent, as its record states it) at its end: as appendLedger, and an
// append the store did not take is tried again as the terminal write is
// (retryEnding) — a few seconds' outage must not leave the ledger
// stating only the run's last progress, a floor, while its record
// states its whole usage. An entry is a snapshot, not an increment (the
// run's spend is its last entry), so a try that landed though its
// answer was lost, appended again, states the same spend.
func (l *life) appendClosing(entry canonjson.Value, at time.Time) error {
	bodies := []canonjson.Value{entry}
	err := l.appendLedger(bodies, at)
	return l.retryEnding(err, func(ctx context.Context) error {
		_, err := l.s.AppendLedger(ctx, l.fence, bodies, at)
		return l.fenced(err)
	})
}

// updateDoc replaces the live run's document, fenced, bounded as
// liveWrite says.
func (l *life) updateDoc(doc canonjson.Value) error {
	return l.liveWrite(func(ctx context.Context) error {
		_, err := l.s.UpdateFenced(ctx, l.fence, func(r *store.Run) error {
			r.Doc = keepCancelRequest(r.Doc, doc)
			return nil
		})
		return err
	})
}

// finishing starts the cleanup window: from here on the run's remaining
// calls are bounded even if the caller's context never ends. The lease
// is still renewed until end.
func (l *life) finishing() { l.armCleanup() }

// end records the run's one terminal state and releases the lease,
// fenced. doc builds the run's final document; it is given the
// *LeaseLostError when the lease was lost (then the document must say
// the run was interrupted), nil otherwise. A lost lease is returned as
// the *LeaseLostError. A terminal write the store did not take is tried
// again, pausing between tries, until it lands, the lease (no longer
// renewed) would lapse or the caller's context ends.
//
// When the lease was lost, end records nothing but the truth readers
// already see: if the store still holds this process's fence (a write
// that landed late re-extended the lease, or the loss was seen here
// first), the run is recorded interrupted; otherwise the store refuses,
// and the run reads interrupted already.
func (l *life) end(status store.Status, doc func(lost *LeaseLostError) canonjson.Value) (store.Run, error) {
	l.finishing()
	l.beat.stop()
	if l.holds() != nil {
		return store.Run{}, l.recordLost(doc)
	}
	final := doc(nil)
	write := func(ctx context.Context) (store.Run, error) {
		return l.s.UpdateFenced(ctx, l.fence, func(r *store.Run) error {
			r.Status, r.LeaseUntil, r.Doc = status, time.Time{}, keepCancelRequest(r.Doc, final)
			return nil
		})
	}
	ended, err := write(l.writeCtx())
	// A terminal write the store did not take is tried again while the
	// lease holds: a turn that finished must not read interrupted, and be
	// run again, for a few seconds' outage.
	err = l.retryEnding(err, func(ctx context.Context) (err error) {
		ended, err = write(ctx)
		return err
	})
	if err := l.fenced(err); err != nil {
		if l.leaseLost() != nil {
			return store.Run{}, l.recordLost(doc)
		}
		return store.Run{}, unrecordedEnd(l.fence.RunID, status, err)
	}
	return ended, nil
}

// retryEnding tries again a write of the run's end (its terminal state,
// its closing ledger entry) that the store did not take — err, the
// first try's error: it failed, or did not answer — while this process
// still holds the lease and its caller still waits: nobody else can take
// the run over until the lease lapses, so the write may still land once
// the store answers. It pauses endRetryFirst, doubling per try up to
// endRetryMost, between tries; each try (made by try, with ctx) and each
// pause is bounded by the lease as renewed when the tries began and by
// the caller's context (a caller whose context ended gets the cleanup
// window only, as every front door promises), not by the cleanup window,
// which an outage may outlast. A refusal (the fence, or a record the store finds
// invalid) is not an outage, and a lost lease ends the tries. It returns
// the last try's error.
func (l *life) retryEnding(err error, try func(ctx context.Context) error) error {
	// The lease as it is now bounds every try, though the heartbeat may
	// renew it meanwhile (a closing ledger entry is written before end
	// stops it): a store that keeps refusing one write while it takes the
	// renewals must not hold the run forever.
	until := l.until()
	for n := 0; err != nil && !errors.Is(err, store.ErrFenced) && !errors.Is(err, store.ErrInvalid) && l.caller.Err() == nil; n++ {
		pause := min(endRetryFirst<<min(n, 4), endRetryMost)
		if l.leaseLost() != nil || time.Until(until) <= pause || !ctxsleep.Sleep(l.caller, pause) {
			break
		}
		ctx, cancel := context.WithDeadline(context.WithoutCancel(l.io), until)
		unhook := context.AfterFunc(l.caller, cancel)
		err = try(ctx)
		unhook()
		cancel()
	}
	return err
}

// The pause before a write of the run's end is tried again:
// endRetryFirst, doubling per try up to endRetryMost, while the lease
// holds (see retryEnding).
const (
	endRetryFirst = 100 * time.Millisecond
	endRetryMost  = time.Second
)

// unrecordedEnd is the error of a run whose terminal write failed (the
// store failed or did not answer within the cleanup window): interrupted,
// since that is what readers see once its lease, no longer renewed,
// lapses, never the status reached that this process could not record;
// ReasonStoreFailed, caused by a *StoreError of Op "end". It is the one
// owner of that rule: every front door (Execute, RunToolLoop, Rounds,
// RuntimeRun.Complete, ExecuteSeated, ResumeSeated) returns it as is.
func unrecordedEnd(runID string, reached store.Status, err error) *RunError {
	return &RunError{RunID: runID, Status: store.StatusInterrupted, Reason: ReasonStoreFailed,
		Detail: fmt.Sprintf("the store did not record the run's end as %s: %v", reached, err),
		Cause:  &StoreError{RunID: runID, Op: "end", Err: err}}
}

// recordLost records a run whose lease was lost as interrupted, where
// the store still lets this process (see end), and returns the loss.
func (l *life) recordLost(doc func(lost *LeaseLostError) canonjson.Value) *LeaseLostError {
	lost := l.leaseLost()
	final := doc(lost)
	l.s.UpdateFenced(l.writeCtx(), l.fence, func(r *store.Run) error {
		r.Status, r.LeaseUntil, r.Doc = store.StatusInterrupted, time.Time{}, keepCancelRequest(r.Doc, final)
		return nil
	})
	return lost
}

// release stops the heartbeat and frees the run's timers. It is
// idempotent.
func (l *life) release() {
	if l.beat != nil {
		l.beat.stop()
	}
	l.stopAfter()
	l.ioCancel()
}

// heartbeat renews a live run's lease every third of its length and
// watches the run record for a cancel request (RequestCancel, from any
// process) about twice a second. Each store call has its own deadline and
// no lock is held across one, so a store that stops answering neither
// blocks stop nor outlives the lease: when the lease runs out unrenewed,
// or the store refuses the renewal's fence, the run is cancelled with a
// *LeaseLostError.
type heartbeat struct {
	l        *life
	ctx      context.Context
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

func startHeartbeat(l *life) *heartbeat {
	h := &heartbeat{l: l, done: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	go h.loop()
	return h
}

func (h *heartbeat) loop() {
	defer close(h.done)
	l := h.l
	renewEvery := l.ttl / 3
	tick := min(renewEvery, leaseWatch)
	t := time.NewTimer(tick)
	defer t.Stop()
	lastRenewal, requested := time.Now(), false
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		if until := l.until(); now.After(until) {
			l.loseLease(&LeaseLostError{RunID: l.fence.RunID})
			return
		}
		if now.Sub(lastRenewal) >= renewEvery-tick/2 {
			if h.renew() {
				lastRenewal = now
			}
			if l.leaseLost() != nil {
				return
			}
		}
		if !requested {
			requested = h.watchCancel()
		}
		t.Reset(tick)
	}
}

// renew extends the lease; a call that fails for any reason other than
// the fence is retried at the next tick, until the lease runs out.
func (h *heartbeat) renew() bool {
	l := h.l
	ctx, cancel := context.WithTimeout(h.ctx, min(l.cleanup, l.ttl/3))
	defer cancel()
	until := time.Now().Add(l.ttl)
	_, err := l.s.UpdateFenced(ctx, l.fence, func(r *store.Run) error {
		r.LeaseUntil = until
		return nil
	})
	if err != nil {
		if l.fenced(err); l.leaseLost() == nil && h.ctx.Err() == nil {
			l.log.Warn("lease renewal", "run", l.fence.RunID, "err", err)
		}
		return false
	}
	// A renewal that returned after the old lease ran out may have been
	// applied after readers saw the run interrupted: the lease is lost,
	// whatever the store now says (end records the run interrupted).
	if l.lapsed(time.Now()) {
		l.loseLease(&LeaseLostError{RunID: l.fence.RunID})
		return false
	}
	l.setUntil(until)
	return true
}

// watchCancel looks for a cancel request and cancels the run with it;
// it reports whether it found one.
func (h *heartbeat) watchCancel() bool {
	l := h.l
	ctx, cancel := context.WithTimeout(h.ctx, min(l.cleanup, leaseWatch))
	defer cancel()
	r, err := l.s.GetRun(ctx, l.fence.RunID)
	if err != nil {
		return false
	}
	v, ok := r.Doc.Get(cancelMember)
	if !ok {
		return false
	}
	reason, _ := v.Get("reason")
	l.cancel(&CancelRequestedError{RunID: l.fence.RunID, Reason: reason.Str()})
	return true
}

// stop ends the heartbeat: a store call in progress is cancelled, and
// stop waits for it at most the cleanup timeout (a store that ignores
// its context cannot hold the run).
func (h *heartbeat) stop() {
	h.stopOnce.Do(func() {
		h.cancel()
		select {
		case <-h.done:
		case <-time.After(h.l.cleanup):
		}
	})
}

// keepCancelRequest returns doc, the holder's new run document, with the
// cancel request another process recorded in old (RequestCancel): the
// holder's writes never erase it.
func keepCancelRequest(old, doc canonjson.Value) canonjson.Value {
	req, ok := old.Get(cancelMember)
	if !ok {
		return doc
	}
	if _, has := doc.Get(cancelMember); has {
		return doc
	}
	return doc.With(cancelMember, req)
}
