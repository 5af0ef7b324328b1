package kernel

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// Observer watches one execution as it happens: the runtime hooks of
// spec runtime §10 (checklist OS-05), one execution-scoped stream that is
// never part of the profile. Package telemetry turns it into
// OpenTelemetry spans.
//
// The kernel calls an Observer on the run's own goroutine, in order:
// RunStarted once the run is recorded running; TurnStarted when the turn
// is about to stream; Event for each event once it is durable; TurnEnded
// when the turn's stream is over; RunEnded once the run has ended. A run
// refused before its turn sees RunStarted and RunEnded only. An error an
// Observer returns, or a panic in it, is logged and contained: it never
// changes the run.
type Observer interface {
	// RunStarted returns the context the run's provider calls are made
	// under: ctx itself, or one derived from it (trace.ContextWithSpan)
	// so that the provider can carry the observer's trace context on.
	RunStarted(ctx context.Context, run RunStart) (context.Context, error)
	// TurnStarted returns the context the turn streams under, derived
	// from ctx as RunStarted's is.
	TurnStarted(ctx context.Context, turn TurnStart) (context.Context, error)
	// Event sees one durable event of the turn.
	Event(ctx context.Context, e contract.EnvironmentEvent) error
	// TurnEnded sees how the turn's stream ended.
	TurnEnded(ctx context.Context, turn TurnEnd) error
	// RunEnded sees the run's result as its caller will.
	RunEnded(ctx context.Context, res Result) error
}

// RunStart is what an Observer learns when a run starts.
type RunStart struct {
	RunID string
	// Kind is the run record's kind ("execute" unless the caller named
	// another).
	Kind string
	// Profile is the authored profile; an Observer must not change it.
	Profile *profile.Profile
	// Stage is the seat stage that runs.
	Stage int
}

// TurnStart is what an Observer learns when a turn starts.
type TurnStart struct {
	RunID         string
	EnvironmentID string
	// Provider names the provider that runs the turn.
	Provider string
	// RequestedModel is the model the effective profile requests (empty:
	// none named).
	RequestedModel string
}

// TurnEnd is how a turn's stream ended.
type TurnEnd struct {
	RunID string
	// Terminal is the provider's terminal event kind; empty when the
	// stream ended without one (broken off, cancelled, no terminal).
	Terminal contract.TerminalKind
	// StopReason is the model's own reason for ending a failed turn, when
	// the provider named one (see StopReasonMember).
	StopReason string
	// Served is the identity the platform reported serving so far.
	Served ServedIdentity
	// Usage is what the turn reported: unknown channels stay unknown, and
	// a turn that did not run to its end reports a floor.
	Usage ledger.Usage
}

// ToolObserver is implemented by an Observer that also watches the calls
// a tool loop runs (ToolLoopOptions.Observer): ToolStarted before the
// tool runs, returning the context it runs under (derived from ctx as
// RunStarted's is), and ToolEnded with its outcome.
type ToolObserver interface {
	ToolStarted(ctx context.Context, call ToolCallStart) (context.Context, error)
	ToolEnded(ctx context.Context, call ToolCallEnd) error
}

// ToolCallStart is a call a tool loop is about to run.
type ToolCallStart struct {
	RunID string
	Call  contract.ToolCall
}

// ToolCallEnd is a call a tool loop ran, and its outcome.
type ToolCallEnd struct {
	RunID   string
	Call    contract.ToolCall
	Outcome ToolOutcome
}

// observing calls an Observer with its errors and panics contained.
type observing struct {
	o     Observer
	log   *slog.Logger
	runID string
}

// contain logs what an Observer call returned or panicked with (p is
// what the deferred caller recovered).
func (w *observing) contain(hook string, p any, err *error) {
	if p != nil {
		*err = fmt.Errorf("panicked: %v", p)
	}
	if *err != nil {
		w.log.Warn("the run's observer failed", "run", w.runID, "hook", hook, "err", *err)
	}
}

func (w *observing) runStarted(ctx context.Context, s RunStart) context.Context {
	return w.derive(ctx, "RunStarted", func() (context.Context, error) { return w.o.RunStarted(ctx, s) })
}

func (w *observing) turnStarted(ctx context.Context, s TurnStart) context.Context {
	return w.derive(ctx, "TurnStarted", func() (context.Context, error) { return w.o.TurnStarted(ctx, s) })
}

// derive returns the context a hook returned, or ctx when it failed or
// returned none.
func (w *observing) derive(ctx context.Context, hook string, call func() (context.Context, error)) (out context.Context) {
	var err error
	defer func() {
		w.contain(hook, recover(), &err)
		if err != nil || out == nil {
			out = ctx
		}
	}()
	out, err = call()
	return out
}

func (w *observing) toolStarted(ctx context.Context, c ToolCallStart) context.Context {
	to, ok := w.o.(ToolObserver)
	if !ok {
		return ctx
	}
	return w.derive(ctx, "ToolStarted", func() (context.Context, error) { return to.ToolStarted(ctx, c) })
}

func (w *observing) toolEnded(ctx context.Context, c ToolCallEnd) {
	to, ok := w.o.(ToolObserver)
	if !ok {
		return
	}
	var err error
	defer func() { w.contain("ToolEnded", recover(), &err) }()
	err = to.ToolEnded(ctx, c)
}

func (w *observing) event(ctx context.Context, e contract.EnvironmentEvent) {
	var err error
	defer func() { w.contain("Event", recover(), &err) }()
	err = w.o.Event(ctx, e)
}

func (w *observing) turnEnded(ctx context.Context, t TurnEnd) {
	var err error
	defer func() { w.contain("TurnEnded", recover(), &err) }()
	err = w.o.TurnEnded(ctx, t)
}

func (w *observing) runEnded(ctx context.Context, r Result) {
	var err error
	defer func() { w.contain("RunEnded", recover(), &err) }()
	err = w.o.RunEnded(ctx, r)
}
