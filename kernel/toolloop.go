package kernel

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/tools"
)

// StopReason says why a tool loop stopped.
type StopReason string

// Why a tool loop stops. Completed means the model answered; the other
// stops that return no error (stuck-loop, backstop, deadline, budget,
// refused) are resource or policy outcomes, not failures of the model.
// Failed and cancelled stops, and a deadline of the caller's context, come
// with an error.
const (
	// StopCompleted: a model turn made no call of a tool the loop runs.
	StopCompleted StopReason = "completed"
	// StopStuckLoop: the model made the same call (same tool, same
	// canonical-JSON arguments) StuckLoopThreshold times in a row; the
	// repeating call was not run.
	StopStuckLoop StopReason = "stuck-loop"
	// StopBackstop: the model still called tools after MaxToolTurns tool
	// turns; that turn's calls were not run.
	StopBackstop StopReason = "backstop"
	// StopDeadline: ToolLoopOptions.Deadline or the Pool's deadline passed
	// (checked before every turn; a turn still running at the options'
	// deadline is cut short), or the caller's context deadline passed
	// (then with an error).
	StopDeadline StopReason = "deadline"
	// StopBudget: the tool calls' accumulated cost reached MaxCostUSD (the
	// call that crossed it is recorded), or the Pool had no room for the
	// next model turn (the model was not called).
	StopBudget StopReason = "budget"
	// StopRefused: a tool refused a call and StopOnRefusal is set.
	StopRefused StopReason = "refused"
	// StopCancelled: the caller cancelled the context, a RequestCancel
	// reached a recorded loop, or the consumer stopped reading the stream.
	StopCancelled StopReason = "cancelled"
	// StopFailed: a model turn failed — its stream broke or the model
	// reported a failure in-band — or the loop could not go on: its run
	// could not be recorded, CostOf priced a call as no number, the
	// budget found the reservation invalid, or something panicked.
	StopFailed StopReason = "failed"
)

// Capped reports whether the loop stopped before the model answered.
func (r StopReason) Capped() bool { return r != StopCompleted }

// Tool loop limits.
const (
	// DefaultMaxToolTurns is the runaway backstop when
	// ToolLoopOptions.MaxToolTurns is 0: set far above any legitimate
	// workflow, it is a watchdog, not a policy.
	DefaultMaxToolTurns = 200
	// StuckLoopThreshold is how many consecutive identical calls stop the
	// loop as stuck. Any different call starts the count over.
	StuckLoopThreshold = 3
)

// Codes of failed tool outcomes the loop produces itself.
const (
	// CodeToolError: the tool returned an error.
	CodeToolError = "tool_error"
	// CodeExecutorError: the tool panicked.
	CodeExecutorError = "executor_error"
	// CodeRefused: the tool returned a *contract.ToolRefusal.
	CodeRefused = "refused"
	// CodeInvalidArguments: the call's arguments were not a JSON object,
	// did not match the tool's InputSchema, or did not decode into a
	// typed tool's input (a *tools.ArgumentsError), so the tool was not
	// run; the message says where and why.
	CodeInvalidArguments = "invalid_arguments"
)

// ErrInvalidToolLoop matches the error of a tool loop whose options are
// invalid; nothing ran.
//
// Deprecated: it is ErrInvalidOptions, which every front door returns.
var ErrInvalidToolLoop = ErrInvalidOptions

// ToolOutcome is the outcome of one tool call, fed back to the model as a
// value: a failure is data the model can react to, never a crash of the
// loop.
type ToolOutcome struct {
	// OK is true when the tool ran and returned a result.
	OK bool
	// Result is what the tool returned (OK only; absent when it returned
	// nothing).
	Result canonjson.Value
	// Code and Message say why a call failed (not OK).
	Code, Message string
}

// MarshalValue writes o as {"ok": true, "result": …} or {"ok": false,
// "code": …, "message": …}; an absent result is null.
func (o ToolOutcome) MarshalValue() (canonjson.Value, error) {
	var a memberArena
	return a.outcome(o), nil
}

// ToolResult is one call the loop handled: the call (its ID filled in
// when the model gave none), its label and its outcome.
type ToolResult struct {
	Call    contract.ToolCall
	Label   string
	Outcome ToolOutcome
}

// ToolLoopOptions configure a tool loop. Only Model is required.
type ToolLoopOptions struct {
	// Model is the chat model the loop drives.
	Model contract.ChatModel
	// Profile, when set, is the agent the loop runs, and everything it
	// declares is honoured or the loop is refused before the model is
	// called (ErrInvalidOptions, naming what):
	//
	//   - its system message (profile.SystemMessage) is the loop's
	//     system prompt, and its model.default the requested model
	//     (System and RequestedModel must be left empty);
	//   - its tools map and Tools match exactly: every tool it declares
	//     true needs a Go tool of that name in Tools, and every tool in
	//     Tools must be declared true;
	//   - it declares nothing else a bare model cannot apply: another
	//     harness than cli-base, instructions, permissions, MCP servers,
	//     subagents, hooks, modes, extensions, resources, seats,
	//     connections, confidential execution, a reasoning effort or
	//     token ceilings (configure those on the Model).
	//
	// The run's record carries the profile's digest.
	Profile *profile.Profile
	// System, Prior and User make the first transcript: the system
	// prompt, the earlier conversation, and this turn's user message.
	System string
	Prior  []contract.ChatMessage
	User   string
	// Tools are offered to the model and run by name. A call of any other
	// name is ignored: not run, given no tool message, and left out of
	// the transcript's tool calls (it may be a provider-side or UI tool);
	// the result lists it under Ignored. Names must be unique, and an
	// InputSchema must compile (tools.NewValidator): each is compiled
	// once when the loop starts, and every call's arguments are checked
	// against it before the tool runs (tools.NewTool makes tools whose
	// schema is inferred from a Go type).
	Tools []contract.Tool
	// Waiting names Tools that wait on the world rather than compute
	// from their arguments (a manager's await_event): the same call may
	// return something new each time, so identical calls of one stop
	// the loop as stuck only while their outcomes repeat too. A name not
	// in Tools is never called, so it changes nothing.
	Waiting []string
	// MaxToolTurns is how many turns' tool calls the loop runs at most;
	// a further turn that still calls tools stops it with StopBackstop.
	// 0 means DefaultMaxToolTurns.
	MaxToolTurns int
	// Deadline, when not zero, is the absolute time after which no turn
	// starts (StopDeadline); a turn still running then is cut short.
	Deadline time.Time
	// MaxCostUSD, when above 0, stops the loop with StopBudget once the
	// calls' accumulated CostOf reaches it. It needs CostOf.
	MaxCostUSD float64
	// CostOf prices one handled call in US dollars (finite, not
	// negative). Without MaxCostUSD it only sums the result's CostUSD.
	CostOf func(call contract.ToolCall, out ToolOutcome) float64
	// Budget, when set, is drawn from before every model turn: Reserve is
	// reserved before the model is called and settled with the turn's
	// observed usage (unknown usage is charged the whole reservation). A
	// reservation the pool refuses for lack of room stops the loop with
	// StopBudget (StopDeadline for the pool's deadline) before the model
	// is called. Reserve must hold Tokens and Iterations, and MicroUSD
	// when the pool caps dollars, so that no spend goes unreserved.
	Budget  *ledger.Pool
	Reserve ledger.Budget
	// StopOnRefusal stops the loop with StopRefused after a call a tool
	// refused (its outcome is recorded and fed back first).
	StopOnRefusal bool
	// Label names a call in results and rendered messages; nil uses the
	// tool's name.
	Label func(call contract.ToolCall) string
	// Render writes an outcome as the content of its tool message; nil
	// writes "- <label> → ok: <json>" or "- <label> → failed (<code>):
	// <message>".
	Render func(label string, out ToolOutcome) string
	// RequestedModel, when set, is the model the caller asked for: a turn
	// whose model reports serving another (SameModel) fails the loop with
	// ReasonModelMismatch once the turn ended. Nothing of that turn is
	// used — its text is dropped and its calls do not run — but its usage
	// counts, since its tokens were spent. A turn that reports no served
	// model is not a mismatch (the served model is unknown).
	RequestedModel string
	// Store, when set, records the loop as a run: its record, one durable
	// append of events per model turn (the turn, then the results of the
	// calls it made; a stream consumer sees them a turn before they are
	// durable), a ledger entry with the loop's usage, and exactly one
	// terminal state — completed for every stop that is not a failure or
	// a cancellation, with the stop reason in the run's document. RunID
	// names it (generated when empty), Kind is the record's kind
	// ("tool-loop" when empty); LeaseTTL and CleanupTimeout are as in
	// Request (they need a Store).
	Store          store.Store
	RunID          string
	Kind           string
	LeaseTTL       time.Duration
	CleanupTimeout time.Duration
	// Now replaces time.Now (the deadline check and record times);
	// Logger receives what the loop cannot return (nil discards).
	Now    func() time.Time
	Logger *slog.Logger
	// Observer, when set, watches the loop as Request.Observer watches a
	// run: RunStarted before the first turn (Kind is the record's kind,
	// "tool-loop" when empty; RunID may be empty for an unrecorded
	// loop), TurnStarted and TurnEnded around each model turn, and
	// RunEnded with the loop's outcome as a Result (RunID, Status,
	// Reason, Text, Usage, RequestedModel, the last served model). The
	// loop's calls are not environment events: Event is never called,
	// and an Observer that also implements ToolObserver sees each call
	// the loop runs. Errors and panics are logged and contained.
	Observer Observer
	// Interject, when set, is asked for user messages that arrived while
	// the loop ran (a manager's steers): before every model turn after
	// the first, once the turn's budget is reserved (answered false), and
	// when a turn answered without calling a tool (answered true). The
	// messages it returns, in order, join the transcript as one user
	// message (separated by a blank line) that the next model call sees;
	// after an answer they make the loop go on instead of completing. A
	// running model call is never interrupted. It is called on the loop's
	// goroutine and must return promptly. The messages are in the result's
	// Messages; a recorded loop's step events do not carry them.
	Interject func(ctx context.Context, answered bool) []string
	// Checkpoint, when set, is given the messages the transcript gained,
	// in order, at every point where the transcript is consistent and
	// before the loop goes on: a turn's assistant message with its tool
	// calls before the first of them runs, each tool message once its
	// call was handled (before the next call or model turn), user
	// messages Interject added before the model turn that sees them, and
	// whatever is left when the loop ends. Concatenated, the messages it
	// was given are the transcript after System, Prior and User: what a
	// later attempt of the same loop passes as Recorded. It is called on
	// the loop's goroutine with the loop's context stripped of its
	// cancellation (what already happened is recorded also while the loop
	// is being cancelled), and must not keep the slice. When it fails the
	// loop stops — it must not run ahead of what it could record — with
	// StopFailed and a *RunError (ReasonCheckpointFailed) whose cause is
	// a *CheckpointError; a failure at the loop's end keeps the stop
	// reason the loop reached and still returns that error. With
	// Checkpoint set, a call the caller's context cut short has no
	// result: it stays Pending, its message is not added, and a later
	// attempt runs it again.
	Checkpoint func(ctx context.Context, appended []contract.ChatMessage) error
	// Recorded, when set, is the transcript an earlier attempt of this
	// loop gave Checkpoint: the loop resumes it instead of starting over.
	// The transcript is System, Prior, User, then Recorded, and no
	// recorded turn is asked of the model again (nor charged to Budget).
	// Its tool turns count towards MaxToolTurns and turn numbers go on
	// from them; FinalText starts with its assistant messages' contents.
	// When it ends on an assistant message some of whose calls have no
	// tool message, exactly those calls run first, with their recorded
	// ids and arguments, in order (Checkpoint gets their results);
	// when it ends on an answer (an assistant message without calls) the
	// loop completes without a model turn unless Interject has messages
	// for it. It may hold user, assistant and tool messages only, each
	// tool message answering a call of the assistant message before it
	// that no earlier tool message answered, and a user or assistant
	// message only after every call before it was answered, and its
	// unanswered calls must name tools in Tools; anything else is
	// ErrInvalidOptions. A recorded loop (Store) records the calls it
	// runs again as a step of their turn (its number and text), marked
	// rerun, that spent nothing.
	Recorded []contract.ChatMessage
}

// ToolLoopResult is what a tool loop did.
type ToolLoopResult struct {
	// RunID is the recorded run's id ("" when the loop was not recorded
	// and no RunID was given).
	RunID string
	// FinalText is the text of every turn, concatenated.
	FinalText string
	// ToolResults are the calls handled, in order.
	ToolResults []ToolResult
	// Ignored are the calls of tools the loop does not run.
	Ignored []contract.ToolCall
	// Pending are the last turn's calls of the loop's tools that were not
	// handled because the loop stopped.
	Pending []contract.ToolCall
	// Turns is how many model turns were started.
	Turns int
	// StopReason says why the loop stopped.
	StopReason StopReason
	// Usage is the sum of every turn's usage; a channel no turn reported
	// is unknown, and a sum over partly reported turns is a floor.
	Usage ledger.Usage
	// CostUSD is the calls' accumulated CostOf (0 without CostOf).
	CostUSD float64
	// ServedModels are the distinct models the turns reported serving
	// them, in the order first reported; empty when no turn reported one
	// (unknown, never the requested model assumed).
	ServedModels []string
	// Messages is the transcript: system, prior, user, what was Recorded
	// (ToolLoopOptions.Recorded), then per tool turn
	// the assistant message with its tool calls and one tool message per
	// handled call, and the final assistant message when it has text. A
	// loop that stopped with calls pending ends on an assistant message
	// some of whose calls have no tool message.
	Messages []contract.ChatMessage
}

// ToolLoopEventKind says what a ToolLoopEvent carries.
type ToolLoopEventKind string

// Tool loop event kinds.
const (
	// ToolLoopModelEvent: Event is one event of a model turn, as the model
	// yielded it.
	ToolLoopModelEvent ToolLoopEventKind = "event"
	// ToolLoopToolResult: ToolResult is a handled call and its outcome.
	ToolLoopToolResult ToolLoopEventKind = "tool_result"
	// ToolLoopFinal: Result is the loop's result. It is the last item of
	// every stream, and the only one that can carry an error.
	ToolLoopFinal ToolLoopEventKind = "final"
)

// ToolLoopEvent is one item of StreamToolLoop. Kind says which field is
// set; Turn is the index of the model turn it belongs to.
type ToolLoopEvent struct {
	Kind ToolLoopEventKind
	Turn int
	// Event is a ToolLoopModelEvent's model event, as the model yielded
	// it (a call's ID not yet filled in).
	Event contract.ChatEvent
	// ToolResult is a ToolLoopToolResult's call and outcome.
	ToolResult ToolResult
	// Result is nil only when the loop never started (invalid options,
	// or its run could not be recorded).
	Result *ToolLoopResult
}

// RunToolLoop drives a model that calls tools until it answers or a stop
// rule fires, and returns what happened. A stop (completed, stuck-loop,
// backstop, deadline, budget, refused) returns a nil error; a model turn
// that failed, or the caller's context ending, returns the result so far
// with a *RunError whose Status is failed, cancelled or timed out (for a
// context, wrapping its error). Invalid options return ErrInvalidToolLoop
// before anything runs. Tools run one at a time, in the order the model
// called them. RunToolLoop is StreamToolLoop, drained.
func RunToolLoop(ctx context.Context, o ToolLoopOptions) (*ToolLoopResult, error) {
	for ev, err := range StreamToolLoop(ctx, o) {
		if ev.Kind == ToolLoopFinal {
			return ev.Result, err
		}
	}
	return nil, errors.New("kernel: the tool loop ended without its final event")
}

// StreamToolLoop is RunToolLoop as a stream: it yields every model event,
// each handled call's result, and then exactly one ToolLoopFinal item,
// which carries the result and the error RunToolLoop would return. The
// loop runs while the caller ranges; stopping early ends it as cancelled
// (and so records it). The sequence runs the loop each time it is ranged.
func StreamToolLoop(ctx context.Context, o ToolLoopOptions) iter.Seq2[ToolLoopEvent, error] {
	return func(yield func(ToolLoopEvent, error) bool) {
		ctx := ctx
		var cancel context.CancelCauseFunc
		if o.Store != nil {
			// A cancel request from any process (RequestCancel) cancels
			// a recorded loop.
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
		}
		l, err := newToolLoop(ctx, o, cancel)
		if err != nil {
			yield(ToolLoopEvent{Kind: ToolLoopFinal}, err)
			return
		}
		l.yield = yield
		defer func() {
			if p := recover(); p != nil {
				l.afterPanic(ctx, p)
				panic(p)
			}
		}()
		err = l.run(ctx)
		if !l.abandoned {
			yield(ToolLoopEvent{Kind: ToolLoopFinal, Turn: l.turn, Result: &l.res}, err)
		}
	}
}

// errLoopDeadline is the cause of the loop context's end at the options'
// deadline, telling it from the caller's own deadline.
var errLoopDeadline = errors.New("kernel: the tool loop's deadline passed")

type toolLoop struct {
	o     ToolLoopOptions
	now   func() time.Time
	log   *slog.Logger
	yield func(ToolLoopEvent, error) bool
	res   ToolLoopResult
	rec   *loopRecorder
	turn  int
	usage bool // res.Usage holds at least one turn's total
	// abandoned: the consumer stopped reading; nothing more is yielded.
	abandoned bool
	runErr    *RunError
	final     strings.Builder
	finished  bool // finish ran: the record has ended

	// The caller's context, and the loop's (which also ends at the
	// options' deadline). They live here, for the one call of run, so
	// that the per-event callback needs no closure.
	ctx, loopCtx context.Context
	// The current turn: its usage, its text (one piece, or assembled in
	// text), whether it is over, and the event callback (made once).
	turnUsage    ledger.TurnUsage
	piece        string
	pieces       int
	turnOver     bool
	onModelEvent func(contract.ChatEvent, error) bool
	// mismatch, when set, says the current turn reported serving a model
	// other than the requested one: the rest of the turn is read for its
	// usage only, and the loop fails once it ends.
	mismatch string
	// stoppedBy is the stop reason of a turn the model ended itself with
	// a failure (ChatEvent.StopReason).
	stoppedBy string

	// Scratch reused across turns: the calls of the current turn, the
	// backing store of transcript tool calls and contents, the
	// stuck-loop keys, text.
	strs        []string
	calls       []contract.ToolCall
	ignoredFrom int
	// rerun marks the step being recorded as the calls of a recorded
	// turn run again (resumeRecorded).
	rerun       bool
	slab        []contract.ToolCall
	key, last   []byte
	repeats     int
	text        []byte
	render      []byte
	toolsByName map[string]int
	// waitedKey and waited are the outcomes of Waiting calls the stuck
	// count compares (scratch and previous).
	waitedKey, waited []byte
	// checks holds each tool's compiled argument check, by index.
	checks []*tools.Validator
	// profileDigest is the identity of the loop's profile, if it has one.
	profileDigest string
	// obs calls the Observer (nil without one); turnServed is the model
	// the current turn last reported serving.
	obs        *observing
	turnServed string
	// ckpt is how many of res.Messages Checkpoint was given (or were
	// recorded before the loop started); ckptErr is why Checkpoint
	// failed, after which it is not called again.
	ckpt    int
	ckptErr *CheckpointError
	// ckptCtx is the context Checkpoint is given: the loop's, without
	// its cancellation.
	ckptCtx context.Context
}

func newToolLoop(ctx context.Context, o ToolLoopOptions, cancel context.CancelCauseFunc) (*toolLoop, error) {
	var errs optionErrors
	o.validate(&errs)
	checks := make([]*tools.Validator, len(o.Tools))
	for i, t := range o.Tools {
		v, err := tools.NewValidator(t)
		if err != nil {
			errs.add(fmt.Sprintf("Tools[%d].InputSchema", i), "%v", err)
		}
		checks[i] = v
	}
	var lo lifeOptions
	if o.Store != nil {
		lo = lifeOptions{Store: o.Store, RunID: cmp.Or(o.RunID, NewID("loop")), Kind: cmp.Or(o.Kind, KindToolLoop),
			LeaseTTL: o.LeaseTTL, CleanupTimeout: o.CleanupTimeout, Logger: o.Logger}
		lo.check(&errs)
		o.RunID, o.LeaseTTL, o.CleanupTimeout = lo.RunID, lo.LeaseTTL, lo.CleanupTimeout
	} else if o.LeaseTTL != 0 || o.CleanupTimeout != 0 {
		errs.add("Store", "LeaseTTL and CleanupTimeout apply to a recorded loop, and no Store was given")
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	if o.MaxToolTurns == 0 {
		o.MaxToolTurns = DefaultMaxToolTurns
	}
	o.Tools = slices.Clone(o.Tools) // the loop's tools are fixed when it starts
	l := &toolLoop{o: o, now: o.Now, log: o.Logger, checks: checks}
	if o.Profile != nil {
		// Checked: the profile has an identity.
		l.profileDigest, _ = profile.Digest(o.Profile)
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if len(o.Tools) > smallToolSet {
		l.toolsByName = make(map[string]int, len(o.Tools))
		for i := range o.Tools {
			l.toolsByName[o.Tools[i].Name] = i
		}
	}
	l.res.RunID = o.RunID
	if o.Observer != nil {
		l.obs = &observing{o: o.Observer, log: l.log, runID: o.RunID}
	}
	if o.Store != nil {
		rec, err := startLoopRecord(ctx, l, lo, cancel)
		if err != nil {
			return nil, err
		}
		l.rec = rec
	}
	return l, nil
}

// smallToolSet is the size up to which tools are found by a linear scan.
const smallToolSet = 8

func (o *ToolLoopOptions) validate(errs *optionErrors) {
	if o.Model == nil {
		errs.add("Model", "a tool loop needs a Model")
	}
	if o.Profile != nil {
		o.applyProfile(errs)
	}
	o.validateRecorded(errs)
	if o.MaxToolTurns < 0 {
		errs.add("MaxToolTurns", "%d is negative", o.MaxToolTurns)
	}
	if math.IsNaN(o.MaxCostUSD) || math.IsInf(o.MaxCostUSD, 0) || o.MaxCostUSD < 0 {
		errs.add("MaxCostUSD", "%v is not a finite non-negative number", o.MaxCostUSD)
	}
	if o.MaxCostUSD > 0 && o.CostOf == nil {
		errs.add("CostOf", "MaxCostUSD needs CostOf to price each call")
	}
	for i, t := range o.Tools {
		field := fmt.Sprintf("Tools[%d]", i)
		switch {
		case t.Name == "":
			errs.add(field+".Name", "tool %d has no name", i)
		case t.Run == nil:
			errs.add(field+".Run", "tool %s has no Run", t.Name)
		}
		for _, u := range o.Tools[:i] {
			if u.Name == t.Name && t.Name != "" {
				errs.add(field+".Name", "tool name %s appears twice", t.Name)
				break
			}
		}
	}
	if o.Budget == nil {
		if !isZeroBudget(o.Reserve) {
			errs.add("Reserve", "Reserve is set but there is no Budget to reserve from")
		}
	} else {
		if o.Reserve.Tokens == nil || o.Reserve.Iterations == nil {
			errs.add("Reserve", "a Budget needs a per-turn Reserve of Tokens and Iterations")
		}
		if o.Budget.Readout().Channels[ledger.ChannelUSD].Capped && o.Reserve.MicroUSD == nil {
			errs.add("Reserve.MicroUSD", "the Budget caps dollars, so Reserve needs MicroUSD")
		}
	}
}

func isZeroBudget(b ledger.Budget) bool {
	return b.Tokens == nil && b.Iterations == nil && b.MicroUSD == nil && len(b.Resources) == 0
}

// tool returns the index of the loop's tool named name, or -1.
func (l *toolLoop) tool(name string) int {
	if l.toolsByName != nil {
		if i, ok := l.toolsByName[name]; ok {
			return i
		}
		return -1
	}
	for i := range l.o.Tools {
		if l.o.Tools[i].Name == name {
			return i
		}
	}
	return -1
}

// emit yields an item unless the consumer already stopped; it reports
// whether the loop may go on.
func (l *toolLoop) emit(ev ToolLoopEvent) bool {
	if l.abandoned {
		return false
	}
	if !l.yield(ev, nil) {
		l.abandoned = true
		l.stop(StopCancelled)
		l.fail(store.StatusCancelled, ReasonCancelled, "the consumer stopped reading the stream", nil)
		return false
	}
	return true
}

func (l *toolLoop) stop(r StopReason) {
	if l.res.StopReason == "" {
		l.res.StopReason = r
	}
}

func (l *toolLoop) fail(status store.Status, reason, detail string, cause error) {
	if l.runErr == nil {
		l.runErr = &RunError{RunID: l.res.RunID, Status: status, Reason: reason, Detail: detail, Cause: cause}
	}
}

// contextEnd stops the loop when the caller's context is done and reports
// whether it was.
func (l *toolLoop) contextEnd(ctx context.Context) bool {
	e := contextError(ctx, l.res.RunID)
	if e == nil {
		return false
	}
	if e.Status == store.StatusTimedOut {
		l.stop(StopDeadline)
	} else {
		l.stop(StopCancelled)
	}
	l.fail(e.Status, e.Reason, e.Detail, e.Cause)
	return true
}

func (l *toolLoop) run(ctx context.Context) error {
	o := &l.o
	l.ctx, l.loopCtx = ctx, ctx
	if !o.Deadline.IsZero() {
		var cancel context.CancelFunc
		l.loopCtx, cancel = context.WithDeadlineCause(ctx, o.Deadline, errLoopDeadline)
		defer cancel()
	}
	l.onModelEvent = l.onModelEventFunc
	if l.obs != nil {
		// The turns and tools run under the observer's context; the
		// loop's stop checks still read the caller's.
		l.loopCtx = l.obs.runStarted(l.loopCtx, RunStart{RunID: l.res.RunID, Kind: cmp.Or(o.Kind, KindToolLoop), Profile: o.Profile})
	}
	msgs := make([]contract.ChatMessage, 0, len(o.Prior)+len(o.Recorded)+8)
	msgs = append(msgs, contract.ChatMessage{Role: contract.ChatSystem, Content: &o.System})
	msgs = append(msgs, o.Prior...)
	msgs = append(msgs, contract.ChatMessage{Role: contract.ChatUser, Content: &o.User})
	msgs = append(msgs, o.Recorded...)
	l.res.Messages = msgs
	l.ckpt = len(msgs)

	for goOn := l.resumeRecorded(ctx); goOn; l.turn++ {
		if l.contextEnd(ctx) {
			break
		}
		if !o.Deadline.IsZero() && !l.now().Before(o.Deadline) {
			l.stop(StopDeadline)
			break
		}
		var ticket *ledger.Ticket
		if o.Budget != nil {
			t, err := o.Budget.Reserve(o.Reserve)
			switch {
			case errors.Is(err, ledger.ErrDeadline):
				l.stop(StopDeadline)
			case errors.Is(err, ledger.ErrExhausted), errors.Is(err, ledger.ErrUSDTainted):
				l.stop(StopBudget)
			case err != nil:
				l.stop(StopFailed)
				l.fail(store.StatusFailed, ReasonRefused, "the budget refused the turn's reservation: "+err.Error(), err)
			}
			if err != nil {
				break
			}
			ticket = t
		}
		if l.turn > 0 && o.Interject != nil {
			l.interject(ctx, false)
		}
		if !l.checkpoint() {
			if ticket != nil {
				// The model was not called: nothing was spent.
				if err := o.Budget.Settle(ticket, nothingSpent()); err != nil {
					l.log.Warn("budget settlement", "run", l.res.RunID, "turn", l.turn, "err", err)
				}
			}
			break
		}
		l.res.Turns++
		turnUsage, text := l.modelTurn()
		if ticket != nil {
			if err := o.Budget.Settle(ticket, spendOf(turnUsage)); err != nil {
				l.log.Warn("budget settlement", "run", l.res.RunID, "turn", l.turn, "err", err)
			}
		}
		if l.res.StopReason != "" {
			l.record(text, turnUsage, 0, true)
			break
		}
		if len(l.calls) == 0 {
			if c := strings.TrimSpace(text); c != "" {
				l.res.Messages = append(l.res.Messages, contract.ChatMessage{Role: contract.ChatAssistant, Content: l.strPtr(c)})
			}
			if o.Interject != nil && l.interject(ctx, true) {
				// Messages arrived during the answering turn: the
				// next turn takes them.
				l.record(text, turnUsage, 0, false)
				if l.res.StopReason != "" {
					break
				}
				continue
			}
			l.stop(StopCompleted)
			l.record(text, turnUsage, 0, true)
			break
		}
		if l.turn >= o.MaxToolTurns {
			l.stop(StopBackstop)
			l.res.Pending = l.calls
			l.record(text, turnUsage, 0, true)
			break
		}
		handled := l.runCalls(text)
		l.record(text, turnUsage, handled, l.res.StopReason != "")
		if l.res.StopReason != "" {
			break
		}
	}
	l.checkpointEnd()
	l.res.FinalText = l.final.String()
	return l.finish(ctx)
}

// interject adds the messages Interject returns to the transcript as one
// user message and reports whether there were any.
func (l *toolLoop) interject(ctx context.Context, answered bool) bool {
	msgs := l.o.Interject(ctx, answered)
	text, n := "", 0
	for _, m := range msgs {
		if m != "" {
			text, n = m, n+1
		}
	}
	switch {
	case n == 0:
		return false
	case n > 1:
		// Joined only when there are several: one steer costs no copy.
		var b strings.Builder
		for _, m := range msgs {
			if m == "" {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(m)
		}
		text = b.String()
	}
	l.res.Messages = append(l.res.Messages, contract.ChatMessage{Role: contract.ChatUser, Content: l.strPtr(text)})
	return true
}

// modelTurn runs one model turn: it yields the model's events, keeps the
// turn's text, its calls (in l.calls) and its usage, and stops the loop
// when the turn fails or is cut short. The model's sequence is called
// with a method value made once per loop, not ranged over, so that a turn
// costs no closure.
func (l *toolLoop) modelTurn() (ledger.Usage, string) {
	l.turnUsage = ledger.TurnUsage{}
	l.calls = l.calls[:0]
	l.ignoredFrom = len(l.res.Ignored)
	l.text, l.piece, l.pieces, l.turnOver, l.mismatch, l.stoppedBy = l.text[:0], "", 0, false, "", ""
	msgs := l.res.Messages
	turnCtx := l.loopCtx
	if l.obs != nil {
		l.turnServed = ""
		turnCtx = l.obs.turnStarted(turnCtx, TurnStart{RunID: l.res.RunID, RequestedModel: l.o.RequestedModel})
	}
	l.o.Model.Turn(turnCtx, msgs[:len(msgs):len(msgs)], l.o.Tools)(l.onModelEvent)
	l.turnOver = true
	if l.mismatch != "" && l.res.StopReason == "" {
		// Nothing of the turn is used: its calls do not run.
		l.calls = l.calls[:0]
		l.stop(StopFailed)
		l.fail(store.StatusFailed, ReasonModelMismatch, l.mismatch, nil)
	}
	text := l.piece
	if l.pieces > 1 {
		text = string(l.text)
	}
	total := l.turnUsage.Total()
	switch sr := l.res.StopReason; {
	case sr == StopFailed && l.mismatch == "" && l.stoppedBy == "", sr == StopCancelled, sr == StopDeadline:
		// The turn broke off (cut, an in-band error, cancelled, past its
		// deadline): what it reported is a floor. A turn the model ended
		// itself (a token limit, say), or one served by another model and
		// read to its end, reported its whole usage.
		total = total.Floor()
	}
	if l.usage {
		l.res.Usage = l.res.Usage.Plus(total)
	} else {
		l.res.Usage, l.usage = total, true
	}
	if l.res.StopReason != "" && l.res.StopReason != StopFailed {
		l.res.Pending = l.calls
	}
	if l.obs != nil {
		end := TurnEnd{RunID: l.res.RunID, Terminal: contract.TerminalCompleted, StopReason: l.stoppedBy,
			Served: ServedIdentity{Model: l.turnServed}, Usage: total}
		switch l.res.StopReason {
		case StopFailed:
			end.Terminal = contract.TerminalFailed
		case StopCancelled, StopDeadline:
			end.Terminal = contract.TerminalCancelled
		}
		l.obs.turnEnded(l.loopCtx, end)
	}
	return total, text
}

// onModelEventFunc takes one item of the model's turn and reports whether the
// turn goes on. Once it said no, it ignores whatever a misbehaving model
// still yields.
func (l *toolLoop) onModelEventFunc(e contract.ChatEvent, err error) bool {
	if l.turnOver {
		return false
	}
	if err != nil {
		if !l.turnCut() {
			l.stop(StopFailed)
			l.fail(store.StatusFailed, ReasonTransport, "the model's stream broke: "+err.Error(), err)
		}
		l.turnOver = true
		return false
	}
	if !l.emit(ToolLoopEvent{Kind: ToolLoopModelEvent, Turn: l.turn, Event: e}) {
		l.turnOver = true
		return false
	}
	if l.mismatch != "" && e.Kind != contract.ChatUsage {
		// Another model served the turn: it is read on only for the
		// tokens it spent, which the budget and ledger must still see.
		return true
	}
	switch e.Kind {
	case contract.ChatText:
		l.final.WriteString(e.Text)
		if l.pieces++; l.pieces == 1 {
			l.piece = e.Text // most turns speak in one piece: no copy
		} else {
			if l.pieces == 2 {
				l.text = append(l.text, l.piece...)
			}
			l.text = append(l.text, e.Text...)
		}
	case contract.ChatToolCall:
		c := e.ToolCall
		if c.ID == "" {
			c.ID = "call_" + c.Name
		}
		if l.tool(c.Name) < 0 {
			l.res.Ignored = append(l.res.Ignored, c)
		} else {
			l.calls = append(l.calls, c)
		}
	case contract.ChatUsage:
		if err := l.turnUsage.Observe(e.Usage, e.UsageMode); err != nil {
			// A mode the contract does not know: the aggregation is
			// unknown, so the report can only make a floor.
			l.log.Warn("usage with an unknown mode counted as a floor", "run", l.res.RunID, "turn", l.turn, "err", err)
			l.turnUsage.Observe(e.Usage, "")
		}
	case contract.ChatServed:
		l.observeServed(e.Model)
	case contract.ChatRetry:
		// The model's request is sent again: not a failure, and the turn
		// goes on. The consumer saw it as a ToolLoopModelEvent; the
		// refused attempt spent nothing the turn reports.
	case contract.ChatFailure:
		l.stop(StopFailed)
		l.stoppedBy = e.StopReason
		msg := e.Failure
		if msg == "" {
			msg = "the model reported a failure"
		}
		l.fail(store.StatusFailed, ReasonInBandError, msg, nil)
	default:
		l.stop(StopFailed)
		l.fail(store.StatusFailed, ReasonTransport, fmt.Sprintf("the model yielded an event of unknown kind %q", e.Kind), nil)
	}
	if l.res.StopReason != "" {
		l.turnOver = true
		return false
	}
	return true
}

// observeServed keeps a turn's report of its served model and stops the
// loop when it is not the requested one (spec runtime §2.3: a reported
// served model that differs fails the execution; no report is unknown).
func (l *toolLoop) observeServed(model string) {
	if model == "" {
		return // a report that names nothing reports nothing
	}
	l.turnServed = model
	if !slices.Contains(l.res.ServedModels, model) {
		l.res.ServedModels = append(l.res.ServedModels, model)
	}
	if l.o.RequestedModel != "" && !SameModel(l.o.RequestedModel, model) && l.mismatch == "" {
		l.mismatch = fmt.Sprintf("requested %s, but turn %d reports serving %s", l.o.RequestedModel, l.turn, model)
	}
}

// turnCut reports whether a broken model stream was cut short by a
// context — the options' deadline or the caller's — and stops the loop so.
func (l *toolLoop) turnCut() bool {
	if l.contextEnd(l.ctx) {
		return true
	}
	if l.loopCtx.Err() != nil && errors.Is(context.Cause(l.loopCtx), errLoopDeadline) {
		l.stop(StopDeadline)
		return true
	}
	return false
}

// runCalls appends the turn's assistant message and handles its calls in
// order, each answered by a tool message, until they are done or a stop
// rule fires. It returns how many calls it handled.
func (l *toolLoop) runCalls(text string) int {
	// The transcript's tool calls come from chunks that are never copied
	// (earlier messages keep pointing into them).
	if cap(l.slab)-len(l.slab) < len(l.calls) {
		l.slab = make([]contract.ToolCall, 0, max(16, len(l.calls)))
	}
	start := len(l.slab)
	l.slab = append(l.slab, l.calls...)
	assistant := contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: l.slab[start:len(l.slab):len(l.slab)]}
	if c := strings.TrimSpace(text); c != "" {
		assistant.Content = l.strPtr(c)
	}
	l.res.Messages = append(l.res.Messages, assistant)
	calls := assistant.ToolCalls
	if !l.checkpoint() {
		// Not one call runs that a later attempt would not know of.
		l.res.Pending = calls
		return 0
	}
	return l.handleCalls(calls)
}

// handleCalls handles calls, the last assistant message's, in order,
// each answered by a tool message, until they are done or a stop rule
// fires. It returns how many calls it handled.
func (l *toolLoop) handleCalls(calls []contract.ToolCall) int {
	for i, call := range calls {
		if l.contextEnd(l.ctx) {
			l.res.Pending = calls[i:]
			return i
		}
		if l.stuck(call) {
			l.stop(StopStuckLoop)
			l.res.Pending = calls[i:]
			return i
		}
		ti := l.tool(call.Name)
		t := &l.o.Tools[ti]
		out := l.observedTool(ti, call)
		if slices.Contains(l.o.Waiting, call.Name) {
			l.waitedFor(out)
		}
		if l.o.Checkpoint != nil && l.contextEnd(l.ctx) {
			// Cut short by the caller: not the call's result, and not
			// recorded as one; a later attempt runs the call again.
			l.res.Pending = calls[i:]
			return i
		}
		label := t.Name
		if l.o.Label != nil {
			label = l.o.Label(call)
		}
		var content string
		if l.o.Render != nil {
			content = l.o.Render(label, out)
		} else {
			content = l.renderDefault(label, out)
		}
		r := ToolResult{Call: call, Label: label, Outcome: out}
		l.res.ToolResults = append(l.res.ToolResults, r)
		l.res.Messages = append(l.res.Messages, contract.ChatMessage{Role: contract.ChatTool, Content: l.strPtr(content), ToolCallID: call.ID})
		if !l.emit(ToolLoopEvent{Kind: ToolLoopToolResult, Turn: l.turn, ToolResult: r}) || !l.checkpoint() {
			l.res.Pending = calls[i+1:]
			return i + 1
		}
		if l.o.CostOf != nil {
			cost := l.o.CostOf(call, out)
			if math.IsNaN(cost) || math.IsInf(cost, 0) || cost < 0 {
				l.stop(StopFailed)
				l.fail(store.StatusFailed, ReasonInvalidCost, fmt.Sprintf("CostOf priced call %s at %v, not a finite non-negative number", call.ID, cost), nil)
				l.res.Pending = calls[i+1:]
				return i + 1
			}
			l.res.CostUSD += cost
			if l.o.MaxCostUSD > 0 && l.res.CostUSD >= l.o.MaxCostUSD {
				l.stop(StopBudget)
			}
		}
		if l.o.StopOnRefusal && !out.OK && out.Code == CodeRefused {
			l.stop(StopRefused)
		}
		if l.res.StopReason != "" {
			l.res.Pending = calls[i+1:]
			return i + 1
		}
	}
	return len(calls)
}

// stuck counts consecutive identical calls — same tool, same canonical
// arguments — and reports whether call makes StuckLoopThreshold of them.
func (l *toolLoop) stuck(call contract.ToolCall) bool {
	k := append(l.key[:0], call.Name...)
	k = append(k, 0)
	if c, err := canonjson.AppendCanonical(k, call.Args); err == nil {
		k = c
	} else {
		// Arguments without a canonical form (absent, non-finite numbers,
		// lone surrogates) are still compared, by their lossless text.
		k = canonjson.AppendMarshal(append(k[:len(call.Name)+1], 1), call.Args)
	}
	if l.repeats > 0 && bytes.Equal(k, l.last) {
		l.repeats++
		l.key = k
	} else {
		l.key, l.last = l.last, k
		l.repeats = 1
	}
	return l.repeats >= StuckLoopThreshold
}

// waitedFor restarts the stuck count at the call of a Waiting tool
// whose outcome differs from the previous identical call's: it waited
// and got something new, which is progress, not a loop.
func (l *toolLoop) waitedFor(out ToolOutcome) {
	k := append(l.waitedKey[:0], out.Code...)
	k = append(k, 0)
	k = append(k, out.Message...)
	k = append(k, 0)
	if out.OK {
		k = canonjson.AppendMarshal(k, out.Result)
	}
	if l.repeats > 1 && !bytes.Equal(k, l.waited) {
		l.repeats = 1
	}
	l.waitedKey, l.waited = l.waited, k
}

// toolCallIDKey is the context key of ToolCallID.
type toolCallIDKey struct{}

// ToolCallID returns the id of the model's tool call a tool loop's tool
// runs for ("" when ctx is not such a call's, or the call had no id).
// The id is the one the transcript records, so a call a resumed loop
// runs again (ToolLoopOptions.Recorded) has the id it had the first
// time: a tool that acts outside the loop can derive its idempotency
// key from it.
func ToolCallID(ctx context.Context) string {
	id, _ := ctx.Value(toolCallIDKey{}).(string)
	return id
}

// observedTool runs the call of tool i, seen by the loop's observer when
// it is a ToolObserver.
func (l *toolLoop) observedTool(i int, call contract.ToolCall) ToolOutcome {
	ctx := l.loopCtx
	if call.ID != "" {
		ctx = context.WithValue(ctx, toolCallIDKey{}, call.ID)
	}
	if l.obs == nil {
		return l.runTool(ctx, i, call)
	}
	ctx = l.obs.toolStarted(ctx, ToolCallStart{RunID: l.res.RunID, Call: call})
	out := l.runTool(ctx, i, call)
	l.obs.toolEnded(ctx, ToolCallEnd{RunID: l.res.RunID, Call: call, Outcome: out})
	return out
}

// runTool runs the call of tool i. Whatever the tool does — return an
// error, refuse, panic — the outcome is a value; arguments its check
// refuses (not a JSON object, or not valid against its InputSchema) never
// reach it.
func (l *toolLoop) runTool(ctx context.Context, i int, call contract.ToolCall) (out ToolOutcome) {
	t := &l.o.Tools[i]
	if err := l.checks[i].Check(call.Args); err != nil {
		return ToolOutcome{Code: CodeInvalidArguments, Message: err.Error()}
	}
	defer func() {
		if p := recover(); p != nil {
			l.log.Warn("tool panicked", "run", l.res.RunID, "tool", t.Name, "panic", p, "stack", string(debug.Stack()))
			out = ToolOutcome{Code: CodeExecutorError, Message: fmt.Sprint("the tool panicked: ", p)}
		}
	}()
	v, err := t.Run(ctx, call.Args)
	if err != nil {
		if _, ok := errors.AsType[*contract.ToolRefusal](err); ok {
			return ToolOutcome{Code: CodeRefused, Message: err.Error()}
		}
		if _, ok := errors.AsType[*tools.ArgumentsError](err); ok {
			// A typed tool refused its arguments before running.
			return ToolOutcome{Code: CodeInvalidArguments, Message: err.Error()}
		}
		return ToolOutcome{Code: CodeToolError, Message: err.Error()}
	}
	return ToolOutcome{OK: true, Result: v}
}

// strPtr returns a pointer to a copy of s, drawn from chunks of strings
// so that the transcript's contents do not cost an allocation each.
func (l *toolLoop) strPtr(s string) *string {
	if len(l.strs) == cap(l.strs) {
		l.strs = make([]string, 0, 32)
	}
	l.strs = append(l.strs, s)
	return &l.strs[len(l.strs)-1]
}

// renderDefault writes "- <label> → ok: <json>" or "- <label> → failed
// (<code>): <message>".
func (l *toolLoop) renderDefault(label string, out ToolOutcome) string {
	b := append(l.render[:0], "- "...)
	b = append(b, label...)
	if out.OK {
		b = append(b, " → ok: "...)
		b = canonjson.AppendMarshal(b, out.Result)
	} else {
		b = append(b, " → failed ("...)
		b = append(b, out.Code...)
		b = append(b, "): "...)
		b = append(b, out.Message...)
	}
	l.render = b
	return string(b)
}

// afterPanic ends the record of a loop that panicked — in the model, in a
// caller's callback, or in the consumer's loop body — as failed, so that
// its run does not stay running under a lease renewed forever. The panic
// then goes on.
func (l *toolLoop) afterPanic(ctx context.Context, p any) {
	if l.finished {
		return
	}
	l.stop(StopFailed)
	l.fail(store.StatusFailed, ReasonPanic, fmt.Sprint("the tool loop panicked: ", p), nil)
	l.res.FinalText = l.final.String()
	l.finish(ctx)
}

// finish records the loop's end, shows it to the observer and returns
// its error.
func (l *toolLoop) finish(ctx context.Context) error {
	err := l.finishRecord(ctx)
	if l.obs != nil {
		r := Result{RunID: l.res.RunID, Status: store.StatusCompleted, Text: l.res.FinalText, Usage: l.res.Usage, RequestedModel: l.o.RequestedModel}
		if n := len(l.res.ServedModels); n > 0 {
			r.Served.Model = l.res.ServedModels[n-1]
		}
		// What the loop reached (a failure to record it is the caller's
		// error, not the loop's outcome).
		if l.runErr != nil {
			r.Status, r.Reason = l.runErr.Status, l.runErr.Reason
		}
		l.obs.runEnded(context.WithoutCancel(ctx), r)
	}
	return err
}

// finishRecord records the loop's end and returns its error.
func (l *toolLoop) finishRecord(ctx context.Context) error {
	l.finished = true
	if l.res.StopReason == "" {
		l.stop(StopFailed) // unreachable: every way out of run stops
	}
	if l.rec != nil {
		defer l.rec.life.release()
		err := l.rec.end()
		if lost, ok := errors.AsType[*LeaseLostError](err); ok {
			// The store refused this process: readers see the run
			// interrupted, whatever the loop reached.
			l.runErr = &RunError{RunID: l.res.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
			return l.runErr
		}
		if err != nil {
			l.log.Error("recording the end of the tool loop", "run", l.res.RunID, "err", err)
			if l.runErr == nil {
				return err
			}
		}
	}
	if l.runErr != nil {
		return l.runErr
	}
	return nil
}
