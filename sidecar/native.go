package sidecar

import (
	"net/http"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// observe keeps the native session a private event of the turn carries;
// a malformed observation is none, and the latest valid one wins.
func (t *turn) observe(ev contract.EnvironmentEvent) {
	obs := contract.ObservedNativeSession(ev)
	if obs == nil {
		return
	}
	t.mu.Lock()
	t.native = obs
	t.mu.Unlock()
}

// nativeSession answers wire.RouteTurnNativeSession: the native session
// an ended turn observed (NSO-02), for the client that runs the turn —
// behind the bearer token like every route, and never on the public
// stream (NSO-03). A turn still live is waited for, up to ResultWait
// (its terminal event reaches the client a moment before the provider's
// stream ends), then answered 409 turn_not_ended: what a live turn
// observed is not settled, so the client asks again once it ended. An
// unknown environment or turn is 404 not_found. The id's value is never
// logged.
func (s *Server) nativeSession(w http.ResponseWriter, r *http.Request) {
	turnID := r.PathValue("turn")
	s.mu.Lock()
	t := s.turns[turnKey{env: r.PathValue("id"), turn: turnID}]
	s.mu.Unlock()
	if t == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such turn: it never ran here, or ended longer ago than the server keeps turns"})
		return
	}
	wait := time.NewTimer(s.opts.ResultWait)
	defer wait.Stop()
	for {
		t.mu.Lock()
		done, obs := t.done, t.native
		var changed chan struct{}
		if !done {
			changed = t.waitLocked()
		}
		t.mu.Unlock()
		if done {
			answer(w, &wire.TurnNativeSession{TurnID: turnID, Observation: obs}, nil)
			return
		}
		select {
		case <-changed:
		case <-wait.C:
			writeError(w, wire.ErrorDetail{Code: wire.CodeTurnNotEnded, Message: "the turn has not ended; ask again after its stream ended"})
			return
		case <-r.Context().Done():
			return
		case <-s.closing:
			writeError(w, wire.ErrorDetail{Code: wire.CodeUnavailable, Message: "the server is shutting down"})
			return
		}
	}
}

// sessionNativeSession answers wire.RouteSessionNativeSession: the
// native session of the run a detached session is bound to (NSO-02),
// as the provider's session reports it (contract.NativeSessionReporter)
// — behind the bearer token like every route, never on the session's
// events (NSO-03), its value never logged. A session that cannot
// report one, has observed none yet, or reports a malformed one is
// answered without an observation: unknown, never empty.
func (s *Server) sessionNativeSession(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	_, sess, ok := sessionCall(s, ctx, w, r, wire.ParseSessionRequest, sessionRef)
	if !ok {
		return
	}
	var out wire.SessionNativeSession
	if nr, ok := sess.(contract.NativeSessionReporter); ok {
		obs, known, err := nr.ObservedNativeSession(ctx)
		if err != nil {
			writeError(w, providerError(err))
			return
		}
		if known && obs != nil {
			if valid, err := contract.NewNativeSessionObserved(obs.Provider, obs.NativeSessionID); err == nil {
				out.Observation = valid
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}
