package sidecar

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/schema"
)

// dispatch starts a detached run. The admission runs to its end even when
// the client goes away (the run is detached from the request anyway); a
// client that lost the answer re-sends a turn id, which the provider's
// turn idempotency resolves to the same run.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	in, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseTurnInput)
	if !ok {
		return
	}
	if in.Credential, ok = credentialRequest(w, r); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.base, s.opts.CallTimeout)
	defer cancel()
	d, ok := ability[contract.Dispatcher](w, s.lookup(ctx, r.PathValue("id")), "detach")
	if !ok {
		return
	}
	ref, err := d.Dispatch(ctx, in)
	if err == nil {
		s.trackDetached(r.PathValue("id"), ref)
	}
	answer(w, ref, err)
}

// openSession opens the session the route names, bound to the run ref
// names (its latest run without one), or writes the refusal. A session
// the provider binds to another run than ref names is refused: no call
// is ever served from another run.
func (s *Server) openSession(ctx context.Context, w http.ResponseWriter, r *http.Request, ref *contract.RunControlRef) (contract.Session, bool) {
	o, ok := ability[contract.SessionOpener](w, s.lookup(ctx, r.PathValue("id")), "sessions")
	if !ok {
		return nil, false
	}
	id := r.PathValue("session")
	sess, err := o.Session(ctx, id, ref)
	if err == nil && sess == nil {
		err = errNoAnswer
	}
	if err != nil {
		writeError(w, sessionRefusal(err))
		return nil, false
	}
	if ref != nil && sess.ControlRef() != nil && !contract.SameRunControlRef(*sess.ControlRef(), *ref) {
		writeError(w, wire.ErrorDetail{Code: wire.CodeSessionRefused, Message: "the provider bound session " + id + " to another run than the reference names"})
		return nil, false
	}
	return sess, true
}

// sessionRefusal maps a provider's refusal to open a session: final
// (session_refused) unless the call itself ran out of time.
func sessionRefusal(err error) wire.ErrorDetail {
	var se *schema.Error
	switch {
	case errors.As(err, &se):
		return wire.FromSchemaError(err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wire.ErrorDetail{Code: wire.CodeUnavailable, Message: err.Error()}
	case errors.Is(err, contract.ErrDestroyed):
		return wire.ErrorDetail{Code: wire.CodeNotFound, Message: err.Error()}
	}
	return wire.ErrorDetail{Code: wire.CodeSessionRefused, Message: err.Error()}
}

// sessionCall reads a session route's body with parse and opens the
// session it names.
func sessionCall[T any](s *Server, ctx context.Context, w http.ResponseWriter, r *http.Request, parse func([]byte) (*T, error), ref func(*T) *contract.RunControlRef) (*T, contract.Session, bool) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, parse)
	if !ok {
		return nil, nil, false
	}
	sess, ok := s.openSession(ctx, w, r, ref(req))
	return req, sess, ok
}

func sessionRef(q *wire.SessionRequest) *contract.RunControlRef { return q.ControlRef }

// openRoute opens a session and describes the run it is bound to.
func (s *Server) openRoute(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	_, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionRequest, sessionRef)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, wire.Session{ID: sess.ID(), ControlRef: sess.ControlRef()})
}

func (s *Server) sessionStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	_, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionRequest, sessionRef)
	if !ok {
		return
	}
	st, known, err := sess.Status(ctx)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	var out wire.SessionStatus
	if known && st.Valid() {
		out.Status = &st
	}
	writeJSON(w, http.StatusOK, out)
}

// sessionResult waits (bounded) for the bound run's result; a run still
// going when the wait ends is answered pending.
func (s *Server) sessionResult(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	req, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionResultRequest, func(q *wire.SessionResultRequest) *contract.RunControlRef { return q.ControlRef })
	if !ok {
		return
	}
	wait := s.opts.ResultWait
	if req.WaitMs != nil {
		wait = min(wait, time.Duration(*req.WaitMs)*time.Millisecond)
	}
	wctx, wcancel := context.WithTimeout(r.Context(), wait)
	defer wcancel()
	res, err := sess.Result(wctx)
	switch {
	case err != nil && wctx.Err() == context.DeadlineExceeded && r.Context().Err() == nil:
		writeJSON(w, http.StatusOK, wire.SessionResult{Pending: ptr(true)})
	case err == nil && res == nil:
		writeError(w, providerError(errNoAnswer))
	case err != nil:
		writeError(w, providerError(err))
	default:
		writeJSON(w, http.StatusOK, wire.SessionResult{Result: res})
	}
}

// sessionPrompt plays another turn in the session; the client leaving
// cancels it, as leaving a turn stream does.
func (s *Server) sessionPrompt(w http.ResponseWriter, r *http.Request) {
	octx, ocancel := s.callContext(r)
	defer ocancel()
	req, sess, ok := sessionCall(s, octx, w, r, wire.ParseSessionPromptRequest, func(q *wire.SessionPromptRequest) *contract.RunControlRef { return q.ControlRef })
	if !ok {
		return
	}
	if req.Input.Credential, ok = credentialRequest(w, r); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.PromptTimeout)
	defer cancel()
	res, err := sess.Prompt(ctx, &req.Input)
	if err == nil && res == nil {
		err = errNoAnswer
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, wire.PromptResult{Result: *res, ControlRef: sess.ControlRef()})
}

// sessionCancel is the legacy best-effort cancel.
func (s *Server) sessionCancel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	_, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionRequest, sessionRef)
	if !ok {
		return
	}
	if err := sess.Cancel(ctx); err != nil {
		writeError(w, providerError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// sessionCancelRun passes a digest-bound cancellation to the session; the
// provider's acknowledgement (accepted, replayed, conflict or unknown)
// is the answer.
func (s *Server) sessionCancelRun(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	req, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionCancelRunRequest, func(q *wire.SessionCancelRunRequest) *contract.RunControlRef { return q.ControlRef })
	if !ok {
		return
	}
	rc, ok := has[contract.RunCanceller](w, sess, "retained control")
	if !ok {
		return
	}
	ack, err := rc.CancelRun(ctx, &req.Request)
	if err == nil && ack == nil {
		err = errNoAnswer
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, ack)
}

// sessionRespond answers an interaction request through the session.
func (s *Server) sessionRespond(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	req, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionInteractionRequest, func(q *wire.SessionInteractionRequest) *contract.RunControlRef { return q.ControlRef })
	if !ok {
		return
	}
	ir, ok := has[contract.InteractionResponder](w, sess, "interactions")
	if !ok {
		return
	}
	ack, err := ir.RespondToInteraction(ctx, &req.Command)
	if err == nil && ack == nil {
		err = errNoAnswer
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, ack)
}

// has is x's optional interface I, or a written unsupported refusal.
func has[I any](w http.ResponseWriter, x any, gate string) (I, bool) {
	i, ok := x.(I)
	if !ok {
		writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupported, Message: "the session does not offer " + gate})
	}
	return i, ok
}

// sessionEvent is one item of a session's event stream.
type sessionEvent struct {
	ev  contract.EnvironmentEvent
	err error
}

// sessionEvents streams the session's events after the cursor (the
// Last-Event-ID header, else the body's since) as SSE: each event's id
// line is its own stable id, so a client resumes through the provider's
// replay. The stream ends with end when the run ended, error when the
// provider broke it; a client leaving stops the read, never the run.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	octx, ocancel := s.callContext(r)
	defer ocancel()
	req, sess, ok := sessionCall(s, octx, w, r, wire.ParseSessionEventsRequest, func(q *wire.SessionEventsRequest) *contract.RunControlRef { return q.ControlRef })
	if !ok {
		return
	}
	since, execution := "", ""
	if req.Since != nil {
		since = *req.Since
	}
	if req.ExecutionID != nil {
		execution = *req.ExecutionID
	}
	if h := r.Header.Get(wire.HeaderLastEventID); h != "" {
		if _, err := contract.Validate(wire.HeaderLastEventID, contract.BoundedIdentifier, h); err != nil {
			writeError(w, wire.ErrorDetail{Code: wire.CodeInvalidRequest, Message: "Last-Event-ID is not an event id: " + err.Error()})
			return
		}
		since = h
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	items := make(chan sessionEvent, 64)
	go func() {
		defer close(items)
		for ev, err := range sess.Events(ctx, since, execution) {
			if err == nil && contract.IsPrivateEnvironmentEvent(ev) {
				continue // the execution owner's alone (NSO-03)
			}
			select {
			case items <- sessionEvent{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	h := w.Header()
	h.Set("Content-Type", wire.ContentTypeSSE)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	keep := time.NewTicker(s.opts.KeepAlive)
	defer keep.Stop()
	var buf []byte
	for {
		select {
		case it, open := <-items:
			switch {
			case !open && ctx.Err() == nil:
				_, _ = w.Write(endFrame)
				_ = rc.Flush()
				return
			case !open:
				return
			case it.err != nil:
				_, _ = w.Write(frame(0, wire.EventError, errorData(providerError(it.err))))
				_ = rc.Flush()
				return
			}
			var framed bool
			buf, framed = appendSessionEvent(buf[:0], it.ev)
			if _, err := w.Write(buf); err != nil || !framed {
				_ = rc.Flush()
				return
			}
			if len(items) == 0 {
				if err := rc.Flush(); err != nil {
					return
				}
			}
		case <-keep.C:
			if _, err := w.Write([]byte(":\n\n")); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.closing:
			return
		}
	}
}

// appendSessionEvent frames one session event: its own id as the SSE id
// when a frame can carry it (else none: the client then cannot resume
// after it). An event that cannot be framed becomes an error frame that
// ends the stream (framed false).
func appendSessionEvent(b []byte, ev contract.EnvironmentEvent) ([]byte, bool) {
	id := ""
	if ev.ID != nil && wire.SSEIDSafe(*ev.ID) {
		id = *ev.ID
	}
	out, err := wire.AppendSSEJSONID(b, id, ev)
	if err != nil {
		return append(b, frame(0, wire.EventError, errorData(wire.ErrorDetail{Code: wire.CodeProvider, Message: "the provider emitted an event with no JSON form: " + err.Error()}))...), false
	}
	return out, true
}

// sessionBoundary observes the bound run's native context boundary
// (nativeContinuation).
func (s *Server) sessionBoundary(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	_, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionRequest, sessionRef)
	if !ok {
		return
	}
	nc, ok := has[contract.NativeContinuer](w, sess, "nativeContinuation")
	if !ok {
		return
	}
	proof, err := nc.ContextBoundary(ctx)
	if err == nil && proof == nil {
		err = errNoAnswer
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, proof)
}

// sessionContinue continues the session natively with the exact turn the
// request's digest binds (nativeContinuation). It runs on the server's
// context, bounded by PromptTimeout, so a client that lost the answer
// and re-sends the same operation is answered replayed by the provider,
// never with a second continuation. The provider's answer (accepted,
// replayed, conflict, boundary_mismatch, …) is passed on as it is. The
// seat stage's credential request of the continued turn comes in its
// header, as for every turn (RG-07).
func (s *Server) sessionContinue(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(s.base, s.opts.PromptTimeout)
	defer cancel()
	req, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionContinueRequest, func(q *wire.SessionContinueRequest) *contract.RunControlRef { return q.ControlRef })
	if !ok {
		return
	}
	nc, ok := has[contract.NativeContinuer](w, sess, "nativeContinuation")
	if !ok {
		return
	}
	cred, ok := credentialRequest(w, r)
	if !ok {
		return
	}
	res, err := nc.ContinueNative(ctx, &req.Request, contract.NativeContinuationOptions{Turn: req.Turn, Credential: cred})
	if err == nil && res == nil {
		err = errNoAnswer
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, res)
}
