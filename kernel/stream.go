package kernel

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// Stream runs one exact turn, as Execute does, and yields its events as
// runtime event envelopes the moment each is durable. The stream always
// ends with exactly one terminal envelope — a status event, completed,
// failed or cancelled — that states the run's recorded outcome: also when
// the provider's stream broke, ended without a terminal event or was
// refused before dispatch, and also when the provider said "completed"
// but the kernel failed the run (a different served model, say). The
// provider's own terminal events travel as raw events, so they can never
// be mistaken for the outcome.
//
// Breaking out of the loop cancels the run, which is recorded cancelled.
// An error is yielded, once and last, only when the run could not be
// recorded at all. Replay yields the same envelopes from the store.
func Stream(ctx context.Context, req Request) iter.Seq2[contract.EventEnvelope, error] {
	return StreamRun(ctx, req).Events()
}

// StreamedRun is one turn run by StreamRun: its envelopes, then its
// recorded result.
type StreamedRun struct {
	ctx context.Context
	req Request
	res *Result
	err error
	// done is set once Events has run the turn to its end.
	done bool
}

// ErrStreamNotDone is StreamedRun.Result's error before Events has run
// the turn to its end.
var ErrStreamNotDone = errors.New("kernel: the streamed run has not ended: range over Events first")

// StreamRun is Stream with the result kept: range over Events (once),
// then Result returns what Execute would have — the typed result
// (status, delivered, usage, served model, verdict) and the *RunError of
// a run that did not complete — without reading the store again.
func StreamRun(ctx context.Context, req Request) *StreamedRun {
	if req.RunID == "" {
		req.RunID = NewID("run")
	}
	return &StreamedRun{ctx: ctx, req: req}
}

// Events yields the run's envelopes as Stream documents. It runs the
// turn each time it is ranged over; Result reports the last run.
func (s *StreamedRun) Events() iter.Seq2[contract.EventEnvelope, error] {
	return func(yield func(contract.EventEnvelope, error) bool) {
		ctx, cancel := context.WithCancel(s.ctx)
		defer cancel()
		req := s.req
		w := &streamer{yield: yield, cancel: cancel, runID: req.RunID, open: true}
		req.observe = w
		s.res, s.err = Execute(ctx, req)
		s.done = true
		var runErr *RunError
		if s.err != nil && !errors.As(s.err, &runErr) {
			w.emit(contract.EventEnvelope{}, s.err)
			return
		}
		if !w.terminal {
			w.emit(contract.EventEnvelope{}, fmt.Errorf("kernel: run %s ended without a recorded end", req.RunID))
		}
	}
}

// Result returns the run's recorded result and error once Events has
// run it to its end (ErrStreamNotDone before). A consumer that stopped
// ranging early cancelled the run: its result says so.
func (s *StreamedRun) Result() (*Result, error) {
	if !s.done {
		return nil, ErrStreamNotDone
	}
	return s.res, s.err
}

// streamer turns an execution's durable record into envelopes.
type streamer struct {
	yield    func(contract.EventEnvelope, error) bool
	cancel   context.CancelFunc
	runID    string
	open     bool // the consumer still listens
	terminal bool
}

func (w *streamer) emit(e contract.EventEnvelope, err error) {
	if !w.open {
		return
	}
	if !w.yield(e, err) {
		w.open = false
		w.cancel()
	}
}

func (w *streamer) event(provider string, e store.Event) {
	w.emit(eventEnvelope(w.runID, provider, e), nil)
}

func (w *streamer) ended(r store.Run, events int64) {
	w.terminal = true
	w.emit(terminalEnvelope(r, events), nil)
}

// Replay yields a recorded run's envelopes from the store, identical to
// the ones Stream yielded live: every event, then — once the run has
// ended — its terminal envelope. A run still going yields its events so
// far and no terminal.
func Replay(ctx context.Context, s store.Store, runID string) iter.Seq2[contract.EventEnvelope, error] {
	return func(yield func(contract.EventEnvelope, error) bool) {
		run, err := s.GetRun(ctx, runID)
		if err != nil {
			yield(contract.EventEnvelope{}, fmt.Errorf("kernel: replaying run %s: %w", runID, err))
			return
		}
		backend := "agentrt"
		if v, ok := run.Doc.Get("provider"); ok && v.Kind() == canonjson.String && v.Str() != "" {
			backend = v.Str()
		}
		var after string
		var n int64
		for {
			page, err := s.Events(ctx, runID, after, 500)
			if err != nil {
				yield(contract.EventEnvelope{}, fmt.Errorf("kernel: replaying run %s: %w", runID, err))
				return
			}
			for _, e := range page {
				if !yield(eventEnvelope(runID, backend, e), nil) {
					return
				}
				after, n = e.Cursor, e.Sequence
			}
			if len(page) < 500 {
				break
			}
		}
		if run.Status.Terminal() {
			yield(terminalEnvelope(run, n), nil)
		}
	}
}

// envelopeTime is how envelopes spell instants: ECMAScript's
// Date.toISOString, so TypeScript consumers parse and compare them.
func envelopeTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// eventEnvelope wraps one recorded event. A provider event with a
// canonical, non-terminal form travels as that form; anything else — a
// backend-native event, or a provider's own claim that the run ended —
// travels as a raw event.
func eventEnvelope(runID, backend string, e store.Event) contract.EventEnvelope {
	cursor := e.Cursor
	env := contract.EventEnvelope{RunID: runID, EventID: e.ID, Sequence: e.Sequence, Cursor: &cursor,
		ReceivedAt: envelopeTime(e.Time)}
	var ev contract.EnvironmentEvent
	if err := canonjson.FromValue(e.Body, &ev); err == nil && ev.Normalized != nil {
		if _, terminal := contract.EventTerminal(*ev.Normalized); !terminal && !contract.IsPrivateEvent(*ev.Normalized) {
			env.Event = *ev.Normalized
			return env
		}
	}
	body := e.Body
	if !contract.IsBoundedJSON(body) {
		body = canonjson.ObjectValue([]canonjson.Member{
			{Name: "type", Value: canonjson.StringValue(e.Type)},
			{Name: "omitted", Value: canonjson.StringValue("the event exceeds the contract's JSON bounds; the run store holds it whole")},
		})
	}
	env.Event = contract.StreamEvent{Type: contract.EventTypeRaw, Raw: &contract.RawEvent{Backend: backend, Event: body}}
	return env
}

// terminalEnvelope states a run's recorded outcome as its last envelope,
// numbered after its events.
func terminalEnvelope(r store.Run, events int64) contract.EventEnvelope {
	status, detail := contract.StreamStatusFailed, ""
	switch r.Status {
	case store.StatusCompleted:
		status = contract.StreamStatusCompleted
		if v, ok := r.Doc.Get("delivered"); ok && v.Kind() == canonjson.Bool {
			detail = "not delivered"
			if v.Bool() {
				detail = "delivered"
			}
		}
	case store.StatusCancelled, store.StatusTimedOut:
		status = contract.StreamStatusCancelled
	}
	if t, ok := r.Doc.Get("terminal"); ok {
		reason, _ := t.Get("reason")
		why, _ := t.Get("detail")
		switch {
		case reason.Str() != "" && why.Str() != "":
			detail = reason.Str() + ": " + why.Str()
		case reason.Str() != "":
			detail = reason.Str()
		}
	}
	if r.Status == store.StatusInterrupted {
		detail = "interrupted: the process running it stopped before it ended"
	}
	var d *string
	if detail != "" {
		clipped := clipUTF16(detail, contract.MaxStringLength)
		d = &clipped
	}
	return contract.EventEnvelope{RunID: r.ID, EventID: r.ID + ":end", Sequence: events + 1,
		ReceivedAt: envelopeTime(r.UpdatedAt), Event: contract.StatusStreamEvent(status, d)}
}

// clipUTF16 shortens s to at most n UTF-16 units (the contract's string
// measure) without splitting a character.
func clipUTF16(s string, n int) string {
	if canonjson.UTF16Len(s) <= n {
		return s
	}
	units := 0
	for i, r := range s {
		w := 1
		if r >= 0x10000 {
			w = 2
		}
		if units+w > n {
			return s[:i]
		}
		units += w
	}
	return s
}
