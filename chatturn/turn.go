package chatturn

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/boundediter"
	"github.com/agentrt/agentrt/ledger"
)

// Line types the turn itself writes around the producer's events.
const (
	TypeStarted   = "session.run.started"
	TypeCompleted = "session.run.completed"
	TypeFailed    = "session.run.failed"
	TypeError     = "error"
	// TypeRestarted says the turn starts over: the process serving it
	// died, and its substrate could not carry the execution on, so a new
	// attempt of the same execution (same execution id) produces it
	// from the beginning. A reader drops the producer lines it received
	// before this one; data is {sessionId, attempt}.
	TypeRestarted = "session.run.restarted"
)

// Line is one line of a turn's stream: a JSON object {type, data?}.
type Line struct {
	Type string          `json:"type"`
	Data canonjson.Value `json:"data,omitzero"`
	// EventID is the producer's own id of the event (the substrate's
	// event id), when it has one. A durable turn records it, never
	// sends it, and hands the last one recorded to Hooks.Resume
	// (Attempt.LastEventID) so that a new attempt streams on after it.
	EventID string `json:"-"`
}

// Value is the line as its JSON object, as readers get it.
func (l Line) Value() canonjson.Value {
	m := []canonjson.Member{{Name: "type", Value: canonjson.StringValue(l.Type)}}
	if l.Data.IsValid() {
		m = append(m, canonjson.Member{Name: "data", Value: l.Data})
	}
	return canonjson.ObjectValue(m)
}

// recorded is the line as a durable turn records it: its JSON object
// and, when it has one, the producer's event id.
func (l Line) recorded() canonjson.Value {
	if l.EventID == "" {
		return l.Value()
	}
	m := []canonjson.Member{}
	if l.Data.IsValid() {
		m = append(m, canonjson.Member{Name: "data", Value: l.Data})
	}
	m = append(m, canonjson.Member{Name: "eventId", Value: canonjson.StringValue(l.EventID)},
		canonjson.Member{Name: "type", Value: canonjson.StringValue(l.Type)})
	return canonjson.ObjectValue(m)
}

// Terminal reports whether the line ends a turn's stream.
func (l Line) Terminal() bool { return l.Type == TypeCompleted || l.Type == TypeFailed }

// lineFromValue reads a recorded line back.
func lineFromValue(v canonjson.Value) (Line, error) {
	t, ok := v.Get("type")
	if !ok || t.Kind() != canonjson.String || t.Str() == "" {
		return Line{}, errors.New("chatturn: a recorded line has no type")
	}
	data, _ := v.Get("data")
	l := Line{Type: t.Str(), Data: data}
	if id, ok := v.Get("eventId"); ok {
		if id.Kind() != canonjson.String {
			return Line{}, errors.New("chatturn: a recorded line's eventId is not a string")
		}
		l.EventID = id.Str()
	}
	return l, nil
}

// Identity names the turn: whose session it belongs to and which turn it
// is.
type Identity struct {
	// ProjectID scopes execution ids (DeriveExecutionID).
	ProjectID string
	TenantID  string
	SessionID string
	UserID    string
	TurnIndex int
}

// ExecutionID is DeriveExecutionID(i.ProjectID, i.SessionID, i.TurnIndex).
func (i Identity) ExecutionID() string {
	return DeriveExecutionID(i.ProjectID, i.SessionID, i.TurnIndex)
}

// DeriveExecutionID is a turn's execution id: "<projectID>:<sessionID>:
// <turnIndex>" — readable, stable across calls and processes, not a
// secret. Use it as both the execution id and the turn id of the first
// dispatch, so a client's retry lands on the same execution. It is not
// dispatch idempotency on its own.
func DeriveExecutionID(projectID, sessionID string, turnIndex int) string {
	return projectID + ":" + sessionID + ":" + strconv.Itoa(turnIndex)
}

// Production is what a turn's producer returns: its events, and the
// assistant's final text once they are drained.
type Production struct {
	Events    iter.Seq2[Line, error]
	FinalText func() string
	// Usage, when set, reports what the turn's model work spent once
	// the events are drained; a durable turn records it. Without it the
	// turn's usage is recorded unknown, never zero; a turn whose
	// production was cut (its events ended in an error, or the turn's
	// context ended first) records what Usage reported as a floor.
	Usage func() ledger.Usage
	// Continues, set by Hooks.Resume, says the events carry the
	// execution on after Attempt.LastEventID: the substrate still had
	// it and re-attached. Unset, the events are the whole turn from its
	// start, and a turn that had recorded producer lines first writes a
	// TypeRestarted line.
	Continues bool
}

// Attempt tells Hooks.Resume which execution to carry on and where.
type Attempt struct {
	// ExecutionID is the turn's execution id, the same as the first
	// attempt's: dispatch the substrate's execution (and its turn id)
	// under it again, so that it lands on the same execution.
	ExecutionID string
	// Number is the attempt: 2 for the first one after the serving
	// process died, and so on.
	Number int64
	// LastEventID is the EventID of the last producer line recorded by
	// the earlier attempts ("" when none had one): the substrate's
	// resume point.
	LastEventID string
	// Recorded is how many producer lines the earlier attempts recorded
	// (since the last TypeRestarted line): the lines readers already
	// have.
	Recorded int
}

// Hooks are the caller's side of a turn. Produce and
// PersistAssistantMessage are required; a failure of either (an error
// or a panic, and so of TransformFinalText) fails the turn. The others are notifications: their errors (and panics) are
// logged and never change what the client sees.
type Hooks struct {
	// Produce starts the turn's model work.
	Produce func(ctx context.Context) (Production, error)
	// Resume, when set, carries a durable turn's execution on in a new
	// attempt after the process serving it died: it re-attaches to the
	// substrate's execution a.ExecutionID and streams on after
	// a.LastEventID (Production.Continues), or, when the substrate
	// proves the execution never started or is gone, starts it again
	// under the same id. Unset, a new attempt calls Produce and starts
	// the turn over.
	Resume func(ctx context.Context, a Attempt) (Production, error)
	// PersistAssistantMessage stores the final text; it is called
	// exactly once, after the last producer event, with the text
	// TransformFinalText returned.
	PersistAssistantMessage func(ctx context.Context, id Identity, finalText string) error
	// TransformFinalText changes what is persisted, never what was
	// streamed.
	TransformFinalText func(finalText string) string
	// OnTurnComplete runs after the text was persisted.
	OnTurnComplete func(ctx context.Context, id Identity, finalText string) error
	// OnEvent sees every line the turn emits, its own included.
	OnEvent func(Line) error
	// TraceFlush runs once the turn ended, successful or not: handed to
	// WaitUntil when set (the host keeps it alive after the response),
	// otherwise awaited before the stream ends.
	TraceFlush func(ctx context.Context) error
	WaitUntil  func(func(ctx context.Context))
}

// Turn is one chat turn.
type Turn struct {
	Identity Identity
	Hooks    Hooks
	// Logger receives the notifications' failures; discarded when nil.
	Logger *slog.Logger
}

func (t *Turn) check() error {
	var errs []error
	if t.Hooks.Produce == nil {
		errs = append(errs, errors.New("chatturn: Hooks.Produce is required"))
	}
	if t.Hooks.PersistAssistantMessage == nil {
		errs = append(errs, errors.New("chatturn: Hooks.PersistAssistantMessage is required"))
	}
	if t.Identity.TenantID == "" {
		errs = append(errs, errors.New("chatturn: Identity.TenantID is required"))
	}
	if t.Identity.SessionID == "" {
		errs = append(errs, errors.New("chatturn: Identity.SessionID is required"))
	}
	if t.Identity.TurnIndex < 0 {
		errs = append(errs, fmt.Errorf("chatturn: Identity.TurnIndex %d is negative", t.Identity.TurnIndex))
	}
	return errors.Join(errs...)
}

func (t *Turn) logger() *slog.Logger {
	if t.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Logger
}

// ProducerGrace is how long a producer's events have to end once the
// turn's context ended (its deadline, a cancel, a reader gone): past it
// the turn fails without waiting for the producer any longer.
const ProducerGrace = 5 * time.Second

// HandleChatTurn is Stream under the name the seeds give it (spec
// §3.3, handleChatTurn): one streamed chat turn, persisted once. Handler
// serves it over HTTP with re-attach across processes.
func HandleChatTurn(ctx context.Context, t Turn) iter.Seq[Line] { return Stream(ctx, t) }

// Stream runs the turn and yields its lines as they happen. It never
// fails: a failure of the producer or of persisting is an error line and
// a session.run.failed line, and a turn that could not start (a missing
// hook) is those two lines alone. Breaking the loop cancels the turn. The
// turn is not recorded anywhere; Handler with a store records it.
func Stream(ctx context.Context, t Turn) iter.Seq[Line] {
	return func(yield func(Line) bool) {
		ctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		t.run(ctx, func(l Line) error {
			if !yield(l) {
				cancel(errReaderGone)
				return errReaderGone
			}
			return nil
		}, runOptions{})
	}
}

var errReaderGone = errors.New("chatturn: the reader stopped reading")

// runOptions are what a durable turn adds to a run: the attempt it
// carries on, and the claim it makes before persisting.
type runOptions struct {
	// resume is the attempt a new attempt carries on (nil: the first).
	resume *Attempt
	// started says the earlier attempts recorded the start line.
	started bool
	// claimPersist, when set, is called right before the assistant
	// message is persisted; an error fails the turn unpersisted.
	claimPersist func(ctx context.Context) error
	// produced, when set, is called once the production ran to its end
	// (its events drained without error while the turn's context was
	// live): its usage is then the turn's whole, not a floor.
	produced func()
}

// run drives the turn, handing each line to emit in order. An emit
// error (the line could not be delivered or recorded) fails the turn;
// the failure lines are still offered to emit.
func (t *Turn) run(ctx context.Context, emit func(Line) error, o runOptions) {
	id := t.Identity
	log := t.logger()
	send := func(l Line) error {
		if err := emit(l); err != nil {
			return err
		}
		t.notify(l)
		return nil
	}
	defer t.flush(ctx)
	if err := t.check(); err != nil {
		t.fail(send, err)
		return
	}
	if !o.started {
		if err := send(Line{Type: TypeStarted, Data: canonjson.ObjectValue([]canonjson.Member{
			{Name: "sessionId", Value: canonjson.StringValue(id.SessionID)},
			{Name: "tenantId", Value: canonjson.StringValue(id.TenantID)},
			{Name: "turnIndex", Value: canonjson.NumberValue(float64(id.TurnIndex))},
		})}); err != nil {
			t.fail(send, err)
			return
		}
	}
	final, err := t.produce(ctx, send, o.resume)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil && o.produced != nil {
		// Drained, and not because the turn's context ended (a producer
		// may stop quietly on it).
		o.produced()
	}
	if err != nil {
		t.fail(send, err)
		return
	}
	if tf := t.Hooks.TransformFinalText; tf != nil {
		if err := contain(func() error { final = tf(final); return nil }); err != nil {
			t.fail(send, fmt.Errorf("transforming the final text: %w", err))
			return
		}
	}
	if o.claimPersist != nil {
		if err := o.claimPersist(ctx); err != nil {
			t.fail(send, err)
			return
		}
	}
	if err := contain(func() error { return t.Hooks.PersistAssistantMessage(ctx, id, final) }); err != nil {
		t.fail(send, fmt.Errorf("persisting the assistant message: %w", err))
		return
	}
	if hook := t.Hooks.OnTurnComplete; hook != nil {
		if err := contain(func() error { return hook(ctx, id, final) }); err != nil {
			log.Warn("chat turn: OnTurnComplete failed", "session", id.SessionID, "turn", id.TurnIndex, "err", err)
		}
	}
	send(Line{Type: TypeCompleted, Data: canonjson.ObjectValue([]canonjson.Member{{Name: "sessionId", Value: canonjson.StringValue(id.SessionID)}})})
}

// produce streams the producer's events verbatim and returns the final
// text. On a new attempt (resume set) it asks Hooks.Resume, when set, to
// carry the execution on, and writes TypeRestarted before the events of
// a production that starts over where readers already have lines.
func (t *Turn) produce(ctx context.Context, send func(Line) error, resume *Attempt) (final string, err error) {
	err = contain(func() error {
		var (
			p   Production
			err error
		)
		if resume != nil && t.Hooks.Resume != nil {
			p, err = t.Hooks.Resume(ctx, *resume)
		} else {
			p, err = t.Hooks.Produce(ctx)
			p.Continues = false
		}
		if err != nil {
			return err
		}
		if resume != nil && resume.Recorded > 0 && !p.Continues {
			if err := send(restartedLine(t.Identity.SessionID, resume.Number)); err != nil {
				return err
			}
		}
		if p.Events != nil {
			// The producer is the caller's code: one that ignores its
			// context past ProducerGrace is abandoned (the turn fails),
			// and a panic in it fails the turn.
			for l, err := range boundediter.Seq2(ctx, p.Events, ProducerGrace) {
				if err != nil {
					return err
				}
				switch l.Type {
				case "":
					return errors.New("the producer yielded a line without a type")
				case TypeStarted, TypeCompleted, TypeFailed, TypeRestarted:
					// The turn has exactly one start and one end, its own.
					return fmt.Errorf("the producer yielded a %q line, which only the turn writes", l.Type)
				}
				if err := send(l); err != nil {
					return err
				}
			}
		}
		if p.FinalText != nil {
			final = p.FinalText()
		}
		return nil
	})
	return final, err
}

// fail emits the failure lines; it is best effort (the reader or the
// store may be what failed).
func (t *Turn) fail(send func(Line) error, err error) {
	if send(errorLine(err.Error())) == nil {
		send(failedLine(t.Identity.SessionID, err.Error()))
	}
}

func (t *Turn) notify(l Line) {
	hook := t.Hooks.OnEvent
	if hook == nil {
		return
	}
	if err := contain(func() error { return hook(l) }); err != nil {
		t.logger().Warn("chat turn: OnEvent failed", "session", t.Identity.SessionID, "type", l.Type, "err", err)
	}
}

func (t *Turn) flush(ctx context.Context) {
	flush := t.Hooks.TraceFlush
	if flush == nil {
		return
	}
	run := func(ctx context.Context) {
		if err := contain(func() error { return flush(ctx) }); err != nil {
			t.logger().Warn("chat turn: TraceFlush failed", "session", t.Identity.SessionID, "err", err)
		}
	}
	if t.Hooks.WaitUntil != nil {
		t.Hooks.WaitUntil(run)
		return
	}
	run(context.WithoutCancel(ctx))
}

// contain runs fn, turning a panic into an error.
func contain(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn()
}

func errorLine(msg string) Line {
	return Line{Type: TypeError, Data: canonjson.ObjectValue([]canonjson.Member{{Name: "message", Value: canonjson.StringValue(msg)}})}
}

func restartedLine(sessionID string, attempt int64) Line {
	return Line{Type: TypeRestarted, Data: canonjson.ObjectValue([]canonjson.Member{
		{Name: "attempt", Value: canonjson.NumberValue(float64(attempt))},
		{Name: "sessionId", Value: canonjson.StringValue(sessionID)},
	})}
}

func failedLine(sessionID, msg string) Line {
	return Line{Type: TypeFailed, Data: canonjson.ObjectValue([]canonjson.Member{
		{Name: "message", Value: canonjson.StringValue(msg)},
		{Name: "sessionId", Value: canonjson.StringValue(sessionID)},
	})}
}
