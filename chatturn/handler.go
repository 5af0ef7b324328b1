package chatturn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// Content types of a turn's stream: NDJSON by default, server-sent
// events when the request accepts them.
const (
	ContentTypeNDJSON = "application/x-ndjson"
	ContentTypeSSE    = "text/event-stream"
)

// HeaderExecutionID names the turn's execution on the response and, on
// a request, the execution the client expects to (re-)attach to.
const HeaderExecutionID = "X-Execution-ID"

// Handler defaults.
const (
	DefaultTurnTimeout  = 15 * time.Minute
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultStoreTimeout bounds each store call a Handler makes
	// (Handler.StoreTimeout), as delegation's queue bounds its own.
	DefaultStoreTimeout = 10 * time.Second
	// pageSize is how many recorded lines a reader fetches at once.
	pageSize = 256
)

// KindChatTurn is the task id a durable turn's run record carries (the
// run itself is a kernel runtime run; its id is the execution id).
const KindChatTurn = "chat-turn"

// Handler serves chat turns over HTTP: each request runs, or re-attaches
// to, the turn Turn builds for it, and the response streams its lines.
//
// Without a Store the turn runs inside the request and ends with it. With
// one the turn is durable: it runs detached from the request (bounded by
// TurnTimeout), every line is recorded before any reader gets it, and a
// request for a turn whose execution already exists — a retry, or a
// reader that lost its connection, here or in another process sharing
// the store — attaches to that execution after its Last-Event-ID (the
// number of lines the reader already has) instead of starting another.
//
// A Handler must not be copied after first use.
type Handler struct {
	// Turn builds the turn a request asks for; it is where the host
	// authenticates the request. Required. An error is answered 400 with
	// its message.
	Turn func(r *http.Request) (*Turn, error)
	// Store, when set, makes turns durable and re-attachable.
	Store store.Store
	// TurnTimeout bounds a durable turn (DefaultTurnTimeout when zero).
	TurnTimeout time.Duration
	// PollInterval is how often a reader looks for new lines of a turn
	// another process runs (DefaultPollInterval when zero); readers in
	// the turn's own process are woken at once.
	PollInterval time.Duration
	// LeaseTTL and CleanupTimeout are a durable turn's run lifecycle's
	// (the kernel's defaults when zero).
	LeaseTTL       time.Duration
	CleanupTimeout time.Duration
	// StoreTimeout bounds each store call the handler makes itself —
	// reading a turn's record and lines, its attempts, and its persist
	// claim (DefaultStoreTimeout when zero): a store that stops
	// answering ends the request with an error (503 before the stream
	// began, an error line after), never hangs it. The run's own
	// records are the kernel's, bounded by LeaseTTL and CleanupTimeout.
	StoreTimeout time.Duration
	Logger       *slog.Logger

	once    sync.Once
	base    context.Context
	stop    context.CancelFunc
	running sync.WaitGroup
	mu      sync.Mutex
	wakers  map[string]chan struct{}
}

func (h *Handler) init() {
	h.once.Do(func() {
		h.base, h.stop = context.WithCancel(context.Background())
		h.wakers = make(map[string]chan struct{})
	})
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// StoreTimeoutError is a store call of the handler that did not answer
// within Handler.StoreTimeout: the store stopped answering, and the
// request (or the turn's step that made the call) ends with it.
type StoreTimeoutError struct {
	// Op names the call: what the handler was reading or recording.
	Op      string
	Timeout time.Duration
}

func (e *StoreTimeoutError) Error() string {
	return fmt.Sprintf("chatturn: the store did not answer within %s (%s)", e.Timeout, e.Op)
}

// storeCall runs one store call bounded by the handler's StoreTimeout;
// a call cut by that bound returns the *StoreTimeoutError.
func (h *Handler) storeCall(ctx context.Context, op string, call func(ctx context.Context) error) error {
	bound := h.StoreTimeout
	if bound <= 0 {
		bound = DefaultStoreTimeout
	}
	timeout := &StoreTimeoutError{Op: op, Timeout: bound}
	cctx, cancel := context.WithTimeoutCause(ctx, bound, timeout)
	defer cancel()
	err := call(cctx)
	if err != nil && ctx.Err() == nil && context.Cause(cctx) == error(timeout) {
		return timeout
	}
	return err
}

// getRun reads run id, bounded.
func (h *Handler) getRun(ctx context.Context, id string) (r store.Run, err error) {
	err = h.storeCall(ctx, "reading run "+id, func(ctx context.Context) error {
		r, err = h.Store.GetRun(ctx, id)
		return err
	})
	return r, err
}

// events reads up to limit lines of run runID after cursor, bounded.
func (h *Handler) events(ctx context.Context, runID, cursor string, limit int) (events []store.Event, err error) {
	err = h.storeCall(ctx, "reading the lines of run "+runID, func(ctx context.Context) error {
		events, err = h.Store.Events(ctx, runID, cursor, limit)
		return err
	})
	return events, err
}

// Shutdown waits for the durable turns this handler runs to end; when
// ctx ends first it cancels them (each records its failure) and returns
// ctx's error once they stopped.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.init()
	done := make(chan struct{})
	go func() { h.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		h.stop()
		<-done
		return ctx.Err()
	}
}

// ServeHTTP runs or re-attaches to the request's turn.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.init()
	if h.Turn == nil {
		http.Error(w, "chatturn: the handler has no Turn builder", http.StatusInternalServerError)
		return
	}
	turn, err := h.Turn(r)
	if err == nil && turn == nil {
		err = errors.New("no turn")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := turn.check(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	execID := turn.Identity.ExecutionID()
	if want := r.Header.Get(HeaderExecutionID); want != "" && want != execID {
		http.Error(w, fmt.Sprintf("%s %q names another turn than this request's (%q)", HeaderExecutionID, want, execID), http.StatusConflict)
		return
	}
	after, err := parseLastEventID(r.Header.Get("Last-Event-ID"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out := newLineWriter(w, r)
	w.Header().Set(HeaderExecutionID, execID)
	if h.Store == nil {
		if after > 0 {
			http.Error(w, "this server keeps no turns, so a turn cannot be resumed (Last-Event-ID); retry without it", http.StatusConflict)
			return
		}
		out.start()
		n := int64(0)
		for l := range Stream(r.Context(), *turn) {
			n++
			if out.write(n, l) != nil {
				return
			}
		}
		return
	}
	err = nil
	if after > 0 {
		err = h.checkPosition(r.Context(), turn.Identity, execID, after)
	}
	if err == nil {
		err = h.start(r.Context(), turn, execID)
	}
	if err != nil {
		if _, ok := errors.AsType[*TurnConflictError](err); ok {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		if _, ok := errors.AsType[*PositionGoneError](err); ok {
			http.Error(w, err.Error(), http.StatusGone)
			return
		}
		h.logger().Error("chat turn: recording the turn", "execution", execID, "err", err)
		msg := "the turn could not be recorded; retry later"
		if st, ok := errors.AsType[*StoreTimeoutError](err); ok {
			msg = st.Error() + ": the turn could not be read or recorded; retry later"
		}
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	out.start()
	h.follow(r.Context(), out, turn, execID, after)
}

// PositionGoneError refuses a re-attach whose Last-Event-ID is past the
// last line recorded for the execution (or names an execution with no
// record): no reader received such a line, so the stream after it
// cannot be served — answered 410, as the sidecar answers a resume past
// a turn's head, and nothing is started for it.
type PositionGoneError struct {
	ExecutionID string
	// After is the request's Last-Event-ID; Lines how many lines the
	// execution recorded (0 when it has no record).
	After, Lines int64
	// Recorded: the execution has a record.
	Recorded bool
}

func (e *PositionGoneError) Error() string {
	if !e.Recorded {
		return fmt.Sprintf("Last-Event-ID %d names a line of turn %s, which has no record here: it cannot be resumed (retry without Last-Event-ID to run it)", e.After, e.ExecutionID)
	}
	return fmt.Sprintf("Last-Event-ID %d is past the last line (%d) recorded for turn %s: no stream follows it (re-attach with a Last-Event-ID of at most %d)", e.After, e.Lines, e.ExecutionID, e.Lines)
}

// checkPosition checks a re-attach's Last-Event-ID against the record of
// execID: a *PositionGoneError when it is past the lines recorded
// across the execution's attempts (their number only grows, so a live
// execution is judged as surely as an ended one), a *TurnConflictError
// when the record is another identity's.
func (h *Handler) checkPosition(ctx context.Context, id Identity, execID string, after int64) error {
	if _, err := h.sameTurn(ctx, execID, id); errors.Is(err, store.ErrNotFound) {
		return &PositionGoneError{ExecutionID: execID, After: after}
	} else if err != nil {
		return err
	}
	// Most re-attaches are within the first attempt: its line number
	// after is recorded.
	at, err := h.events(ctx, execID, store.CursorFor(after-1), 1)
	if err != nil {
		return fmt.Errorf("chatturn: reading turn %s's lines: %w", execID, err)
	}
	if len(at) > 0 {
		return nil
	}
	all, err := h.attempts(ctx, execID)
	if err != nil {
		return err
	}
	var lines int64
	for _, a := range all {
		n, err := h.countLines(ctx, a.run.ID)
		if err != nil {
			return fmt.Errorf("chatturn: counting turn %s's lines: %w", execID, err)
		}
		lines += n
	}
	if after > lines {
		return &PositionGoneError{ExecutionID: execID, After: after, Lines: lines, Recorded: true}
	}
	return nil
}

// start runs the turn detached, recorded as a runtime run whose id is
// the execution id. An execution that already exists is left alone (the
// request attaches to it) unless the process serving its last attempt
// died: then this process carries it on as a new attempt (resume).
func (h *Handler) start(ctx context.Context, turn *Turn, execID string) error {
	id := turn.Identity
	err := h.startAttempt(turn, execID, 1, prior{})
	if errors.Is(err, store.ErrExists) {
		if _, err := h.sameTurn(ctx, execID, id); err != nil {
			return err
		}
		if err := h.resume(ctx, turn, execID); err != nil && !errors.Is(err, errNotResumable) {
			return err
		}
		return nil
	}
	return err
}

// MaxAttempts bounds the attempts of one execution: a turn whose
// serving process died this many times is not carried on again (it
// reads as failed).
const MaxAttempts = 16

// attemptRunID is the id of the run that records attempt n of execution
// execID: the execution id itself for the first, "<execID>.resume-<n-1>"
// for the later ones (no execution id has that form: its last part is a
// turn index). The dead attempt's record stays as it is — the truth
// that its process died — and each attempt goes on with the lines of
// the ones before (the execution's line numbers run on across them).
func attemptRunID(execID string, n int) string {
	if n <= 1 {
		return execID
	}
	return execID + ".resume-" + strconv.Itoa(n-1)
}

// startAttempt records attempt n of the turn and runs it detached. A
// recorded attempt n is store.ErrExists.
func (h *Handler) startAttempt(turn *Turn, execID string, n int, p prior) error {
	timeout := h.TurnTimeout
	if timeout <= 0 {
		timeout = DefaultTurnTimeout
	}
	runCtx, cancel := context.WithTimeout(h.base, timeout)
	id := turn.Identity
	run, err := kernel.StartRuntimeRun(runCtx, kernel.RuntimeRunOptions{
		WorkspaceID: id.TenantID, TaskID: KindChatTurn, RunID: attemptRunID(execID, n), SessionID: id.SessionID, AgentID: id.UserID,
		Store: h.Store, LeaseTTL: h.LeaseTTL, CleanupTimeout: h.CleanupTimeout, Logger: h.Logger,
	})
	if err != nil {
		cancel()
		return err
	}
	if n > 1 {
		h.logger().Info("chat turn: carrying on a turn whose process died", "execution", execID, "attempt", n, "lines", p.lines)
	}
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		defer cancel()
		h.drive(run, turn, execID, n, p)
	}()
	return nil
}

// errNotResumable: the execution's last attempt is live, or ended; the
// caller attaches to it.
var errNotResumable = errors.New("chatturn: the turn's last attempt did not die")

// attempt is one recorded attempt of an execution.
type attempt struct {
	n   int
	run store.Run
}

// attempts returns the recorded attempts of execID, in order.
func (h *Handler) attempts(ctx context.Context, execID string) ([]attempt, error) {
	var out []attempt
	for n := 1; n <= MaxAttempts; n++ {
		r, err := h.getRun(ctx, attemptRunID(execID, n))
		if errors.Is(err, store.ErrNotFound) && n > 1 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("chatturn: reading attempt %d of turn %s: %w", n, execID, err)
		}
		out = append(out, attempt{n: n, run: r})
	}
	return out, nil
}

// prior is what the earlier attempts of a turn recorded.
type prior struct {
	// lines is how many lines they recorded.
	lines int64
	// started: the start line is among them.
	started bool
	// end is their terminal line, when one was recorded; failing is an
	// error line recorded without its terminal line after it.
	end     *Line
	failing *Line
	// producer counts the producer lines since the last restart, and
	// lastEventID is the last one's EventID.
	producer    int
	lastEventID string
}

// readPrior reads what attempts recorded: their lines, once, page by
// page.
func (h *Handler) readPrior(ctx context.Context, execID string, attempts []attempt) (prior, error) {
	var p prior
	for _, a := range attempts {
		for cursor := ""; ; {
			events, err := h.events(ctx, a.run.ID, cursor, pageSize)
			if err != nil {
				return prior{}, fmt.Errorf("chatturn: reading turn %s's lines: %w", execID, err)
			}
			for _, e := range events {
				l, err := lineFromValue(e.Body)
				if err != nil {
					return prior{}, fmt.Errorf("chatturn: turn %s's line %d: %w", execID, p.lines+1, err)
				}
				p.lines++
				switch l.Type {
				case TypeStarted:
					p.started = true
				case TypeRestarted:
					p.producer, p.lastEventID = 0, ""
				case TypeError:
					p.failing = &l
				case TypeCompleted, TypeFailed:
					p.end = &l
				default:
					p.producer++
					p.lastEventID = l.EventID
				}
			}
			if len(events) < pageSize {
				break
			}
			cursor = events[len(events)-1].Cursor
		}
	}
	return p, nil
}

// resume carries execution execID on as a new attempt when the process
// serving its last attempt died (the attempt reads interrupted). An
// execution whose last attempt is live or ended otherwise, or that
// another process carried on first, is errNotResumable.
func (h *Handler) resume(ctx context.Context, turn *Turn, execID string) error {
	all, err := h.attempts(ctx, execID)
	if err != nil {
		return err
	}
	last := all[len(all)-1]
	if last.run.Status != store.StatusInterrupted || len(all) >= MaxAttempts {
		return errNotResumable
	}
	p, err := h.readPrior(ctx, execID, all)
	if err != nil {
		return err
	}
	// Nothing more is recorded in the dead attempt: its lease lapsed, so
	// the store refuses its writes.
	err = h.startAttempt(turn, execID, last.n+1, p)
	if errors.Is(err, store.ErrExists) {
		return errNotResumable
	}
	return err
}

// TurnConflictError refuses a request whose execution id names a
// recorded turn of another tenant, user or session (two identities can
// derive one id: "p", "a:1" and "p:a", "1"): attaching would hand it
// another's turn. It names none of the recorded turn's identity.
type TurnConflictError struct {
	ExecutionID string
}

func (e *TurnConflictError) Error() string {
	return fmt.Sprintf("execution %q is a recorded turn of another tenant, user or session; it cannot be attached to (choose another session id)", e.ExecutionID)
}

// sameTurn checks that the recorded turn execID is the request's: the
// same kind, tenant, user and session. Only then may the request attach
// to it. It returns the run as recorded.
func (h *Handler) sameTurn(ctx context.Context, execID string, id Identity) (store.Run, error) {
	r, err := h.getRun(ctx, execID)
	if err != nil {
		return store.Run{}, fmt.Errorf("chatturn: reading turn %s: %w", execID, err)
	}
	rt, err := kernel.DecodeRuntimeRecord(r.Doc)
	if r.Kind != kernel.KindRuntime || err != nil || rt.TaskID != KindChatTurn || rt.WorkspaceID != id.TenantID || rt.AgentID != id.UserID || rt.SessionID != id.SessionID {
		return store.Run{}, &TurnConflictError{ExecutionID: execID}
	}
	return r, nil
}

// persistScope names the idempotency records that make a durable
// turn's persist happen at most once per execution, whatever its
// attempts.
const persistScope = "chatturn.persist"

// drive runs attempt n of a durable turn: each line is recorded, then
// readers are woken; the run ends completed when the turn did. p is
// what the earlier attempts recorded (zero on the first): a turn they
// ended is only closed, a failure they began is finished, and otherwise
// the turn is carried on after their last line.
func (h *Handler) drive(run *kernel.RuntimeRun, turn *Turn, execID string, n int, p prior) {
	var local int64
	var last Line
	record := func(l Line) error {
		_, err := run.AppendEvents([]store.NewEvent{{ID: strconv.FormatInt(local+1, 10), Type: l.Type, Time: time.Now(), Body: l.recorded()}})
		if err != nil {
			return err
		}
		local++
		last = l
		h.wake(execID)
		return nil
	}
	var usage func() ledger.Usage
	var produced bool
	var claimed int64
	if n > 1 && p.end == nil && p.failing == nil {
		claimed = h.persistClaimed(run.Context(), execID)
	}
	switch {
	case p.end != nil:
		// The dead attempt recorded the turn's end (it persisted, or
		// failed): only its record was left open.
		last = *p.end
	case claimed > 0:
		// An earlier attempt began persisting and died before recording
		// how that ended: producing again could not be persisted.
		err := &PersistInDoubtError{ExecutionID: execID, Attempt: claimed}
		if record(errorLine(err.Error())) == nil {
			record(failedLine(turn.Identity.SessionID, err.Error()))
		}
		last = failedLine(turn.Identity.SessionID, err.Error())
	case p.failing != nil:
		// It recorded a failure's error line, not its end: the turn
		// failed, and ends so.
		msg, _ := p.failing.Data.Get("message")
		if record(failedLine(turn.Identity.SessionID, msg.Str())) != nil {
			last = failedLine(turn.Identity.SessionID, msg.Str())
		}
	default:
		t := *turn
		produce, resumeHook := t.Hooks.Produce, t.Hooks.Resume
		t.Hooks.Produce = func(ctx context.Context) (Production, error) {
			pr, err := produce(ctx)
			usage = pr.Usage
			return pr, err
		}
		if resumeHook != nil {
			t.Hooks.Resume = func(ctx context.Context, a Attempt) (Production, error) {
				pr, err := resumeHook(ctx, a)
				usage = pr.Usage
				return pr, err
			}
		}
		o := runOptions{started: p.started, claimPersist: func(ctx context.Context) error {
			return h.claimPersist(ctx, run, execID, n)
		}, produced: func() { produced = true }}
		if n > 1 {
			o.resume = &Attempt{ExecutionID: execID, Number: int64(n), LastEventID: p.lastEventID, Recorded: p.producer}
		}
		t.run(run.Context(), record, o)
		// The producer's usage, as one model call: unknown when it does
		// not report it, and only a floor when its production was cut
		// (the reader went, the producer failed, the lease was lost):
		// it reported what it spent so far, not what the turn spent.
		var u ledger.Usage
		if usage != nil {
			u = usage()
		}
		if !produced {
			u = u.Floor()
		}
		if err := run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: u}); err != nil {
			h.logger().Warn("chat turn: recording the turn's usage", "execution", execID, "err", err)
		}
	}
	c := kernel.RuntimeCompletion{Status: store.StatusCompleted}
	if last.Type != TypeCompleted {
		c.Status = store.StatusFailed
		if msg, ok := last.Data.Get("message"); ok {
			c.Error = msg.Str()
		}
	}
	if err := run.Complete(c); err != nil {
		h.logger().Warn("chat turn: recording the end of the turn", "execution", execID, "err", err)
	}
	h.wake(execID)
}

// PersistInDoubtError fails an attempt of a turn that reached its
// persist after an earlier attempt had begun persisting the assistant
// message and died before recording how that ended: the message may be
// stored, and it is never handed to PersistAssistantMessage twice.
type PersistInDoubtError struct {
	ExecutionID string
	// Attempt is the attempt that claimed the persist.
	Attempt int64
}

func (e *PersistInDoubtError) Error() string {
	return fmt.Sprintf("attempt %d of turn %s began persisting the assistant message and its process died before recording the outcome: the message may be stored, so it is not persisted again", e.Attempt, e.ExecutionID)
}

// persistClaimed returns the attempt of execID that claimed its persist
// (claimPersist), or 0 when none did or the store cannot tell in one
// bounded look: an optimization only, since claimPersist checks the
// claim again before any persist.
func (h *Handler) persistClaimed(ctx context.Context, execID string) int64 {
	var recs []store.Idempotency
	err := h.storeCall(ctx, "reading the persist claim of turn "+execID, func(ctx context.Context) (err error) {
		recs, err = h.Store.ListIdempotency(ctx, store.IdempotencyQuery{Scope: persistScope, KeyPrefix: execID, Limit: 16})
		return err
	})
	if err != nil {
		return 0
	}
	for _, r := range recs {
		if r.Key == execID {
			a, _ := r.Result.Get("attempt")
			return max(int64(a.Float()), 1)
		}
	}
	return 0
}

// claimPersist records, before the assistant message of execID is
// persisted, that attempt persists it; an earlier attempt's claim is a
// *PersistInDoubtError. The claim is the store's idempotency record, so
// of all the attempts of an execution, in any process, at most one
// persists.
//
// The claim is fenced by the attempt's lease: an attempt claims only
// right after a fenced write of its run proved it holds the lease
// (RuntimeRun.Confirm, which renews it), and trusts its claim only if
// the claim returned before that lease, less a margin for clocks, ran
// out by this process's clock. A new attempt exists only once this
// one's lease lapsed, so an attempt paused past its lease — the turn
// carried on by another — claims nothing, or withdraws a claim it
// cannot prove landed in time, and ends unpersisted
// (*PersistFenceError): the turn is its new holder's to persist.
func (h *Handler) claimPersist(ctx context.Context, run *kernel.RuntimeRun, execID string, attempt int) error {
	var until time.Time
	err := h.storeCall(ctx, "confirming the lease of turn "+execID, func(ctx context.Context) (err error) {
		until, err = run.Confirm(ctx)
		return err
	})
	if err != nil {
		return &PersistFenceError{ExecutionID: execID, Attempt: int64(attempt), Err: err}
	}
	rec := store.Idempotency{Scope: persistScope, Key: execID, RequestDigest: canonjson.DigestBytes([]byte(execID)),
		Result: canonjson.ObjectValue([]canonjson.Member{{Name: "attempt", Value: canonjson.NumberValue(float64(attempt))}}), CreatedAt: time.Now()}
	var (
		got     store.Idempotency
		created bool
	)
	err = h.storeCall(ctx, "recording the persist claim of turn "+execID, func(ctx context.Context) (err error) {
		got, created, err = h.Store.ClaimIdempotency(ctx, rec)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the persist of the assistant message: %w", err)
	}
	if !created {
		a, _ := got.Result.Get("attempt")
		return &PersistInDoubtError{ExecutionID: execID, Attempt: int64(a.Float())}
	}
	lease := h.LeaseTTL
	if lease <= 0 {
		lease = kernel.DefaultLeaseTTL
	}
	if time.Now().Before(until.Add(-lease / 10)) {
		return nil
	}
	// The claim returned too late to be sure it landed while this
	// attempt held the turn: it does not persist, and withdraws the
	// claim so that the turn's next holder may (best effort: if that one
	// already saw it, it fails in doubt).
	err = h.storeCall(context.WithoutCancel(ctx), "withdrawing the persist claim of turn "+execID, func(ctx context.Context) error {
		_, err := h.Store.DeleteIdempotency(ctx, []store.IdempotencyKey{{Scope: persistScope, Key: execID}})
		return err
	})
	if err != nil {
		h.logger().Warn("chat turn: withdrawing a persist claim made too late", "execution", execID, "attempt", attempt, "err", err)
	}
	return &PersistFenceError{ExecutionID: execID, Attempt: int64(attempt), Err: &kernel.LeaseLostError{RunID: run.ID()}}
}

// PersistFenceError ends an attempt that reached its persist without
// proof that it still holds the turn's lease (it was paused, or its
// store stopped answering, past the lease, and the turn may be another
// attempt's by now): the assistant message is not persisted by it, and
// the turn is left to its holder. Err is why: a *kernel.LeaseLostError
// (errors.Is contract.ErrLeaseLost), or the store's failure to confirm.
type PersistFenceError struct {
	ExecutionID string
	Attempt     int64
	Err         error
}

func (e *PersistFenceError) Error() string {
	return fmt.Sprintf("attempt %d of turn %s could not prove it still holds the turn, so it does not persist the assistant message: %v", e.Attempt, e.ExecutionID, e.Err)
}

// Unwrap returns why the lease was not proven.
func (e *PersistFenceError) Unwrap() error { return e.Err }

// follow writes the lines of execution execID after line after, and
// the ones that follow, until its terminal line, reading them across the
// execution's attempts. When the process serving the last attempt died,
// the turn is carried on here (resume) or by whichever process did it
// first, and the lines go on with that attempt's. A turn that cannot be
// carried on — its record ended without its terminal line, or it ran
// out of attempts — gets the failure lines it never recorded (without
// ids: they are not part of the record).
func (h *Handler) follow(ctx context.Context, out *lineWriter, turn *Turn, execID string, after int64) {
	poll := h.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	wake, release := h.waker(execID)
	defer release()
	timer := time.NewTimer(poll)
	defer timer.Stop()
	n, base, cursor := 1, int64(0), ""
	if after > 0 {
		// The first attempt's lines are the execution's first ones: read
		// from the reader's last line on (it tells whether that was the
		// end).
		cursor = store.CursorFor(after - 1)
	}
	read, lastTerminal := false, false // read: a line of attempt n was read
	// cut ends the stream of a reader the store failed (an error, or no
	// answer within StoreTimeout): an error line without an id says so —
	// the turn goes on, and the reader comes back with its Last-Event-ID.
	cut := func(err error) {
		if ctx.Err() != nil {
			return
		}
		h.logger().Warn("chat turn: reading the turn's record", "execution", execID, "err", err)
		out.write(0, errorLine(fmt.Sprintf("this stream of turn %s stopped: %v; the turn goes on without it: reconnect with the last line's id as Last-Event-ID to read on", execID, err)))
	}
	for {
		runID := attemptRunID(execID, n)
		events, err := h.events(ctx, runID, cursor, pageSize)
		if err != nil {
			cut(err)
			return
		}
		for _, e := range events {
			l, err := lineFromValue(e.Body)
			if err != nil {
				h.logger().Warn("chat turn: an unreadable recorded line", "execution", execID, "run", runID, "sequence", e.Sequence, "err", err)
				return
			}
			cursor, read, lastTerminal = e.Cursor, true, l.Terminal()
			if seq := base + e.Sequence; seq > after {
				if out.write(seq, l) != nil || l.Terminal() {
					return
				}
			}
		}
		if len(events) == pageSize {
			continue
		}
		run, err := h.getRun(ctx, runID)
		if err != nil {
			cut(err)
			return
		}
		if run.Status.Terminal() {
			more, err := h.events(ctx, runID, cursor, 1)
			if err != nil {
				cut(err)
				return
			}
			if len(more) > 0 {
				continue
			}
			if lastTerminal || run.Status == store.StatusCompleted {
				return // the reader already has the end
			}
			next, nerr := h.getRun(ctx, attemptRunID(execID, n+1))
			if nerr != nil && !errors.Is(nerr, store.ErrNotFound) {
				cut(nerr)
				return
			}
			if nerr == nil && next.ID != "" {
				// A later attempt carries the execution on: its lines
				// follow this one's.
				count, err := store.ParseCursor(cursor)
				if !read && cursor != "" {
					// The reader's position was past this attempt's lines.
					count, err = h.countLines(ctx, runID)
				}
				if err != nil {
					cut(fmt.Errorf("counting the lines of attempt %d: %w", n, err))
					return
				}
				n, base, cursor, read = n+1, base+count, "", false
				continue
			}
			if run.Status == store.StatusInterrupted {
				// The process serving the attempt died: carry the turn on
				// (or find that another process did).
				err := h.resume(ctx, turn, execID)
				if err == nil || errors.Is(err, store.ErrExists) {
					continue
				}
				if !errors.Is(err, errNotResumable) {
					cut(fmt.Errorf("carrying the turn on: %w", err))
					return
				}
				later, err := h.laterAttempt(ctx, execID, n)
				if err != nil {
					cut(err)
					return
				}
				if later {
					continue
				}
			}
			// The record ended without its terminal line (the store
			// refused the line, or the turn ran out of attempts): the
			// reader still gets exactly one end, the failure it never
			// recorded.
			msg := "the process running this turn stopped before the turn ended"
			if run.Status != store.StatusInterrupted {
				msg = fmt.Sprintf("the turn ended %s before its last line was recorded", run.Status)
			}
			if out.write(0, errorLine(msg)) == nil {
				out.write(0, failedLine(sessionOf(run.Doc), msg))
			}
			return
		}
		wake = h.rewake(execID, wake)
		timer.Reset(poll)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
	}
}

// countLines counts the lines recorded in run runID, page by page.
func (h *Handler) countLines(ctx context.Context, runID string) (int64, error) {
	var n int64
	for cursor := ""; ; {
		events, err := h.events(ctx, runID, cursor, pageSize)
		if err != nil {
			return 0, err
		}
		n += int64(len(events))
		if len(events) < pageSize {
			return n, nil
		}
		cursor = events[len(events)-1].Cursor
	}
}

// laterAttempt reports whether execID has an attempt after n.
func (h *Handler) laterAttempt(ctx context.Context, execID string, n int) (bool, error) {
	_, err := h.getRun(ctx, attemptRunID(execID, n+1))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func sessionOf(doc canonjson.Value) string {
	v, _ := doc.Get("sessionId")
	return v.Str()
}

// waker returns the channel closed at the next line of execID recorded
// by this process, and a release for when the reader is done.
func (h *Handler) waker(execID string) (<-chan struct{}, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.wakers[execID]
	if !ok {
		ch = make(chan struct{})
		h.wakers[execID] = ch
	}
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if cur, ok := h.wakers[execID]; ok && cur == ch {
			delete(h.wakers, execID)
		}
	}
}

// rewake returns the current waker of execID: ch while it is still
// open, a fresh one after it fired.
func (h *Handler) rewake(execID string, ch <-chan struct{}) <-chan struct{} {
	select {
	case <-ch:
	default:
		return ch
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, ok := h.wakers[execID]
	if !ok {
		cur = make(chan struct{})
		h.wakers[execID] = cur
	}
	return cur
}

// wake wakes this process's readers of execID.
func (h *Handler) wake(execID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.wakers[execID]; ok {
		close(ch)
		delete(h.wakers, execID)
	}
}

// parseLastEventID reads a Last-Event-ID: the number of lines the reader
// already has ("" is none).
func parseLastEventID(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("Last-Event-ID %q is not a line number (the id of the last line received)", s)
	}
	return n, nil
}

// lineWriter writes lines as NDJSON or server-sent events, flushing each.
type lineWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	sse bool
}

func newLineWriter(w http.ResponseWriter, r *http.Request) *lineWriter {
	return &lineWriter{w: w, rc: http.NewResponseController(w), sse: acceptsSSE(r.Header.Get("Accept"))}
}

func acceptsSSE(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == ContentTypeSSE {
			return true
		}
	}
	return false
}

func (o *lineWriter) start() {
	h := o.w.Header()
	if o.sse {
		h.Set("Content-Type", ContentTypeSSE)
	} else {
		h.Set("Content-Type", ContentTypeNDJSON)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	o.w.WriteHeader(http.StatusOK)
	o.rc.Flush()
}

// write writes line number seq (0: a line without an id).
func (o *lineWriter) write(seq int64, l Line) error {
	body := canonjson.Marshal(l.Value())
	var err error
	if o.sse {
		if seq > 0 {
			_, err = fmt.Fprintf(o.w, "id: %d\n", seq)
		}
		if err == nil {
			_, err = fmt.Fprintf(o.w, "event: %s\ndata: %s\n\n", sseField(l.Type), body)
		}
	} else {
		_, err = o.w.Write(append(body, '\n'))
	}
	if err == nil {
		err = o.rc.Flush()
	}
	if errors.Is(err, http.ErrNotSupported) {
		err = nil
	}
	return err
}

// sseField keeps a value on one SSE field line.
func sseField(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
