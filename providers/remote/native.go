package remote

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

var _ contract.OwnedStreamer = (*environment)(nil)

// StreamOwned implements contract.OwnedStreamer: Stream for the turn's
// execution owner (the kernel), which also receives the private
// native.session.observed event of the native session the served turn
// observed (NSO-01), so the owner binds it to its run (NSO-02) as it
// does for an in-process provider. The observation never travels on the
// public stream (NSO-03): once the turn's terminal event arrived it is
// read from the server's private native-session route (bounded by
// CallTimeout) and yielded just before that terminal event. A turn that
// ends without a terminal event, or that the server ends with an error
// after it started, is asked too; a turn the caller abandoned (its
// context ended) is not. A failure to read it is not the turn's: the
// native session stays unknown and a warning says so (without the id).
func (e *environment) StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		turnID := turnIDOf(in)
		started, asked := false, false
		// observe yields the turn's observation, if any, once; false when
		// the caller stopped reading.
		observe := func() bool {
			if asked || !started || ctx.Err() != nil {
				return true
			}
			asked = true
			obs := e.nativeSession(ctx, turnID)
			if obs == nil {
				return true
			}
			return yield(nativeEvent(obs, turnID), nil)
		}
		for ev, err := range e.stream(ctx, in, turnID) {
			if err != nil {
				// The server's own word after the turn started (its
				// error frame, a refused resume) ends a turn it ran: what
				// it observed is settled. A stream lost for good (the
				// wire error wrapped in the client's giving up), a
				// malformed event or a refusal before any event is not
				// asked about: the server may still be running the turn,
				// and the failure is reported without a wait.
				if _, said := err.(*wire.Error); said && !observe() {
					return
				}
				yield(ev, err)
				return
			}
			started = true
			if _, terminal := contract.EnvironmentEventTerminal(ev); terminal && !observe() {
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
		observe()
	}
}

// nativeSession reads the native session an ended turn observed (nil
// when it observed none, or when it cannot be read: then a warning
// names the environment, the turn and why — never the id).
func (e *environment) nativeSession(ctx context.Context, turnID string) *contract.NativeSessionObserved {
	path := turnPath(e.doc.ID, turnID) + "/native-session"
	res, err := roundTrip(ctx, e.p, exchange{method: http.MethodGet, path: path, answer: "native session answer",
		timeout: e.p.opts.CallTimeout, retry: true}, func(b []byte) (*wire.TurnNativeSession, error) {
		res, err := wire.ParseTurnNativeSession(b)
		if err == nil && res.TurnID != turnID {
			err = fmt.Errorf("the answer names turn %q", res.TurnID)
		}
		return res, err
	})
	if errors.Is(err, wire.ErrNotFound) {
		// An older server has no such route: it answers every turn so.
		// Said once per provider, not once per turn; later turns on it
		// are logged at debug level.
		log := e.p.opts.Logger.Debug
		if e.p.nativeRouteMissing.CompareAndSwap(false, true) {
			log = e.p.opts.Logger.Warn
		}
		log("remote: the server does not serve a turn's native session (404: an older agentrt serve?); runs on it record the native session unknown",
			"environment", e.doc.ID, "turn", turnID, "err", err)
		return nil
	}
	if err != nil {
		e.p.opts.Logger.Warn("remote: the served turn's native session could not be read; the run records it unknown",
			"environment", e.doc.ID, "turn", turnID, "err", err)
		return nil
	}
	return res.Observation
}

// nativeEvent is the private environment event of obs, as an in-process
// provider yields it to its execution owner.
func nativeEvent(obs *contract.NativeSessionObserved, turnID string) contract.EnvironmentEvent {
	n := obs.Event()
	id := turnID + "-native"
	return contract.EnvironmentEvent{Type: contract.EventTypeNativeSessionObserved, ID: &id, Normalized: &n,
		Data: map[string]canonjson.Value{"provider": canonjson.StringValue(obs.Provider), "nativeSessionId": canonjson.StringValue(obs.NativeSessionID)}}
}

var _ contract.NativeSessionReporter = (*session)(nil)

// ObservedNativeSession implements contract.NativeSessionReporter: the
// native session of the run the session is bound to, read from the
// server's private session route (bounded by CallTimeout), so a
// detached run's owner (retained) binds it to its record (NSO-02) as it
// does for an in-process provider. ok is false while the server reports
// none. An older server without the route (404) reports none too, and a
// warning says so once per provider; the id is never logged.
func (s *session) ObservedNativeSession(ctx context.Context) (*contract.NativeSessionObserved, bool, error) {
	res, err := roundTrip(ctx, s.e.p, s.call("/native-session", wire.SessionRequest{ControlRef: s.controlRef()}, s.e.p.opts.CallTimeout, true),
		wire.ParseSessionNativeSession)
	if errors.Is(err, wire.ErrNotFound) {
		log := s.e.p.opts.Logger.Debug
		if s.e.p.nativeRouteMissing.CompareAndSwap(false, true) {
			log = s.e.p.opts.Logger.Warn
		}
		log("remote: the server does not serve a session's native session (404: an older agentrt serve, or the session is gone); the run records it unknown",
			"environment", s.e.doc.ID, "session", s.id, "err", err)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("remote: reading session %s's native session: %w", s.id, err)
	}
	return res.Observation, res.Observation != nil, nil
}
