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
	Logger         *slog.Logger

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
	if err := h.start(r.Context(), turn, execID); err != nil {
		if _, ok := errors.AsType[*TurnConflictError](err); ok {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		h.logger().Error("chat turn: recording the turn", "execution", execID, "err", err)
		http.Error(w, "the turn could not be recorded; retry later", http.StatusServiceUnavailable)
		return
	}
	out.start()
	h.follow(r.Context(), out, execID, after)
}

// start runs the turn detached, recorded as a runtime run whose id is
// the execution id; an execution that already exists is left alone (the
// request attaches to it).
func (h *Handler) start(ctx context.Context, turn *Turn, execID string) error {
	timeout := h.TurnTimeout
	if timeout <= 0 {
		timeout = DefaultTurnTimeout
	}
	runCtx, cancel := context.WithTimeout(h.base, timeout)
	id := turn.Identity
	run, err := kernel.StartRuntimeRun(runCtx, kernel.RuntimeRunOptions{
		WorkspaceID: id.TenantID, TaskID: KindChatTurn, RunID: execID, SessionID: id.SessionID, AgentID: id.UserID,
		Store: h.Store, LeaseTTL: h.LeaseTTL, CleanupTimeout: h.CleanupTimeout, Logger: h.Logger,
	})
	if errors.Is(err, store.ErrExists) {
		cancel()
		return h.sameTurn(ctx, execID, id)
	}
	if err != nil {
		cancel()
		return err
	}
	h.running.Add(1)
	go func() {
		defer h.running.Done()
		defer cancel()
		h.drive(run, turn, execID)
	}()
	return nil
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
// to it.
func (h *Handler) sameTurn(ctx context.Context, execID string, id Identity) error {
	rec, err := kernel.ReadRun(ctx, h.Store, execID)
	if err != nil {
		return fmt.Errorf("chatturn: reading turn %s: %w", execID, err)
	}
	rt := rec.Runtime
	if rt == nil || rt.TaskID != KindChatTurn || rt.WorkspaceID != id.TenantID || rt.AgentID != id.UserID || rt.SessionID != id.SessionID {
		return &TurnConflictError{ExecutionID: execID}
	}
	return nil
}

// drive runs a durable turn: each line is recorded, then readers are
// woken; the run ends completed when the turn did.
func (h *Handler) drive(run *kernel.RuntimeRun, turn *Turn, execID string) {
	var n int64
	var last Line
	t := *turn
	produce := t.Hooks.Produce
	var usage func() ledger.Usage
	t.Hooks.Produce = func(ctx context.Context) (Production, error) {
		p, err := produce(ctx)
		usage = p.Usage
		return p, err
	}
	t.run(run.Context(), func(l Line) error {
		_, err := run.AppendEvents([]store.NewEvent{{ID: strconv.FormatInt(n+1, 10), Type: l.Type, Time: time.Now(), Body: l.Value()}})
		if err != nil {
			return err
		}
		n++
		last = l
		h.wake(execID)
		return nil
	})
	// The producer's usage, as one model call: unknown when it does not
	// report it.
	var u ledger.Usage
	if usage != nil {
		u = usage()
	}
	if err := run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Usage: u}); err != nil {
		h.logger().Warn("chat turn: recording the turn's usage", "execution", execID, "err", err)
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

// follow writes the recorded lines of execution execID after line
// after, and the ones that follow, until its terminal line. A turn whose
// process stopped before it ended gets the failure lines it never
// recorded (without ids: they are not part of the record).
func (h *Handler) follow(ctx context.Context, out *lineWriter, execID string, after int64) {
	poll := h.PollInterval
	if poll <= 0 {
		poll = DefaultPollInterval
	}
	wake, release := h.waker(execID)
	defer release()
	timer := time.NewTimer(poll)
	defer timer.Stop()
	cursor, seen := store.CursorFor(after), after
	for {
		events, err := h.Store.Events(ctx, execID, cursor, pageSize)
		if err != nil {
			if ctx.Err() == nil {
				h.logger().Warn("chat turn: reading the turn's lines", "execution", execID, "err", err)
			}
			return // the reader reconnects with its Last-Event-ID
		}
		for _, e := range events {
			l, err := lineFromValue(e.Body)
			if err != nil {
				h.logger().Warn("chat turn: an unreadable recorded line", "execution", execID, "sequence", e.Sequence, "err", err)
				return
			}
			if out.write(e.Sequence, l) != nil || l.Terminal() {
				return
			}
			cursor, seen = e.Cursor, e.Sequence
		}
		if len(events) == pageSize {
			continue
		}
		run, err := h.Store.GetRun(ctx, execID)
		if err == nil && run.Status.Terminal() {
			more, err := h.Store.Events(ctx, execID, cursor, 1)
			if err == nil && len(more) > 0 {
				continue
			}
			// The record ended without its terminal line (the process
			// stopped, or the store refused the line): the reader still
			// gets exactly one end, the failure it never recorded.
			if run.Status != store.StatusCompleted && !h.endRecorded(ctx, execID, seen) {
				msg := "the process running this turn stopped before the turn ended"
				if run.Status != store.StatusInterrupted {
					msg = fmt.Sprintf("the turn ended %s before its last line was recorded", run.Status)
				}
				if out.write(0, errorLine(msg)) == nil {
					out.write(0, failedLine(sessionOf(run.Doc), msg))
				}
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

// endRecorded reports whether line seq of execution execID, the last
// one recorded, is its terminal line (a reader resuming after the end
// already has it), or whether it cannot tell.
func (h *Handler) endRecorded(ctx context.Context, execID string, seq int64) bool {
	if seq <= 0 {
		return false
	}
	events, err := h.Store.Events(ctx, execID, store.CursorFor(seq-1), 1)
	if err != nil {
		return true // unknown: never write a second end
	}
	if len(events) == 0 {
		return false
	}
	l, err := lineFromValue(events[0].Body)
	return err != nil || l.Terminal()
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
