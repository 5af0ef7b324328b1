package conversation

import (
	"context"
	"fmt"
	"time"
)

// Planned is one turn a Runner runs: who speaks it and how it is made.
type Planned struct {
	// Speaker is the participant that speaks the turn.
	Speaker string
	// Text is the turn when it is given (a user's line): it is recorded
	// as it is. Unused when Produce is set.
	Text string
	// Produce, when set, makes the turn (a model's answer) from what
	// was recorded before it.
	Produce func(ctx context.Context, in TurnInput) (TurnOutput, error)
}

// TurnInput is what a Planned turn's Produce is given.
type TurnInput struct {
	// RunID, Index, Speaker and TurnID name the turn; TurnID is
	// TurnID(RunID, Index, Speaker), the same on every attempt, so a
	// retried turn collides with its earlier attempt.
	RunID   string
	Index   int
	Speaker string
	TurnID  string
	// Transcript is the run's recorded turns before this one; it is the
	// Runner's, to read, not to keep or change.
	Transcript []Turn
}

// TurnOutput is a produced turn, recorded once Produce returned it.
type TurnOutput struct {
	Text string
	// SessionID is the backend session the turn used, when known.
	SessionID string
	// Usage is the turn's own usage; nil when unknown.
	Usage *Usage
	// Attempts is how many attempts the turn took (0 is 1).
	Attempts int
}

// TurnError is the failure of one turn of a Runner: the turn was not
// recorded, nor was any after it, and no halt: running the run again
// (Runner.Run with the same plan, or Runner.Next) continues at this turn.
type TurnError struct {
	RunID   string
	Index   int
	Speaker string
	// Err is why: Produce's error, or the journal's refusal.
	Err error
}

func (e *TurnError) Error() string {
	return fmt.Sprintf("conversation %q: turn %d (%s): %v", e.RunID, e.Index, e.Speaker, e.Err)
}

// Unwrap returns the cause.
func (e *TurnError) Unwrap() error { return e.Err }

// PlanError refuses a plan that does not match what is recorded: its
// turn Index has another speaker, or another given text, than the
// recorded turn. Skipping that turn would skip a turn that was not the
// planned one, so nothing is run.
type PlanError struct {
	RunID  string
	Index  int
	Reason string
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("conversation %q: the plan's turn %d does not match the recorded one: %s", e.RunID, e.Index, e.Reason)
}

// Unwrap makes errors.Is(err, ErrConflict) match.
func (e *PlanError) Unwrap() error { return ErrConflict }

// Runner runs a conversation recorded in a Journal, one turn at a time,
// each recorded as soon as it is made: a run resumed after its process
// died — from this process or another sharing the journal — continues at
// its first unrecorded turn, and a recorded turn is never run again
// (runtime spec §4; RES-04). A Runner is not safe for concurrent use;
// the journal decides between processes running the same run (the
// second append of a turn index is refused, or a no-op for the same
// turn).
type Runner struct {
	j     Journal
	e     *Entry
	now   func() time.Time
	ended bool
}

// RunnerOptions configure StartRunner.
type RunnerOptions struct {
	// Now is the clock of the turns' and the run's times; time.Now when
	// nil.
	Now func() time.Time
}

// StartRunner loads run runID from j, beginning it when it was never
// begun, and returns its Runner. A halted run is refused with a
// *RunError of ErrHalted: it takes no more turns.
func StartRunner(ctx context.Context, j Journal, runID string, opts RunnerOptions) (*Runner, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	e, err := Resume(ctx, j, runID, now())
	if err != nil {
		return nil, err
	}
	return NewRunner(j, e, opts)
}

// NewRunner returns the Runner of e, a run loaded from j (LoadRun or
// Resume). A nil entry is refused (ErrUnknownRun), a halted one with
// ErrHalted.
func NewRunner(j Journal, e *Entry, opts RunnerOptions) (*Runner, error) {
	if e == nil {
		return nil, &RunError{Op: "run", Err: ErrUnknownRun, Detail: "no entry: load or begin the run first"}
	}
	if e.Halt != nil {
		return nil, &RunError{Op: "run", RunID: e.RunID, Err: ErrHalted, Detail: string(e.Halt.Kind)}
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Runner{j: j, e: e, now: now}, nil
}

// RunID names the run.
func (r *Runner) RunID() string { return r.e.RunID }

// Turns returns the recorded turns, in order; they are the Runner's, to
// read, not to keep or change.
func (r *Runner) Turns() []Turn { return r.e.Turns }

// NextIndex is the index of the first unrecorded turn.
func (r *Runner) NextIndex() int { return r.e.NextIndex() }

// Run runs plan, where plan[i] is turn i of the run: the recorded turns
// are checked against it (a mismatch is a *PlanError and nothing runs)
// and skipped, and the others run in order, each recorded before the
// next begins. It stops at the first failure, a *TurnError, leaving the
// run to be continued there; a ctx that ended stops it before the next
// turn.
func (r *Runner) Run(ctx context.Context, plan []Planned) error {
	recorded := r.e.Turns
	for i := 0; i < len(plan) && i < len(recorded); i++ {
		p, t := plan[i], recorded[i]
		switch {
		case p.Speaker != t.Speaker:
			return &PlanError{RunID: r.e.RunID, Index: i, Reason: fmt.Sprintf("speaker %q, recorded %q", p.Speaker, t.Speaker)}
		case p.Produce == nil && p.Text != t.Text:
			return &PlanError{RunID: r.e.RunID, Index: i, Reason: "its given text differs from the recorded text"}
		}
	}
	for i := len(recorded); i < len(plan); i++ {
		if err := context.Cause(ctx); ctx.Err() != nil {
			return &TurnError{RunID: r.e.RunID, Index: i, Speaker: plan[i].Speaker, Err: err}
		}
		if _, err := r.Next(ctx, plan[i]); err != nil {
			return err
		}
	}
	return nil
}

// Next runs p as the run's next turn and records it; it returns the
// recorded turn. A failure is a *TurnError, and nothing is recorded:
// the next call runs the same turn again (with the same turn id).
func (r *Runner) Next(ctx context.Context, p Planned) (Turn, error) {
	i := r.e.NextIndex()
	fail := func(err error) (Turn, error) {
		return Turn{}, &TurnError{RunID: r.e.RunID, Index: i, Speaker: p.Speaker, Err: err}
	}
	if r.ended {
		return fail(ErrHalted)
	}
	start := r.now()
	out := TurnOutput{Text: p.Text, Attempts: 1}
	if p.Produce != nil {
		var err error
		out, err = p.Produce(ctx, TurnInput{RunID: r.e.RunID, Index: i, Speaker: p.Speaker, TurnID: TurnID(r.e.RunID, i, p.Speaker), Transcript: r.e.Turns})
		if err != nil {
			return fail(err)
		}
		if out.Attempts < 1 {
			out.Attempts = 1
		}
	}
	t := Turn{Index: i, Speaker: p.Speaker, TurnID: TurnID(r.e.RunID, i, p.Speaker), SessionID: out.SessionID,
		Text: out.Text, Usage: out.Usage, Attempts: out.Attempts, StartedAt: ms(start), EndedAt: ms(r.now())}
	if err := r.j.AppendTurn(ctx, r.e.RunID, t); err != nil {
		return fail(err)
	}
	r.e.Turns = append(r.e.Turns, t)
	return t, nil
}

// ms is t as the journal keeps it: UTC, to the millisecond.
func ms(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

// Halt records why the run ended; it takes no more turns.
func (r *Runner) Halt(ctx context.Context, h Halt) error {
	at := r.now().UTC().Truncate(time.Millisecond)
	if err := r.j.RecordHalt(ctx, r.e.RunID, h, at); err != nil {
		return err
	}
	r.ended = true
	r.e.Halt, r.e.EndedAt = &h, at
	return nil
}
