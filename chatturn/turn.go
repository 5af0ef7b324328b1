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
)

// Line is one line of a turn's stream: a JSON object {type, data?}.
type Line struct {
	Type string          `json:"type"`
	Data canonjson.Value `json:"data,omitzero"`
}

// Value is the line as its JSON object.
func (l Line) Value() canonjson.Value {
	m := []canonjson.Member{{Name: "type", Value: canonjson.StringValue(l.Type)}}
	if l.Data.IsValid() {
		m = append(m, canonjson.Member{Name: "data", Value: l.Data})
	}
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
	return Line{Type: t.Str(), Data: data}, nil
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
	// turn's usage is recorded unknown, never zero.
	Usage func() ledger.Usage
}

// Hooks are the caller's side of a turn. Produce and
// PersistAssistantMessage are required; a failure of either (an error
// or a panic, and so of TransformFinalText) fails the turn. The others are notifications: their errors (and panics) are
// logged and never change what the client sees.
type Hooks struct {
	// Produce starts the turn's model work.
	Produce func(ctx context.Context) (Production, error)
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
		})
	}
}

var errReaderGone = errors.New("chatturn: the reader stopped reading")

// run drives the turn, handing each line to emit in order. An emit
// error (the line could not be delivered or recorded) fails the turn;
// the failure lines are still offered to emit.
func (t *Turn) run(ctx context.Context, emit func(Line) error) {
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
	if err := send(Line{Type: TypeStarted, Data: canonjson.ObjectValue([]canonjson.Member{
		{Name: "sessionId", Value: canonjson.StringValue(id.SessionID)},
		{Name: "tenantId", Value: canonjson.StringValue(id.TenantID)},
		{Name: "turnIndex", Value: canonjson.NumberValue(float64(id.TurnIndex))},
	})}); err != nil {
		t.fail(send, err)
		return
	}
	final, err := t.produce(ctx, send)
	if err == nil {
		err = ctx.Err()
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
// text.
func (t *Turn) produce(ctx context.Context, send func(Line) error) (final string, err error) {
	err = contain(func() error {
		p, err := t.Hooks.Produce(ctx)
		if err != nil {
			return err
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
				case TypeStarted, TypeCompleted, TypeFailed:
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

func failedLine(sessionID, msg string) Line {
	return Line{Type: TypeFailed, Data: canonjson.ObjectValue([]canonjson.Member{
		{Name: "message", Value: canonjson.StringValue(msg)},
		{Name: "sessionId", Value: canonjson.StringValue(sessionID)},
	})}
}
