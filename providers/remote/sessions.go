package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// ErrNotResumable is wrapped by the error of a session event stream that
// was cut after an event without a stable id: it cannot be resumed
// without repeating that event, so it is not resumed.
var ErrNotResumable = errors.New("remote: the session event stream was cut after an event without a stable id")

// dispatch starts a detached run on the server. A dispatch is re-sent
// after a lost answer only when the turn carries a turn id (the
// provider's turn idempotency then resolves it to the same run); without
// one a lost answer is the caller's to resolve.
func (e *environment) dispatch(ctx context.Context, in *contract.TurnInput) (*contract.SessionRef, error) {
	if e.destroyed.Load() {
		return nil, fmt.Errorf("%w: %s", ErrDestroyed, e.doc.ID)
	}
	var input contract.TurnInput
	if in != nil {
		input = *in
	}
	return roundTrip(ctx, e.p, exchange{method: http.MethodPost, path: envPath(e.doc.ID) + "/dispatch",
		body: &input, what: "the turn input", answer: "session reference",
		timeout: e.p.opts.CallTimeout, retry: input.TurnID != nil, cred: input.Credential}, wire.ParseSessionRef)
}

// session opens session id on the server, bound to the run ref names
// (the session's latest run without one). The server refuses a reference
// naming another run of the session. The returned session holds only its
// ids and reference, so a client in another process can open it again
// from the same reference.
func (e *environment) session(ctx context.Context, id string, ref *contract.RunControlRef) (contract.Session, error) {
	c, err := e.caps(ctx)
	if err != nil {
		return nil, err
	}
	s := &session{e: e, id: id, ref: ref}
	doc, err := roundTrip(ctx, e.p, s.call("", wire.SessionRequest{ControlRef: ref}, e.p.opts.CallTimeout, true), wire.ParseSession)
	if err != nil {
		return nil, err
	}
	if doc.ID != id {
		return nil, fmt.Errorf("remote: the server opened session %q for %q", doc.ID, id)
	}
	if ref != nil && doc.ControlRef != nil && !contract.SameRunControlRef(*doc.ControlRef, *ref) {
		return nil, fmt.Errorf("remote: the server bound session %s to another run than %s", id, ref.RunID)
	}
	if doc.ControlRef != nil {
		s.ref = doc.ControlRef
	}
	return sessExposed(s, sessMask(c)), nil
}

// session is one provider session on the server, bound to one run.
type session struct {
	e  *environment
	id string

	mu  sync.Mutex
	ref *contract.RunControlRef
}

func (s *session) path(suffix string) string {
	return envPath(s.e.doc.ID) + "/sessions/" + url.PathEscape(s.id) + suffix
}

// call is the exchange that posts req to the session's route suffix,
// bounded by timeout and re-sent after a lost answer when retry is set.
func (s *session) call(suffix string, req any, timeout time.Duration, retry bool) exchange {
	path := s.path(suffix)
	return exchange{method: http.MethodPost, path: path, body: req, what: "the session request", answer: "answer to " + path,
		timeout: timeout, retry: retry}
}

func (s *session) controlRef() *contract.RunControlRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ref
}

// ID implements contract.Session.
func (s *session) ID() string { return s.id }

// ControlRef implements contract.Session: the reference of the run the
// session is bound to.
func (s *session) ControlRef() *contract.RunControlRef {
	ref := s.controlRef()
	if ref == nil {
		return nil
	}
	c := *ref
	return &c
}

// Status implements contract.Session.
func (s *session) Status(ctx context.Context) (contract.SessionStatus, bool, error) {
	st, err := roundTrip(ctx, s.e.p, s.call("/status", wire.SessionRequest{ControlRef: s.controlRef()}, s.e.p.opts.CallTimeout, true),
		wire.ParseSessionStatus)
	if err != nil {
		return contract.SessionUnknown, false, err
	}
	if st.Status == nil {
		return contract.SessionUnknown, false, nil
	}
	return *st.Status, true, nil
}

// Result implements contract.Session: it asks until the bound run ended
// (each ask waits on the server about half a call timeout), or ctx ends.
func (s *session) Result(ctx context.Context) (*contract.TurnResult, error) {
	wait := s.e.p.longPoll()
	pace := s.e.p.pacer()
	for {
		asked := time.Now()
		res, err := roundTrip(ctx, s.e.p, s.call("/result", wire.SessionResultRequest{ControlRef: s.controlRef(), WaitMs: &wait},
			s.e.p.opts.CallTimeout, true), wire.ParseSessionResult)
		if err != nil {
			return nil, err
		}
		if res.Result != nil {
			return res.Result, nil
		}
		if err := pace.pause(ctx, asked); err != nil {
			return nil, err
		}
	}
}

// Prompt implements contract.Session: it plays another turn in the
// session and binds the session to its run. It is re-sent after a lost
// answer only when the turn carries a turn id.
func (s *session) Prompt(ctx context.Context, in *contract.TurnInput) (*contract.TurnResult, error) {
	var input contract.TurnInput
	if in != nil {
		input = *in
	}
	x := s.call("/prompt", wire.SessionPromptRequest{ControlRef: s.controlRef(), Input: input}, s.e.p.opts.PromptTimeout, input.TurnID != nil)
	x.cred = input.Credential
	res, err := roundTrip(ctx, s.e.p, x, wire.ParsePromptResult)
	if err != nil {
		return nil, err
	}
	if res.ControlRef != nil {
		s.mu.Lock()
		s.ref = res.ControlRef
		s.mu.Unlock()
	}
	return &res.Result, nil
}

// Cancel implements contract.Session: the legacy best-effort cancel of
// the bound run.
func (s *session) Cancel(ctx context.Context) error {
	_, err := roundTrip[any](ctx, s.e.p, s.call("/cancel", wire.SessionRequest{ControlRef: s.controlRef()}, s.e.p.opts.CallTimeout, true), nil)
	return err
}

// cancelRun sends a digest-bound cancellation. The provider binds the
// operation id to the request digest, so a retry after a lost answer is
// acknowledged as a replay.
func (s *session) cancelRun(ctx context.Context, req *contract.RunCancellationRequest) (*contract.RunCancellationAcknowledgement, error) {
	if req == nil {
		return nil, errors.New("remote: nil run cancellation request")
	}
	return roundTrip(ctx, s.e.p, s.call("/cancel-run", wire.SessionCancelRunRequest{ControlRef: s.controlRef(), Request: *req},
		s.e.p.opts.CallTimeout, true), wire.ParseRunCancellationAcknowledgement)
}

// respond answers an interaction request through the session; a retry
// re-sends the same command, acknowledged as a replay.
func (s *session) respond(ctx context.Context, cmd *contract.InteractionResponseCommand) (*contract.InteractionAcknowledgement, error) {
	if cmd == nil {
		return nil, errors.New("remote: nil interaction response command")
	}
	return roundTrip(ctx, s.e.p, s.call("/interactions", wire.SessionInteractionRequest{ControlRef: s.controlRef(), Command: *cmd},
		s.e.p.opts.CallTimeout, true), wire.ParseInteractionAcknowledgement)
}

// Events implements contract.Session: the session's events after since,
// followed live until the run ends. A dropped connection is resumed
// after the last event's own id (Last-Event-ID), through the provider's
// replay, so nothing is lost or repeated; a stream cut after an event
// without an id is not resumed (ErrNotResumable). Leaving the stream
// early stops reading; the run goes on.
func (s *session) Events(ctx context.Context, since, executionID string) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		cur := cursor{since: since}
		failures := 0
		for {
			r, err := s.openEvents(ctx, &cur, executionID)
			if err == nil {
				var stop bool
				stop, err = readSessionEvents(r, &cur, &failures, yield)
				if stop {
					return
				}
			}
			if ctx.Err() != nil {
				yield(contract.EnvironmentEvent{}, ctx.Err())
				return
			}
			var we *wire.Error
			if errors.As(err, &we) && we.Status < 500 {
				yield(contract.EnvironmentEvent{}, err)
				return
			}
			if cur.unresumable {
				yield(contract.EnvironmentEvent{}, fmt.Errorf("%w: %w", ErrNotResumable, err))
				return
			}
			failures++
			if failures > s.e.p.opts.MaxRetries {
				yield(contract.EnvironmentEvent{}, fmt.Errorf("remote: the session event stream was lost %d times: %w", failures, err))
				return
			}
			if err := sleep(ctx, s.e.p.opts.RetryBackoff<<(failures-1)); err != nil {
				yield(contract.EnvironmentEvent{}, err)
				return
			}
		}
	}
}

// cursor is where a session event stream resumes: after the caller's
// since until an event arrived, then after the last event's id.
type cursor struct {
	since string
	// last is the id of the last event yielded ("" before one).
	last        string
	unresumable bool
}

// openEvents opens the session's event stream after the cursor: the
// last event's id goes in Last-Event-ID when a header can carry it, else
// in the body.
func (s *session) openEvents(ctx context.Context, cur *cursor, executionID string) (*idleBody, error) {
	req := wire.SessionEventsRequest{ControlRef: s.controlRef()}
	if cur.since != "" {
		req.Since = &cur.since
	}
	header := ""
	if cur.last != "" {
		if wire.SSEIDSafe(cur.last) {
			header = cur.last
		} else {
			req.Since = &cur.last
		}
	}
	if executionID != "" {
		req.ExecutionID = &executionID
	}
	body, err := wire.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("remote: the events request has no JSON form: %w", err)
	}
	hr, err := s.e.p.newRequest(ctx, http.MethodPost, s.path("/events"), body, nil)
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Accept", wire.ContentTypeSSE)
	if header != "" {
		hr.Header.Set(wire.HeaderLastEventID, header)
	}
	resp, err := s.e.p.openStream(hr)
	if err != nil {
		return nil, fmt.Errorf("remote: opening the session event stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		out, _ := io.ReadAll(io.LimitReader(resp.Body, wire.MaxBodyBytes))
		return nil, answerError(resp.StatusCode, out)
	}
	return newIdleBody(resp.Body, s.e.p.opts.IdleTimeout), nil
}

// readSessionEvents yields the events of one connection. It reports stop
// when the caller stopped or the stream ended for good, else the error
// that cut the connection.
func readSessionEvents(r *idleBody, cur *cursor, failures *int, yield func(contract.EnvironmentEvent, error) bool) (stop bool, err error) {
	defer r.Close()
	sse := wire.NewSSEReader(r)
	for {
		ev, err := sse.Next()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // a stream ends only with end or error
			}
			return false, err
		}
		switch ev.Event {
		case "":
			env, err := wire.ParseEnvironmentEvent(ev.Data)
			if err != nil {
				return true, yieldErr(yield, fmt.Errorf("remote: a session event: %w", err))
			}
			if env.ID != nil && *env.ID != "" {
				cur.last, cur.unresumable = *env.ID, false
			} else {
				cur.unresumable = true
			}
			*failures = 0
			if !yield(*env, nil) {
				return true, nil
			}
		case wire.EventEnd:
			return true, nil
		case wire.EventError:
			return true, yieldErr(yield, streamError(ev.Data))
		}
	}
}

// streamError is the error an SSE error frame carries.
func streamError(data []byte) error {
	e := &wire.Error{Status: http.StatusBadGateway}
	if eb, err := wire.ParseErrorBody(data); err == nil {
		e.ErrorDetail = eb.Error
		e.Status = wire.Status(eb.Error.Code)
	} else {
		e.Code, e.Message = wire.CodeInternal, "the server ended the stream with an unreadable error"
	}
	return e
}

// contextBoundary observes the bound run's native context boundary; it
// has no effect, so a lost answer is asked again.
func (s *session) contextBoundary(ctx context.Context) (*contract.NativeContextBoundaryProof, error) {
	return roundTrip(ctx, s.e.p, s.call("/boundary", wire.SessionRequest{ControlRef: s.controlRef()}, s.e.p.opts.CallTimeout, true),
		wire.ParseNativeContextBoundaryProof)
}

// continueNative continues the session natively with opts.Turn. The
// request's operation id binds its digest at the provider, so a retry
// after a lost answer is answered replayed with the original run, never
// a second continuation (a caller that sees replayed for its first call
// learns the answer was lost). The served document never declares
// admissionControl, so opts.OnAdmission is never called. It is bounded
// by Options.PromptTimeout: it plays a whole turn.
func (s *session) continueNative(ctx context.Context, req *contract.NativeContextContinuationRequest, opts contract.NativeContinuationOptions) (*contract.NativeContinuationResult, error) {
	if req == nil {
		return nil, errors.New("remote: nil native continuation request")
	}
	x := s.call("/continue", wire.SessionContinueRequest{ControlRef: s.controlRef(), Request: *req, Turn: opts.Turn}, s.e.p.opts.PromptTimeout, true)
	// The continued turn is a new turn: its seat stage's credential
	// request travels with it (RG-07), in the request's header.
	x.cred = opts.Credential
	return roundTrip(ctx, s.e.p, x, wire.ParseNativeContinuationResult)
}
