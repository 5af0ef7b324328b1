package sidecar

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// QuietPeriod is how long Quiesce waits, once no work is live, for the
// server to have no request in flight and none starting: a client that
// saw its run end asks for the result within it.
const QuietPeriod = 500 * time.Millisecond

// quiescePoll is how often Quiesce looks at the live work.
const quiescePoll = 100 * time.Millisecond

// startsWork names the routes (method and pattern) that start new work:
// while the server quiesces they are answered unavailable. A known
// turn's stream (POST RouteTurns with its id) is refused in startTurn
// only when the turn is new.
var startsWork = map[string]bool{
	http.MethodPost + " " + wire.PathEnvironments:      true,
	http.MethodPost + " " + wire.RouteDispatch:         true,
	http.MethodPost + " " + wire.RouteSessionPrompt:    true,
	http.MethodPost + " " + wire.RouteSessionContinue:  true,
	http.MethodPost + " " + wire.RouteWorkspaceExec:    true,
	http.MethodPost + " " + wire.RouteFork:             true,
	http.MethodPost + " " + wire.PathExactEnvironments: true,
	http.MethodPost + " " + wire.RouteExactProcesses:   true,
}

// drainingDetail is the refusal of new work while the server quiesces:
// unavailable, which a client retries (on another server, or on this
// one once it is back).
var drainingDetail = wire.ErrorDetail{Code: wire.CodeUnavailable, Message: "the server is shutting down and takes no new work; retry on another server or once it is back"}

// refusingNew writes the refusal of new work and reports true while
// the server quiesces.
func (s *Server) refusingNew(w http.ResponseWriter) bool {
	if !s.quiescing.Load() {
		return false
	}
	w.Header().Set("Retry-After", "1")
	writeError(w, drainingDetail)
	return true
}

// detachedRun is a run this server dispatched, followed until it ends so
// that Quiesce can wait for it.
type detachedRun struct {
	id      uint64
	env     string
	session string
	ref     *contract.RunControlRef
}

// trackDetached remembers a dispatched run, the last MaxTurns of them:
// one evicted before it ended is not waited for.
func (s *Server) trackDetached(env string, ref *contract.SessionRef) {
	if ref == nil {
		return
	}
	s.dmu.Lock()
	defer s.dmu.Unlock()
	for _, d := range s.detached {
		if d.env == env && d.session == ref.ID && sameRef(d.ref, ref.ControlRef) {
			return // a re-sent dispatch the provider answered with the same run
		}
	}
	s.detachedSeq++
	s.detached = append(s.detached, detachedRun{id: s.detachedSeq, env: env, session: ref.ID, ref: ref.ControlRef})
	if over := len(s.detached) - s.opts.MaxTurns; over > 0 {
		s.detached = append(s.detached[:0], s.detached[over:]...)
	}
}

// Quiesce begins a graceful stop: from now on the server refuses new
// work (creates, turns, dispatches, prompts, continuations, workspace
// commands, forks, exact creates and spawns) with 503 unavailable, while
// it goes on serving what is running — streams, results, status,
// cancellation — so live turns finish and their clients read their
// ends. It returns once no turn or dispatched run the server started is
// live and no request has been in flight for QuietPeriod, or when ctx
// ends, with the number of turns, runs and requests still live then
// (nothing is cancelled: the caller decides, Abandon or Close) and
// ctx's cause. A run whose state the provider cannot tell now counts as
// live.
func (s *Server) Quiesce(ctx context.Context) (live int, err error) {
	s.quiescing.Store(true)
	t := time.NewTicker(quiescePoll)
	defer t.Stop()
	var quietSince time.Time
	for {
		live = s.liveWork(ctx)
		switch {
		case live > 0 || s.inflight.Load() > 0:
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = time.Now()
		case time.Since(quietSince) >= QuietPeriod && s.inflight.Load() == 0:
			return 0, nil
		}
		select {
		case <-ctx.Done():
			// Counted without asking the provider again: the deadline
			// passed.
			return s.liveTurns() + s.trackedRuns() + int(s.inflight.Load()), context.Cause(ctx)
		case <-t.C:
		}
	}
}

// liveTurns counts the turns not ended.
func (s *Server) liveTurns() int {
	n := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.turns {
		t.mu.Lock()
		if !t.done {
			n++
		}
		t.mu.Unlock()
	}
	return n
}

// trackedRuns counts the dispatched runs not yet seen ended.
func (s *Server) trackedRuns() int {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	return len(s.detached)
}

// liveWork counts the live turns and the dispatched runs not known to
// have ended, asking the provider (each call within ctx and
// CallTimeout) and forgetting those that did.
func (s *Server) liveWork(ctx context.Context) int {
	n := s.liveTurns()
	s.dmu.Lock()
	runs := append([]detachedRun(nil), s.detached...)
	s.dmu.Unlock()
	ended := map[uint64]bool{}
	for _, d := range runs {
		if s.detachedEnded(ctx, d) {
			ended[d.id] = true
			continue
		}
		n++
	}
	if len(ended) > 0 {
		s.dmu.Lock()
		s.detached = slices.DeleteFunc(s.detached, func(d detachedRun) bool { return ended[d.id] })
		s.dmu.Unlock()
	}
	return n
}

// detachedEnded reports whether the provider says d ended, or no longer
// holds it (its environment or session is gone); a provider that does
// not answer within CallTimeout leaves it live.
func (s *Server) detachedEnded(ctx context.Context, d detachedRun) bool {
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	env := s.lookup(ctx, d.env)
	if env == nil {
		return ctx.Err() == nil
	}
	o, ok := env.(contract.SessionOpener)
	if !ok {
		return true
	}
	sess, err := o.Session(ctx, d.session, d.ref)
	if err != nil || sess == nil {
		return ctx.Err() == nil
	}
	st, known, err := sess.Status(ctx)
	return err == nil && known && st.Terminal()
}

func sameRef(a, b *contract.RunControlRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return contract.SameRunControlRef(*a, *b)
}

// Abandon ends a server whose process is about to exit with work still
// live (Quiesce's deadline passed; the listener and connections are
// closed first, so no client reads what follows): it cuts the open
// streams (Drain) and stops the turns the server runs itself, but it
// leaves a create or spawn still running as it is. Its attempt then
// stays unrecorded and a retry on a restarted server sharing the Store
// is answered in doubt — never a second environment or process —
// where a cancelled one would be recorded failed and run again. The
// process is expected to exit; one that goes on calls Close instead, or
// after it once the Store is closed (to end the server's goroutines).
func (s *Server) Abandon() {
	s.Drain()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.turns {
		t.mu.Lock()
		cancel := t.cancel
		t.mu.Unlock()
		cancel()
	}
}
