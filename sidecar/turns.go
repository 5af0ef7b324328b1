package sidecar

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

type turnKey struct{ env, turn string }

// turn is one running or ended turn and the framed events it keeps for
// resumption: events[i] has sequence base+i+1.
type turn struct {
	key    turnKey
	digest string
	cancel context.CancelFunc

	mu      sync.Mutex
	events  [][]byte
	base    int64
	next    int64 // the last sequence appended
	done    bool
	end     []byte // the closing frame (end or error)
	endedAt time.Time
	changed chan struct{} // closed at the next change; nil when nobody waits
	readers int
	abandon *time.Timer
	ops     map[string]string // cancel operation id -> effect
	// native is the native session the turn observed (NSO-02), kept for
	// its execution owner (nativeSession), never framed (NSO-03); nil
	// while none was observed.
	native *contract.NativeSessionObserved
}

// changedLocked wakes every waiting reader.
func (t *turn) changedLocked() {
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// waitLocked is the channel closed at the next change. It is made only
// when a reader is about to wait, so an event nobody waits for costs no
// channel.
func (t *turn) waitLocked() chan struct{} {
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

func (t *turn) append(frame []byte, max int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.events = append(t.events, frame)
	if len(t.events) > max {
		drop := len(t.events) - max
		t.events = t.events[drop:]
		t.base += int64(drop)
	}
	t.changedLocked()
}

func (t *turn) finish(frame []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done, t.end, t.endedAt = true, frame, time.Now()
	if t.abandon != nil {
		t.abandon.Stop()
	}
	t.changedLocked()
}

// frame frames one SSE event; a frame that cannot be built becomes an
// error frame.
func frame(seq int64, event string, data []byte) []byte {
	b, err := wire.AppendSSE(nil, seq, event, data)
	if err != nil {
		b, _ = wire.AppendSSE(nil, 0, wire.EventError, errorData(wire.ErrorDetail{Code: wire.CodeInternal, Message: "an event could not be framed"}))
	}
	return b
}

func errorData(d wire.ErrorDetail) []byte {
	b, err := wire.Marshal(wire.ErrorBody{Error: d})
	if err != nil {
		return []byte(`{"error":{"code":"internal","message":"error"}}`)
	}
	return b
}

var endFrame = frame(0, wire.EventEnd, []byte(`{}`))

// slabSize is the size of the blocks a turn's frames are encoded into.
const slabSize = 64 << 10

// frameSlab hands out frames encoded in place into shared blocks, so an
// event costs no buffer growth and no allocation of its own. A frame is
// never written again once handed out; a block lives while any of its
// frames is kept.
type frameSlab struct{ buf []byte }

// next encodes ev as the frame of sequence seq.
func (f *frameSlab) next(seq int64, ev contract.EnvironmentEvent) ([]byte, error) {
	if cap(f.buf)-len(f.buf) < slabSize/16 {
		f.buf = make([]byte, 0, slabSize)
	}
	start := len(f.buf)
	out, err := wire.AppendSSEJSON(f.buf, seq, ev)
	if err != nil {
		return nil, err
	}
	f.buf = out
	return out[start:len(out):len(out)], nil
}

// run streams the turn from env until it ends or is cancelled. It is the
// turn's only writer, so it numbers the events itself.
func (s *Server) run(ctx context.Context, t *turn, env contract.Environment, in *contract.TurnInput, cancel context.CancelFunc) {
	defer cancel()
	var slab frameSlab
	var seq int64
	// The server owns the turn's execution: an environment that hands
	// its owner the private native session observation does (NSO-01).
	events := env.Stream
	if o, ok := env.(contract.OwnedStreamer); ok {
		events = o.StreamOwned
	}
	for ev, err := range events(ctx, in) {
		if err != nil {
			t.finish(frame(0, wire.EventError, errorData(providerError(err))))
			return
		}
		if contract.IsPrivateEnvironmentEvent(ev) {
			// The native session observation is the execution owner's —
			// this server's — and never goes out on the stream (NSO-03);
			// the turn keeps it for the client that runs the turn
			// (nativeSession).
			t.observe(ev)
			continue
		}
		f, err := slab.next(seq+1, ev)
		if err != nil {
			t.finish(frame(0, wire.EventError, errorData(wire.ErrorDetail{Code: wire.CodeProvider, Message: "the provider emitted an event with no JSON form: " + err.Error()})))
			return
		}
		if len(f) > wire.MaxBodyBytes {
			// No client reads an event past the limit: it would break
			// every reader's stream, again at each reconnect, leaving the
			// turn in doubt although it is over. The turn ends here,
			// saying why (and the provider's turn is cancelled).
			t.finish(frame(0, wire.EventError, errorData(wire.ErrorDetail{Code: wire.CodeTooLarge,
				Message: fmt.Sprintf("the provider emitted event %d of %d bytes, past the stream's %d-byte event limit; the turn ends here", seq+1, len(f), wire.MaxBodyBytes)})))
			return
		}
		seq++
		t.append(f, s.opts.MaxTurnEvents)
	}
	t.finish(endFrame)
}

func (s *Server) startTurn(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseTurnRequest)
	if !ok {
		return
	}
	if req.Input.Credential, ok = credentialRequest(w, r); !ok {
		return
	}
	after, ok := lastEventID(w, r)
	if !ok {
		return
	}
	// A Last-Event-ID, even 0, says the client resumes (or only attaches
	// to) a turn it knows was started: it is never started here.
	resuming := r.Header.Get(wire.HeaderLastEventID) != ""
	digest, err := contract.DigestOf(req.Input)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	id := r.PathValue("id")
	key := turnKey{env: id, turn: req.TurnID}
	s.mu.Lock()
	t := s.turns[key]
	s.mu.Unlock()
	if t != nil {
		if t.digest != digest {
			writeError(w, wire.ErrorDetail{Code: wire.CodeTurnConflict, Message: "this turn id names a turn with a different input", Path: ptr("/turnId")})
			return
		}
		s.stream(w, r, t, after)
		return
	}
	if resuming {
		// A reader resuming a turn this server does not hold (it ended
		// and was forgotten, or the server restarted): its events are
		// gone, and running it again would repeat work that may have
		// happened. It is in doubt, never re-run.
		writeError(w, wire.ErrorDetail{Code: wire.CodeResumeGone, Message: "this server holds no turn " + strconv.Quote(req.TurnID) + " to resume; it is not run again"})
		return
	}
	if s.refusingNew(w) {
		return
	}
	ctx, cancel := s.callContext(r)
	env := s.lookup(ctx, id)
	cancel()
	if env == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such environment"})
		return
	}
	t, existing, ok := s.admit(key, digest)
	if !ok {
		writeError(w, wire.ErrorDetail{Code: wire.CodeUnavailable, Message: "too many turns are live; retry later"})
		return
	}
	if existing {
		if t.digest != digest {
			writeError(w, wire.ErrorDetail{Code: wire.CodeTurnConflict, Message: "this turn id names a turn with a different input", Path: ptr("/turnId")})
			return
		}
	} else {
		tctx, tcancel := context.WithCancel(s.base)
		t.mu.Lock()
		t.cancel = tcancel
		t.abandon = time.AfterFunc(s.opts.AbandonAfter, tcancel)
		t.abandon.Stop()
		t.mu.Unlock()
		go s.run(tctx, t, env, &req.Input, tcancel)
	}
	s.stream(w, r, t, after)
}

// admit registers a new turn under key, evicting ended turns past their
// retention (or, when full, the oldest ended one). It reports an
// existing turn, or false when every slot holds a live turn.
func (s *Server) admit(key turnKey, digest string) (t *turn, existing, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.turns[key]; t != nil {
		return t, true, true
	}
	now := time.Now()
	var oldest *turn
	for k, x := range s.turns {
		x.mu.Lock()
		done, ended := x.done, x.endedAt
		x.mu.Unlock()
		if !done {
			continue
		}
		if now.Sub(ended) > s.opts.RetainFinished {
			delete(s.turns, k)
			continue
		}
		if oldest == nil || ended.Before(oldest.endedAt) {
			oldest = x
		}
	}
	if len(s.turns) >= s.opts.MaxTurns {
		if oldest == nil {
			return nil, false, false
		}
		delete(s.turns, oldest.key)
	}
	t = &turn{key: key, digest: digest, ops: map[string]string{}, cancel: func() {}}
	s.turns[key] = t
	return t, false, true
}

func (s *Server) resumeTurn(w http.ResponseWriter, r *http.Request) {
	after, ok := lastEventID(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	t := s.turns[turnKey{env: r.PathValue("id"), turn: r.PathValue("turn")}]
	s.mu.Unlock()
	if t == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such turn"})
		return
	}
	s.stream(w, r, t, after)
}

// lastEventID reads the resume point: 0 (from the start) without the
// header.
func lastEventID(w http.ResponseWriter, r *http.Request) (int64, bool) {
	h := r.Header.Get(wire.HeaderLastEventID)
	if h == "" {
		return 0, true
	}
	n, err := wire.ParseEventID(h)
	if err != nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeInvalidRequest, Message: "Last-Event-ID: " + err.Error()})
		return 0, false
	}
	return n, true
}

// stream writes t's events after sequence after as SSE, following live
// ones until the turn ends, the client leaves or the server drains.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, t *turn, after int64) {
	t.mu.Lock()
	if after < t.base || after > t.next {
		// Before the window, or past what the turn produced (a reader
		// cannot have seen it: another incarnation's turn).
		t.mu.Unlock()
		writeError(w, wire.ErrorDetail{Code: wire.CodeResumeGone, Message: "the turn no longer holds the events after this Last-Event-ID"})
		return
	}
	t.readers++
	if t.abandon != nil {
		t.abandon.Stop()
	}
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.readers--
		if t.readers == 0 && !t.done && t.abandon != nil {
			t.abandon.Reset(s.opts.AbandonAfter)
		}
		t.mu.Unlock()
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
	pos := after
	for {
		t.mu.Lock()
		if pos < t.base {
			t.mu.Unlock()
			_, _ = w.Write(frame(0, wire.EventError, errorData(wire.ErrorDetail{Code: wire.CodeResumeGone, Message: "the reader fell behind the turn's event window"})))
			_ = rc.Flush()
			return
		}
		frames := t.events[pos-t.base:]
		done, end := t.done, t.end
		var changed chan struct{}
		if len(frames) == 0 && !done {
			changed = t.waitLocked()
		}
		t.mu.Unlock()
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				return
			}
		}
		pos += int64(len(frames))
		if done {
			_, _ = w.Write(end)
			_ = rc.Flush()
			return
		}
		if len(frames) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
			select {
			case <-s.closing:
				return
			default:
				continue
			}
		}
		select {
		case <-changed:
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

// MaxTurnCancelOperations bounds the distinct cancel operation ids one
// turn remembers (each is answered again, replayed, when retried): a
// client cannot grow a turn's memory without bound.
const MaxTurnCancelOperations = 64

func (s *Server) cancelTurn(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseCancelRequest)
	if !ok {
		return
	}
	turnID := r.PathValue("turn")
	s.mu.Lock()
	t := s.turns[turnKey{env: r.PathValue("id"), turn: turnID}]
	s.mu.Unlock()
	if t == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such turn"})
		return
	}
	t.mu.Lock()
	status, effect := contract.StatusReplayed, t.ops[req.OperationID]
	if effect == "" && len(t.ops) >= MaxTurnCancelOperations {
		t.mu.Unlock()
		writeError(w, wire.ErrorDetail{Code: wire.CodeInvalidRequest, Message: fmt.Sprintf("this turn already answered %d cancel operations; retry one of them", MaxTurnCancelOperations), Path: ptr("/operationId")})
		return
	}
	if effect == "" {
		status, effect = contract.StatusAccepted, contract.EffectNotLive
		if !t.done {
			effect = contract.EffectCancelRequested
		}
		t.ops[req.OperationID] = effect
	}
	cancel := t.cancel
	t.mu.Unlock()
	if effect == contract.EffectCancelRequested {
		cancel()
	}
	writeJSON(w, http.StatusOK, wire.CancelAcknowledgement{OperationID: req.OperationID, TurnID: turnID, Status: status, Effect: effect})
}

// cancelTurnsOf cancels the live turns of an environment being destroyed.
func (s *Server) cancelTurnsOf(envID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.turns {
		if k.env == envID {
			t.mu.Lock()
			cancel := t.cancel
			t.mu.Unlock()
			cancel()
		}
	}
}
