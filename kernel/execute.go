package kernel

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// Check decides whether a settled result is delivered. It is the caller's
// independent completion check: a run is delivered because a check
// passed, never because the worker said it finished. An error means "not
// delivered" and is recorded.
type Check func(ctx context.Context, out Outcome) (Verdict, error)

// Verdict is a completion check's judgment.
type Verdict struct {
	Passed bool     `json:"passed"`
	Reason string   `json:"reason,omitzero"`
	Score  *float64 `json:"score,omitzero"`
}

// Outcome is what a settled run produced, as a check sees it.
type Outcome struct {
	RunID string
	// Text is the turn's final text.
	Text string
	// Output is the structured result the provider reported, if any.
	Output canonjson.Value
	// Events are the turn's events in order.
	Events []contract.EnvironmentEvent
	// Environment is the run's environment, still alive while the check
	// runs, so a check can read the files the worker wrote. Nil when the
	// run never reached one.
	Environment contract.Environment
}

// Request is one exact run.
type Request struct {
	// Profile is the authored profile; it keeps its identity.
	Profile *profile.Profile
	// Task is the turn's prompt.
	Task string
	// Provider runs the turn.
	Provider contract.Provider
	// Store records the run; required.
	Store store.Store
	// Check decides delivery; nil leaves the run settled but not
	// delivered.
	Check Check
	// JudgedBy, when Check is nil, names who decides the run's delivery
	// instead, such as the completion gate of a supervised run
	// ("supervise run R, node N"). The record says so (Record.JudgedBy)
	// and leaves delivered absent: this run's record does not know it.
	JudgedBy string
	// Stage is the seat stage to run (0 for a profile without seats).
	Stage int
	// RunID names the run; empty generates one.
	RunID string
	// Kind is the run record's kind; "" means "execute".
	Kind string
	// Budget, when set, is reserved before anything is dispatched and
	// settled with the observed spend.
	Budget *ledger.Pool
	// Reserve is what the run reserves from Budget.
	Reserve ledger.Budget
	// LeaseTTL bounds how long the run stays "running" if this process
	// dies or stalls: 0 means DefaultLeaseTTL; below MinLeaseTTL is
	// refused. The lease is renewed while the run lives, and once it
	// lapses the store refuses everything more this process would record.
	LeaseTTL time.Duration
	// CleanupTimeout bounds the store and provider calls made once ctx
	// has ended or the run is finishing: 0 means DefaultCleanupTimeout.
	CleanupTimeout time.Duration
	// Now replaces time.Now for the record's timestamps (leases always
	// run on the real clock); Logger receives progress (nil discards).
	Now    func() time.Time
	Logger *slog.Logger
	// Observer, when set, watches the run as it happens (see Observer);
	// nil costs nothing.
	Observer Observer
	// Reattach, when set, runs the turn in an environment another run
	// left, re-attaching to its turn, instead of creating one (see
	// Reattach).
	Reattach *Reattach
	// KeepInDoubt keeps the environment of a run that ends in doubt: it
	// had an environment, then its stream broke off (ReasonTransport) or
	// ended without a terminal event (ReasonNoTerminal), so the turn may
	// still be running in it (a network blip to a live server). Such an
	// environment is not destroyed, Result.EnvironmentKept and
	// Record.EnvironmentKept say so, and the caller owns it: it settles
	// the turn later (re-attaching with Reattach.Settle, as
	// fleet.Fleet.Recover does) or destroys it. Unset, the run destroys
	// it as every other ending does, since a caller that will not settle
	// it would leak it.
	KeepInDoubt bool
	// Continue, when set, runs the turn as a native continuation of a
	// kept environment's session instead of creating an environment
	// (see Continue); a session whose continuity the provider cannot
	// prove refuses the run (*ContinuityError) before anything is
	// dispatched, never running it fresh.
	Continue *Continue

	// observe, set by Stream, sees each event once it is durable and the
	// run record once it has ended.
	observe observer
	// seat, set by ExecuteSeated, carries a seat stage's native session
	// between stages.
	seat *seatStage
}

// observer watches an execution's durable record.
type observer interface {
	// event sees e, an event of the run of provider (the run's one reading
	// of Provider.Name).
	event(provider string, e store.Event)
	ended(r store.Run, events int64)
}

// Result is a recorded run.
type Result struct {
	RunID  string
	Status store.Status
	// Reason and Detail explain a run that did not complete.
	Reason, Detail string
	// Text and Output are what the run produced.
	Text   string
	Output canonjson.Value
	// Usage is the observed usage; unknown channels stay unknown, and a
	// turn that ended early (cut, timed out, cancelled, failed, lease
	// lost) reports what it saw as a floor.
	Usage ledger.Usage
	// RequestedModel is the model the effective profile requested;
	// Served is what the platform reported serving (empty: unknown).
	RequestedModel string
	Served         ServedIdentity
	// AuthoredDigest is the authored profile's identity (with seats);
	// EffectiveDigest is the provider-facing projection's.
	AuthoredDigest, EffectiveDigest string
	EnvironmentID                   string
	// NativeSessionID is the provider's own conversation id, when the
	// run observed one (NSO-02); it is never on the run's public events.
	NativeSessionID string
	// Continuity is ContinuityNative for a run that went on natively in
	// a kept session (Request.Continue, or a seat stage's), "" for a run
	// in an environment of its own.
	Continuity string
	// Delivered is true only when the completion check passed.
	Delivered bool
	Verdict   *Verdict
	// CheckError is why the check could not judge (then not delivered).
	CheckError string
	Events     int
	// Receipt is what the provider observed of an execution it rejected
	// (a contract.ExecutionError), kept on a failed or cancelled run.
	Receipt *contract.ExecutionFailureReceipt
	// TeardownUnconfirmed says why the environment this run created
	// could not be confirmed destroyed (its Destroy failed or did not
	// answer within the cleanup timeout): it may still exist and cost,
	// and whoever reports the run should say so. Empty when the run
	// destroyed it, kept it for a next seat stage, left it to the run's
	// next holder or created none. The run's outcome does not change.
	TeardownUnconfirmed string
	// EnvironmentKept is true when the run ended in doubt with
	// Request.KeepInDoubt set and left its environment (EnvironmentID)
	// alive: the caller now settles or destroys it.
	EnvironmentKept bool
}

// Execute runs one exact run and records it in req.Store. It returns the
// recorded result and, for a run that did not complete, a *RunError whose
// Status is failed, cancelled, timed out or — when this process lost the
// run's lease, or ctx ended with a cause matching contract.ErrLeaseLost
// (the caller lost the lease it held the run under) — interrupted. Refusals happen before the provider creates
// anything or the budget is charged; options that cannot be honored are
// refused before anything is recorded (ErrInvalidOptions).
func Execute(ctx context.Context, req Request) (*Result, error) {
	// A cancel request from any process (RequestCancel) cancels ctx.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	x, err := newExecution(ctx, req, cancel)
	if err != nil {
		return nil, err
	}
	defer x.afterPanic(ctx)
	runCtx := ctx
	if x.obs != nil {
		runCtx = x.obs.runStarted(ctx, RunStart{RunID: x.req.RunID, Kind: x.req.Kind, Profile: req.Profile, Stage: req.Stage})
	}
	x.run(runCtx)
	return x.finish(ctx)
}

// afterPanic, deferred, ends the record of a run that panicked — in the
// provider, or in a Stream consumer's loop body — as failed, so that it
// does not stay running under a lease renewed forever; the panic then goes
// on. A panic during finish only stops the lease: the run then reads as
// interrupted once it lapses, which is the truth.
func (x *execution) afterPanic(ctx context.Context) {
	p := recover()
	if p == nil {
		return
	}
	if x.finishing {
		x.life.release()
		panic(p)
	}
	x.fail(store.StatusFailed, ReasonPanic, fmt.Sprint("the run panicked: ", p), nil)
	x.req.observe = nil // the consumer is gone
	x.finish(ctx)
	panic(p)
}

type execution struct {
	req Request
	// provider is req.Provider.Name(), read once before the run is
	// recorded: a provider's name is the run's identity, and reading it
	// may cost I/O (a served provider learns it from its server), which
	// must not happen again while the run holds — or after it released —
	// its lease.
	provider string
	now      func() time.Time
	log      *slog.Logger
	res      Result
	life     *life
	effect   *profile.Profile
	runErr   *RunError
	ticket   *ledger.Ticket
	turn     ledger.TurnUsage
	events   []contract.EnvironmentEvent
	// text is the turn's text so far, kept whatever ends the turn.
	text strings.Builder
	// ended is set when the provider's stream ended with its own
	// completed terminal event, without an error: only then is the usage
	// it reported the turn's whole usage.
	ended bool
	// stoppedByModel is set when the turn's failed terminal event named
	// the model's own stop reason (StopReasonMember): the turn is over and
	// its usage reports are final.
	stoppedByModel bool
	// lastProgress is when the last progress entry was written.
	lastProgress time.Time
	// env is the run's environment, alive until the completion check
	// has judged (so a check can read its workspace), then destroyed.
	env contract.Environment
	// finishing is set once finish has begun.
	finishing bool
	// dispatched is set once the provider is asked for anything costly,
	// and cleared when it refused that before admitting anything
	// (admittedNothing); a run that ends undispatched certainly spent
	// nothing, and records its usage as zero (finish) — the one rule
	// every view of its spend reads, SeatedUsage's included.
	dispatched bool
	// obs calls the run's Observer; nil when it has none.
	obs *observing
	// terminal is the kind of the turn's terminal event, once it came;
	// stopReason the model's own reason for a failed one.
	terminal   contract.TerminalKind
	stopReason string
	// reattaching is set while the run follows a re-attached turn
	// (Request.Reattach); orphaned is set when that turn ended cancelled
	// though nobody asked this run to stop: it is run again.
	reattaching, orphaned bool
	// envGone is set when the provider said the re-attached environment
	// was destroyed: nothing is left to destroy.
	envGone bool
	// turnFrom is the index in events of the first event of the turn
	// that settles the run (after a re-attached turn it ran again).
	turnFrom int
}

func newExecution(ctx context.Context, req Request, cancel context.CancelCauseFunc) (*execution, error) {
	var errs optionErrors
	if req.Profile == nil {
		errs.add("Profile", "a profile is required")
	}
	if req.Provider == nil {
		errs.add("Provider", "a provider is required")
	}
	if req.Stage < 0 {
		errs.add("Stage", "%d is negative", req.Stage)
	}
	if req.Reattach != nil && req.Reattach.Environment == nil {
		errs.add("Reattach", "name the environment to re-attach to (Reattach.Environment)")
	}
	req.Continue.check(&errs)
	if req.Continue != nil && req.Reattach != nil {
		errs.add("Continue", "a run either continues a kept session or re-attaches to a turn, not both")
	}
	lo := lifeOptions{Store: req.Store, RunID: cmp.Or(req.RunID, NewID("run")), Kind: cmp.Or(req.Kind, "execute"),
		LeaseTTL: req.LeaseTTL, CleanupTimeout: req.CleanupTimeout, Logger: req.Logger}
	lo.check(&errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	x := &execution{req: req, provider: req.Provider.Name(), now: req.Now, log: lo.Logger}
	if x.now == nil {
		x.now = time.Now
	}
	if req.Observer != nil {
		x.obs = &observing{o: req.Observer, log: lo.Logger, runID: lo.RunID}
	}
	x.req.RunID, x.req.Kind, x.req.LeaseTTL, x.req.CleanupTimeout = lo.RunID, lo.Kind, lo.LeaseTTL, lo.CleanupTimeout
	x.res = Result{RunID: x.req.RunID, Status: store.StatusRunning}
	authored, err := profile.Digest(req.Profile)
	if err != nil {
		return nil, fmt.Errorf("kernel: the authored profile has no identity: %w", err)
	}
	x.res.AuthoredDigest = authored
	if x.life, err = startLife(ctx, lo, x.doc(), cancel); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *execution) fail(status store.Status, reason, detail string, cause error) {
	if x.runErr != nil {
		return // the first terminal fact wins
	}
	x.runErr = &RunError{RunID: x.req.RunID, Status: status, Reason: reason, Detail: detail, Cause: cause}
}

// contextEnd fails the run with the terminal status of a done context.
func (x *execution) contextEnd(ctx context.Context) bool {
	e := contextError(ctx, x.req.RunID)
	if e != nil {
		x.fail(e.Status, e.Reason, e.Detail, e.Cause)
	}
	return e != nil
}

func (x *execution) run(ctx context.Context) {
	caps, err := x.req.Provider.Capabilities(ctx)
	if err != nil {
		x.fail(store.StatusFailed, ReasonProvider, "reading the provider's capabilities", err)
		return
	}
	if err := x.prepare(caps); err != nil {
		x.fail(store.StatusFailed, ReasonRefused, err.Error(), err)
		return
	}
	// What will run is known: record it before anything is spent, so a
	// run that dies from here on still names its requested model.
	if err := x.life.updateDoc(x.doc()); err != nil {
		x.recordFailed(ctx, "recording the run's plan", err)
		return
	}
	if x.req.Budget != nil {
		t, err := x.req.Budget.Reserve(x.req.Reserve)
		if err != nil {
			x.fail(store.StatusFailed, ReasonRefused, "the budget has no room: "+err.Error(), err)
			return
		}
		x.ticket = t
	}
	if x.contextEnd(ctx) {
		return
	}
	if x.req.seat != nil && x.req.seat.from != nil && x.continueNative(ctx, x.req.seat) {
		return
	}
	if x.req.seat != nil && x.req.seat.freshTask != "" {
		// A fresh session holds nothing of what came before: the
		// caller's task for one.
		x.req.Task = x.req.seat.freshTask
	}
	if x.req.Continue != nil {
		x.continueKept(ctx)
		return
	}
	if r := x.req.Reattach; r != nil && !x.reattach(ctx, r) {
		return
	}
	x.dispatched = true
	env, err := x.req.Provider.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: x.effect},
		Credential: contract.CredentialRequestFor(x.req.Profile, x.req.Stage, contract.CredentialOnCreate)})
	if err != nil {
		x.keepReceipt(err)
		if admittedNothing(err) {
			x.dispatched = false
		}
		if !x.contextEnd(ctx) {
			reason := ReasonProvider
			if errors.Is(err, contract.ErrUnsupported) {
				reason = ReasonRefused
			}
			x.fail(store.StatusFailed, reason, "creating the environment: "+err.Error(), err)
		}
		return
	}
	x.res.EnvironmentID = env.ID()
	x.env = env
	if !x.recordEnvironment(ctx) {
		return
	}
	x.observedTurn(ctx, func(ctx context.Context) { x.stream(ctx, env) })
}

// observedTurn plays the run's turn, between the Observer's turn start
// and end when the run has one.
func (x *execution) observedTurn(ctx context.Context, play func(context.Context)) {
	if x.obs == nil {
		play(ctx)
		return
	}
	ctx = x.obs.turnStarted(ctx, TurnStart{RunID: x.req.RunID, EnvironmentID: x.res.EnvironmentID, Provider: x.provider, RequestedModel: x.res.RequestedModel})
	play(ctx)
	usage := x.turn.Total()
	if !x.ended {
		usage = usage.Floor()
	}
	x.obs.turnEnded(ctx, TurnEnd{RunID: x.req.RunID, Terminal: x.terminal, StopReason: x.stopReason, Served: x.res.Served, Usage: usage})
}

// prepare checks, before any spend, that the provider can honor the
// provider-facing projection of the chosen seat stage.
func (x *execution) prepare(caps *contract.Capabilities) error {
	eff, err := ProjectStage(caps, x.req.Profile, x.req.Stage)
	if eff == nil {
		return err
	}
	x.effect = eff
	if eff.Model != nil && eff.Model.Default != nil {
		x.res.RequestedModel = *eff.Model.Default
	}
	d, derr := profile.Digest(eff)
	if derr != nil {
		return fmt.Errorf("the effective profile has no identity: %w", derr)
	}
	x.res.EffectiveDigest = d
	return err
}

func effortOf(p *profile.Profile) harness.ReasoningEffort {
	if p.Model == nil {
		return ""
	}
	return p.Model.ReasoningEffort
}

func (x *execution) stream(ctx context.Context, env contract.Environment) {
	prompt := x.req.Task
	turn := &contract.TurnInput{Profile: x.effect, Prompt: &prompt,
		Credential: contract.CredentialRequestFor(x.req.Profile, x.req.Stage, contract.CredentialOnTurn)}
	// The run owns its execution: an environment that can hand its owner
	// the private native session observation does (NSO-02).
	events := env.Stream
	if o, ok := env.(contract.OwnedStreamer); ok {
		events = o.StreamOwned
	}
	x.consume(ctx, events(ctx, turn))
}

// consume records a turn's events as they come and settles the turn from
// its terminal event: the one reading of a provider's turn, whether
// streamed or followed after a native continuation.
func (x *execution) consume(ctx context.Context, events iter.Seq2[contract.EnvironmentEvent, error]) {
	terminal := contract.TerminalKind("")
	for e, err := range events {
		if err != nil {
			x.keepReceipt(err)
			if x.reattaching && errors.Is(err, contract.ErrDestroyed) && ctx.Err() == nil {
				// The re-attached environment is gone, and its turn with
				// it: run again (see Reattach).
				x.orphaned, x.envGone = true, true
				return
			}
			if !x.contextEnd(ctx) {
				reason := ReasonTransport
				if errors.Is(err, contract.ErrUnsupported) {
					reason = ReasonRefused
				}
				x.fail(store.StatusFailed, reason, err.Error(), err)
			}
			return
		}
		if err := contract.CheckPublicEnvironmentEvent(e); err != nil {
			x.observeNative(e)
			continue // private (native session identity): never recorded publicly
		}
		// Events that arrive after a cancel are facts too: record them.
		if err := x.record(e); err != nil {
			x.recordFailed(ctx, "recording an event", err)
			return
		}
		if x.obs != nil {
			x.obs.event(ctx, e)
		}
		counted, err := x.turn.ObserveEvent(e)
		if err != nil {
			x.log.Warn("usage not aggregated", "run", x.req.RunID, "err", err)
		}
		served := x.res.Served.Model
		x.observeIdentity(e)
		if counted || x.res.Served.Model != served {
			x.progress(counted, x.res.Served.Model != served)
		}
		appendText(&x.text, e)
		if out, ok := e.Data["result"]; ok && out.IsValid() {
			x.res.Output = out
		}
		if kind, ok := turnTerminal(e); ok {
			terminal, x.terminal = kind, kind
			switch kind {
			case contract.TerminalFailed:
				x.fail(store.StatusFailed, ReasonInBandError, eventError(e), nil)
				// A failure the model ended the turn with itself (a token
				// limit, say) closes a whole turn; an error breaks one off.
				if r := modelStopReason(e); r != "" {
					x.stoppedByModel, x.stopReason = true, r
				}
			case contract.TerminalCancelled:
				// The caller's own cancel or deadline, when that is why,
				// names the ending more exactly than the provider can; a
				// cancellation nobody asked for is the provider failing.
				// A re-attached turn cancelled with its previous holder is
				// run again (see Reattach).
				switch {
				case x.contextEnd(ctx):
				case x.reattaching:
					x.orphaned = true
				default:
					x.fail(store.StatusFailed, ReasonInBandError, "the provider reported the turn cancelled, which nobody requested", nil)
				}
			}
			if t := terminalText(e); t != "" {
				x.text.Reset()
				x.text.WriteString(t)
			}
			// The terminal ends the turn (the contract: a stream ends
			// with its terminal event). Nothing after it is read: a
			// provider that streams on, or claims a second ending, can
			// neither change the settled turn nor hold the run open.
			break
		}
	}
	switch {
	case terminal == contract.TerminalCompleted, terminal == contract.TerminalFailed && x.stoppedByModel:
		x.ended = true
	case terminal == "" && !x.contextEnd(ctx):
		x.fail(store.StatusFailed, ReasonNoTerminal, "the stream ended without a terminal event", nil)
	}
}

// turnTerminal reports the kind of turn end e is: its own terminal
// marking, or failed for an "error" event (spec §2.3: an error event
// fails the execution even when the provider did not mark it terminal).
func turnTerminal(e contract.EnvironmentEvent) (contract.TerminalKind, bool) {
	kind, ok := contract.EnvironmentEventTerminal(e)
	if !ok && e.Type == "error" {
		kind, ok = contract.TerminalFailed, true
	}
	return kind, ok
}

// modelStopReason is the model's own reason a failed terminal event
// names (StopReasonMember), "" when it names none.
func modelStopReason(e contract.EnvironmentEvent) string {
	if r, ok := e.Data[StopReasonMember]; ok && r.Kind() == canonjson.String {
		return r.Str()
	}
	return ""
}

// terminalText is the whole text a terminal event states (data.text),
// which replaces the streamed text; "" when it states none.
func terminalText(e contract.EnvironmentEvent) string {
	if t, ok := e.Data["text"]; ok && t.Kind() == canonjson.String {
		return t.Str()
	}
	return ""
}

// StopReasonMember is the member of a failed terminal event's data that
// names the model's own reason for ending the turn (contract.ChatEvent's
// StopReason): such a turn ran to its end, and the usage it reported is
// the turn's whole usage rather than a floor.
const StopReasonMember = "stopReason"

// recordFailed fails the run whose record write was refused: interrupted
// when the lease was lost (the store refuses the old holder), otherwise
// failed — the run cannot go on unrecorded.
func (x *execution) recordFailed(ctx context.Context, what string, err error) {
	if lost := x.life.leaseLost(); lost != nil {
		x.fail(store.StatusInterrupted, ReasonLeaseLost, lost.Error(), lost)
		return
	}
	if x.contextEnd(ctx) {
		return
	}
	x.fail(store.StatusFailed, ReasonStoreFailed, what+": "+err.Error(), &StoreError{RunID: x.req.RunID, Op: "record", Err: err})
}

// receiptFloor fills the channels u does not know from a provider's
// failure receipt, which is a lower bound (a floor), never complete.
func receiptFloor(u ledger.Usage, r *contract.ExecutionFailureReceipt) ledger.Usage {
	if r == nil || r.TokenUsage == nil {
		return u
	}
	fill := func(a *ledger.Amount[int64], p *int64) {
		if !a.Reported && p != nil {
			*a = ledger.Amount[int64]{Value: *p, Reported: true}
		}
	}
	t := r.TokenUsage
	fill(&u.InputTokens, t.InputTokens)
	fill(&u.OutputTokens, t.OutputTokens)
	fill(&u.CacheReadTokens, t.CacheReadInputTokens)
	fill(&u.CacheWriteTokens, t.CacheCreationInputTokens)
	fill(&u.ReasoningTokens, t.ReasoningTokens)
	if !u.CostUSD.Reported && t.Cost != nil {
		u.CostUSD = ledger.Amount[float64]{Value: *t.Cost, Reported: true}
	}
	return u
}

// keepReceipt keeps the receipt of a provider's contract.ExecutionError.
func (x *execution) keepReceipt(err error) {
	if ee, ok := errors.AsType[*contract.ExecutionError](err); ok && x.res.Receipt == nil {
		r := ee.Receipt()
		x.res.Receipt = &r
	}
}

// progressEvery bounds how often a run writes the progress of its
// reported usage: the first report at once, later ones at most this
// often (a stream that reports usage with every chunk must not cost a
// durable write per chunk). A progress entry is a floor, so one skipped
// is a lower floor kept, never a wrong number; the closing entry states
// the turn's usage whole.
const progressEvery = 250 * time.Millisecond

// progress records what the run has learned so far, as soon as it is
// reported: when usage was reported, a ledger entry with the turn's usage
// as a floor (the turn is not over); when the served model became known,
// the run document naming it. A run whose process dies keeps them.
func (x *execution) progress(usage, served bool) {
	var err error
	if now := time.Now(); usage && now.Sub(x.lastProgress) >= progressEvery {
		x.lastProgress = now
		err = x.life.appendLedger([]canonjson.Value{progressEntry(x.turn.Total(), x.res.Served.Model)}, x.now())
	}
	if err == nil && served {
		err = x.life.updateDoc(x.doc())
	}
	if err != nil && x.life.leaseLost() == nil {
		x.log.Warn("recording progress", "run", x.req.RunID, "err", err)
	}
}

func (x *execution) record(e contract.EnvironmentEvent) error {
	x.events = append(x.events, e)
	body, err := canonjson.ToValue(e)
	if err != nil {
		return err
	}
	id := fmt.Sprintf("e%d", len(x.events))
	if e.ID != nil {
		id = *e.ID
	}
	stored, err := x.life.appendEvents([]store.NewEvent{{ID: id, Type: e.Type, Time: x.now(), Body: body}})
	if err != nil {
		return err
	}
	x.res.Events++
	if x.req.observe != nil {
		x.req.observe.event(x.provider, stored[0])
	}
	return nil
}

// observeIdentity reads effectiveBackend{provider, model, source} and
// fails the run when the served model differs from the requested one.
func (x *execution) observeIdentity(e contract.EnvironmentEvent) {
	if detail := servedMismatch(x.res.RequestedModel, &x.res.Served, e); detail != "" {
		x.fail(store.StatusFailed, ReasonModelMismatch, detail, nil)
	}
}

// servedMismatch reads the served identity e reports
// (effectiveBackend{provider, model, source}) into served and says how
// it contradicts the requested model or the served model reported
// before ("" when it does not, or e reports none).
func servedMismatch(requested string, served *ServedIdentity, e contract.EnvironmentEvent) string {
	b, ok := e.Data["effectiveBackend"]
	if !ok || b.Kind() != canonjson.Object {
		return ""
	}
	get := func(name string) string {
		v, _ := b.Get(name)
		return v.Str()
	}
	model := get("model")
	if model == "" {
		return ""
	}
	mismatch := ""
	if served.Model != "" && !SameModel(served.Model, model) {
		mismatch = fmt.Sprintf("the platform reported two served models, %s and %s", served.Model, model)
	}
	*served = ServedIdentity{Provider: get("provider"), Model: model, Source: cmp.Or(get("source"), e.Type)}
	if mismatch == "" && requested != "" && !SameModel(requested, model) {
		mismatch = fmt.Sprintf("requested %s but the platform served %s", requested, model)
	}
	return mismatch
}

func appendText(b *strings.Builder, e contract.EnvironmentEvent) {
	n := e.Normalized
	if n == nil || n.MessagePartUpdated == nil || n.MessagePartUpdated.Delta == nil || !n.MessagePartUpdated.Part.IsText() {
		return
	}
	b.WriteString(*n.MessagePartUpdated.Delta)
}

// eventError is a failure event's message: data.error, outcome.error,
// result.error or message, the first that is a non-empty string, else
// the normalized status detail, else data.status.
func eventError(e contract.EnvironmentEvent) string {
	for _, path := range [][]string{{"error"}, {"outcome", "error"}, {"result", "error"}, {"message"}} {
		v, ok := e.Data[path[0]]
		if ok && len(path) == 2 {
			v, ok = v.Get(path[1])
		}
		if ok && v.Kind() == canonjson.String && v.Str() != "" {
			return v.Str()
		}
	}
	// The normalized detail says what failed (a harness process's exit
	// and its stderr tail); a bare status word ("failed") says only
	// that something did.
	if e.Normalized != nil && e.Normalized.Status != nil && e.Normalized.Status.Detail != nil && *e.Normalized.Status.Detail != "" {
		return *e.Normalized.Status.Detail
	}
	if v, ok := e.Data["status"]; ok && v.Kind() == canonjson.String && v.Str() != "" {
		return v.Str()
	}
	return "the provider reported a failure"
}

// finish settles the budget, runs the completion check, destroys the
// environment it created, appends the ledger entry and records the
// terminal state — every call bounded by the cleanup timeout once ctx has
// ended. A run whose lease was lost ends interrupted: the store refuses
// its old holder, and nothing claims it completed.
func (x *execution) finish(ctx context.Context) (*Result, error) {
	x.finishing = true
	defer x.life.release()
	if x.obs != nil {
		defer func() { x.obs.runEnded(ctx, x.res) }()
	}
	x.res.Text = x.text.String()
	x.res.Usage = x.turn.Total()
	switch {
	case !x.dispatched:
		x.res.Usage = ledger.NoUsage()
	case !x.ended:
		x.res.Usage = x.res.Usage.Floor() // the turn ended early: what it reported is a floor
		x.res.Usage = receiptFloor(x.res.Usage, x.res.Receipt)
	}
	if x.ticket != nil {
		if err := x.req.Budget.Settle(x.ticket, spendOf(x.res.Usage)); err != nil {
			x.log.Warn("budget settlement", "run", x.req.RunID, "err", err)
		}
	}
	if lost := x.life.leaseLost(); lost != nil {
		x.lost(lost)
	}
	if x.runErr == nil {
		x.res.Status = store.StatusCompleted
		x.check(ctx)
	}
	x.life.finishing()
	// An environment is destroyed only when this run provably created it
	// (ENV-06): a replayed one belongs to another caller, and one whose
	// creation is unknown may too.
	switch {
	case x.keepForSeat():
		x.log.Info("keeping the environment for the next seat stage", "run", x.req.RunID, "env", x.res.EnvironmentID)
	case x.inDoubt():
		x.res.EnvironmentKept = true
		x.log.Warn("keeping the environment: the turn is in doubt and may still be running in it", "run", x.req.RunID, "env", x.res.EnvironmentID, "reason", x.runErr.Reason)
	default:
		x.releaseEnv()
	}
	if x.runErr != nil {
		x.res.Status, x.res.Reason, x.res.Detail = x.runErr.Status, x.runErr.Reason, x.runErr.Detail
		x.res.Delivered, x.res.Verdict = false, nil
	}
	if x.res.Status != store.StatusInterrupted {
		entry, err := canonjson.ToValue(ledgerEntry(x.res))
		if err == nil {
			err = x.life.appendClosing(entry, x.now())
		}
		if err != nil && x.life.leaseLost() == nil {
			x.log.Error("recording the ledger entry", "run", x.req.RunID, "err", err)
		}
	}
	ended, err := x.life.end(x.res.Status, func(lost *LeaseLostError) canonjson.Value {
		if lost != nil {
			x.lost(lost)
		}
		return x.doc()
	})
	if _, ok := errors.AsType[*LeaseLostError](err); ok {
		if x.req.observe != nil {
			x.req.observe.ended(x.interruptedRun(), int64(x.res.Events))
		}
		return &x.res, x.runErr
	}
	if err != nil {
		x.endUnrecorded(err)
		return &x.res, x.runErr
	}
	if x.req.observe != nil {
		x.req.observe.ended(ended, int64(x.res.Events))
	}
	if x.runErr != nil {
		return &x.res, x.runErr
	}
	return &x.res, nil
}

// lost makes the run's outcome what readers see once this process lost
// its lease: interrupted, not delivered, whatever it had reached.
func (x *execution) lost(lost *LeaseLostError) {
	x.runErr = &RunError{RunID: x.req.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
	x.res.Status, x.res.Reason, x.res.Detail = store.StatusInterrupted, ReasonLeaseLost, lost.Error()
	x.res.Delivered, x.res.Verdict = false, nil
}

// endUnrecorded makes the outcome of a run whose terminal write failed
// (the store failed or did not answer within the cleanup window) what
// readers will see: interrupted once its lease, no longer renewed,
// lapses — never the completion this process could not record.
func (x *execution) endUnrecorded(err error) {
	re, ok := errors.AsType[*RunError](err)
	if !ok {
		re = unrecordedEnd(x.req.RunID, x.res.Status, err)
	}
	x.runErr = re
	x.res.Status, x.res.Reason, x.res.Detail = store.StatusInterrupted, ReasonStoreFailed, x.runErr.Detail
	x.res.Delivered, x.res.Verdict = false, nil
}

// interruptedRun is the run as every reader sees it once this process
// lost its lease: interrupted, with what it had recorded.
func (x *execution) interruptedRun() store.Run {
	return store.Run{ID: x.req.RunID, Kind: x.req.Kind, Status: store.StatusInterrupted, UpdatedAt: x.now(), Doc: x.doc()}
}

func (x *execution) check(ctx context.Context) {
	if x.req.Check == nil {
		if x.req.JudgedBy == "" {
			x.res.CheckError = "no completion check was given"
		}
		return
	}
	out := Outcome{RunID: x.req.RunID, Text: x.res.Text, Output: x.res.Output, Events: slices.Clone(x.events[x.turnFrom:]), Environment: x.env}
	v, err := safeCheck(ctx, x.req.Check, out)
	if err != nil {
		x.res.CheckError = err.Error()
		return
	}
	x.res.Verdict = &v
	x.res.Delivered = v.Passed
}

func safeCheck(ctx context.Context, c Check, out Outcome) (v Verdict, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the completion check panicked: %v", p)
		}
	}()
	return c(ctx, out)
}

func spendOf(u ledger.Usage) ledger.Spend {
	var s ledger.Spend
	if u.InputTokens.Known() && u.OutputTokens.Known() {
		t := u.InputTokens.Value + u.OutputTokens.Value
		s.Tokens = &t
	}
	one := int64(1)
	s.Iterations = &one
	if u.CostUSD.Known() {
		// Dollars past ledger.MaxQuantity micro-dollars are unknown.
		if micro, ok := ledger.SpentMicroUSD(u.CostUSD.Value); ok {
			s.MicroUSD = &micro
		}
	}
	return s
}

// owner names this process as a run's owner: host/pid.
func owner() string { return processOwner() }

// processOwner is computed once: a process's host and pid do not change.
var processOwner = sync.OnceValue(func() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
})

// NewID returns prefix, a dash and 16 random hex digits.
func NewID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%x", prefix, b)
}

// admittedNothing reports whether err is a provider's typed quota
// refusal that came before it admitted anything (QuotaRefusalError.Run
// nil: nothing was dispatched under it), so the request it refused
// spent nothing.
func admittedNothing(err error) bool {
	q, ok := errors.AsType[*contract.QuotaRefusalError](err)
	return ok && q.Run == nil
}
