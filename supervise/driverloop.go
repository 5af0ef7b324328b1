package supervise

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/ctxsleep"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// KindDriverAttempt is one attempt of the run's external driver
// (DriveAttempts): Node the manager, Data its DriverAttempt. Replay
// passes it over; it is the run's record of how often, and why, its
// driver was entered.
const KindDriverAttempt = "driver-attempt"

// Defaults of DriverRetry and Reprompt (spec/runtime.md §3.6
// driverRetry, repromptOnUnmet; the reference's defaults).
const (
	DefaultDriverMaxAttempts            = 8
	DefaultDriverMaxConsecutiveFailures = 3
	DefaultDriverInitialBackoff         = 2 * time.Second
	DefaultDriverMaxBackoff             = 30 * time.Second
	DefaultUnavailablePause             = 15 * time.Second
	DefaultMaxUnavailablePause          = 5 * time.Minute
	DefaultMaxBarrenReprompts           = 2
)

// DriverRetry is how an external driver whose turn failed is entered
// again (§3.6 driverRetry): on the same run, the same coordination
// endpoint and the same live workers — nothing is restarted or
// replayed, the manager is driven again. It applies to brains that
// drive through Coordinator.DriveAttempts (coordmcp.HarnessBrain); the
// router brain runs its loop in process and its model calls retry in
// their transport. The zero value retries under the defaults.
//
// A failure is classified (ClassifyDriverFailure): a terminal one (the
// run's own decision: a refusal, a stop, a cancellation, an invalid
// request) ends the run at once; a transient one (a process that exited,
// a stream cut, a 5xx) is retried after a doubling backoff; an upstream
// out of capacity (429, 503, 529, a quota) pauses the driver and enters
// it again without spending an attempt. The deadline, the budget and a
// cancellation bound every one of them.
type DriverRetry struct {
	// Disabled: the first failure ends the run (driver-failed).
	Disabled bool
	// MaxAttempts caps the failed attempts across the run, progress or
	// not (0: DefaultDriverMaxAttempts; 1 retries nothing). Completed
	// attempts (re-prompts) do not count.
	MaxAttempts int
	// MaxConsecutiveFailures is how many failures in a row that changed
	// nothing end the run (0: DefaultDriverMaxConsecutiveFailures). A
	// failure that made progress resets the count.
	MaxConsecutiveFailures int
	// InitialBackoff is the wait before the first retry, doubling per
	// failure in a row that made no progress, up to MaxBackoff (0:
	// DefaultDriverInitialBackoff, DefaultDriverMaxBackoff).
	InitialBackoff, MaxBackoff time.Duration
	// UnavailablePause is the pause after an upstream refused for
	// capacity, doubling per refusal in a row, up to MaxUnavailablePause
	// (0: DefaultUnavailablePause, DefaultMaxUnavailablePause).
	UnavailablePause, MaxUnavailablePause time.Duration
}

// Reprompt is how a driver that returned while the run has delivered
// nothing is entered again with what is still owed (§3.6
// repromptOnUnmet): a harness owns its turn loop and may end before the
// check passed. The zero value never re-prompts. Each re-prompt crosses
// the same bounds as a retry (the deadline, the budget, a cancellation,
// the manager's stop) and spends no retry attempt. It applies to
// brains that drive through Coordinator.DriveAttempts; Supervise refuses
// it for the router brain.
type Reprompt struct {
	// Max is how many times the run may re-prompt its driver (0: never).
	Max int
	// UntilComplete lifts the count cap (Max must then be 0); it needs
	// the run's Deadline.
	UntilComplete bool
	// MaxBarren is how many re-prompted attempts in a row may deliver
	// nothing before re-prompting stops (0: DefaultMaxBarrenReprompts).
	MaxBarren int
	// OnUnmet composes the instruction the driver is entered again with,
	// or ends the run (UnmetDecision.Stop). Nil: DefaultUnmetSteer. An
	// error (or a panic) ends the run as the driver's failure would. It
	// is waited for until the run's deadline, a cancellation or a stop
	// ends its ctx; then the re-prompt is refused by that bound and the
	// hook no longer waited for.
	OnUnmet func(ctx context.Context, u UnmetContract) (UnmetDecision, error)
}

// UnmetContract is what Reprompt.OnUnmet is shown when a driver returned
// with the run's check unmet.
type UnmetContract struct {
	// Attempt is the attempt that just returned (1-based); Reprompts is
	// how many re-prompts the run issued before it.
	Attempt, Reprompts int
	// Max and UntilComplete are the run's Reprompt bounds.
	Max           int
	UntilComplete bool
	// Progress is the run's progress read after the attempt.
	Progress DriverProgress
	// Describe is the run's Deliverable.Describe.
	Describe string
	// BarrenReentries counts the re-prompted attempts in a row, this one
	// included, that delivered nothing.
	BarrenReentries int
}

// UnmetDecision is Reprompt.OnUnmet's answer: enter the driver again
// with Steer, or Stop the run here.
type UnmetDecision struct {
	Steer string
	Stop  bool
}

// ContractState is whether the run's check has passed: met once a
// submitted result passed it or one of the root's workers delivered.
type ContractState string

// Contract states.
const (
	ContractMet   ContractState = "met"
	ContractUnmet ContractState = "unmet"
)

// DriverProgress is the reading an attempt is judged by: did it move the
// run toward its deliverable? While the check is unmet, spend and
// settlements alone are not progress; a delivery is.
type DriverProgress struct {
	// PoolTokensSpent is the tokens committed in the run's pool (the
	// manager's and the workers').
	PoolTokensSpent int64 `json:"poolTokensSpent"`
	// Settled and Delivered count the settled workers, and those of
	// them that passed the check.
	Settled   int `json:"settled"`
	Delivered int `json:"delivered"`
	// Submitted: a submitted result passed the check.
	Submitted bool          `json:"submitted"`
	Contract  ContractState `json:"contract"`
}

// FailureClass is how one driver failure is answered.
type FailureClass string

// Failure classes.
const (
	// FailureTerminal is the run's own decision, or a request that fails
	// the same way every time: the run ends.
	FailureTerminal FailureClass = "terminal"
	// FailureTransient is an accident (a process that exited, a stream
	// cut, a 5xx): retried.
	FailureTransient FailureClass = "transient"
	// FailureUnavailable is an upstream out of capacity (quota, rate
	// limit, overload): the driver pauses and is entered again.
	FailureUnavailable FailureClass = "unavailable"
)

// AttemptStop is why the driver loop stopped; StopCompleted is its only
// non-failure.
type AttemptStop string

// Attempt stops.
const (
	StopCompleted       AttemptStop = "completed"
	StopTerminalError   AttemptStop = "terminal-error"
	StopRetryDisabled   AttemptStop = "retry-disabled"
	StopAborted         AttemptStop = "aborted"
	StopBudgetExhausted AttemptStop = "budget-exhausted"
	StopDeadline        AttemptStop = "deadline"
	StopNoProgress      AttemptStop = "no-progress"
	StopMaxAttempts     AttemptStop = "max-attempts"
)

// RepromptRefusal is why a driver that returned with the check unmet
// was not entered again.
type RepromptRefusal string

// Re-prompt refusals; StopAborted, StopBudgetExhausted, StopDeadline and
// StopNoProgress refuse one too (as RepromptRefusal(stop)).
const (
	RepromptsExhausted RepromptRefusal = "reprompts-exhausted"
	RepromptCallerStop RepromptRefusal = "caller-stop"
)

// ReentryReason says why a driver is entered again.
type ReentryReason string

// Re-entry reasons.
const (
	ReentryUnmetContract       ReentryReason = "unmet-contract"
	ReentryDriverFailure       ReentryReason = "driver-failure"
	ReentryUpstreamUnavailable ReentryReason = "upstream-unavailable"
)

// DriverReentry is what a driver entered again is told (nil on the first
// attempt). An unmet-contract re-entry carries the instruction (Steer)
// and which re-prompt it is; a driver-failure one the failure and which
// retry; an upstream-unavailable one the refusal's signal and which
// pause. A driver entered after a failure may never have read an
// earlier instruction: it is entered with the original task and the
// run's state, never with Steer alone.
type DriverReentry struct {
	Reason   ReentryReason
	Steer    string
	Reprompt int
	Failure  string
	Retry    int
	Signal   string
	Pause    int
}

// DriverAttempt is one attempt's record (journaled as KindDriverAttempt
// and passed to Options.OnDriverAttempt): what makes "the driver failed
// after 3 attempts, last cause X" legible.
type DriverAttempt struct {
	// Manager is the manager whose driver this attempt is: the run's id
	// for its root manager, a node id for a nested one.
	Manager    NodeID `json:"manager,omitzero"`
	Attempt    int    `json:"attempt"`
	DurationMS int64  `json:"durationMs"`
	// Error is the attempt's failure (absent when it completed) and
	// Class how it was answered.
	Error string       `json:"error,omitzero"`
	Class FailureClass `json:"classification,omitzero"`
	// MadeProgress: the attempt moved the run toward its deliverable.
	MadeProgress bool `json:"madeProgress"`
	// Stop is set when this attempt ended the loop.
	Stop AttemptStop `json:"stop,omitzero"`
	// RetryInMS is set when another attempt follows: the wait before it.
	RetryInMS *int64 `json:"retryInMs,omitzero"`
	// Reentry is how this attempt was entered (absent on the first).
	Reentry ReentryReason `json:"reentry,omitzero"`
	// UnavailableSignal is the code or status that classified an
	// unavailable attempt (http-429, provider_quota_exhausted, …).
	UnavailableSignal string `json:"unavailableSignal,omitzero"`
	// Contract is the check's state after the attempt.
	Contract ContractState `json:"contract,omitzero"`
	// Reprompted: this completed attempt's unmet check entered the
	// driver again; RepromptRefusedBy says why it did not.
	Reprompted        bool            `json:"reprompted,omitzero"`
	RepromptRefusedBy RepromptRefusal `json:"repromptRefusedBy,omitzero"`
}

// DriverContinuation is what the run's driver loop did, counted from its
// attempts (SupervisedResult.Continuation): genuine re-prompts apart from
// retries after failures and pauses for an unavailable upstream.
type DriverContinuation struct {
	Attempts          int   `json:"attempts"`
	Reprompts         int   `json:"reprompts"`
	FailureRetries    int   `json:"failureRetries"`
	UnavailablePauses int   `json:"unavailablePauses"`
	UnavailableMS     int64 `json:"unavailableMs"`
	// BarrenReentries counts the re-prompted attempts in a row, at the
	// end, that delivered nothing.
	BarrenReentries int `json:"barrenReentries"`
	// Ended is the last attempt's stop ("unrecorded" when none said).
	Ended             AttemptStop     `json:"ended"`
	RepromptRefusedBy RepromptRefusal `json:"repromptRefusedBy,omitzero"`
	// ClosedBy is what closed the loop when the run itself did, as the
	// reference's driver-loop summary names it: ClosedByResultAccepted,
	// ClosedByStop or ClosedByStopRule; "" when none of them (the
	// driver returned, failed, or a ceiling or cancellation ended it).
	// StopReason is the stop's reason: the manager's own (stop's
	// reason) or the stop rule's.
	ClosedBy   string `json:"closedBy,omitzero"`
	StopReason string `json:"stopReason,omitzero"`
}

// DriverContinuation.ClosedBy values.
const (
	ClosedByResultAccepted = "result-accepted"
	ClosedByStop           = "stop"
	ClosedByStopRule       = "stop-rule"
)

// summarize counts attempts into their DriverContinuation.
func summarize(attempts []DriverAttempt) *DriverContinuation {
	if len(attempts) == 0 {
		return nil
	}
	out := &DriverContinuation{Attempts: len(attempts), Ended: "unrecorded"}
	for _, a := range attempts {
		switch {
		case a.MadeProgress:
			out.BarrenReentries = 0
		case a.Error == "" && a.Reentry != "" && a.Contract == ContractUnmet:
			out.BarrenReentries++
		}
		if a.Reprompted {
			out.Reprompts++
		}
		if a.Class == FailureUnavailable {
			if a.RetryInMS != nil {
				out.UnavailablePauses++
				out.UnavailableMS += *a.RetryInMS
			}
			if !a.MadeProgress {
				out.UnavailableMS += a.DurationMS
			}
		} else if a.Error != "" && a.RetryInMS != nil {
			out.FailureRetries++
		}
	}
	last := attempts[len(attempts)-1]
	if last.Stop != "" {
		out.Ended = last.Stop
	}
	out.RepromptRefusedBy = last.RepromptRefusedBy
	return out
}

// DriverAttemptsError ends a driver loop that failed after more than one
// attempt: the last failure (Err, which it unwraps to) described with
// the attempts' history, so driver-failed says more than one backend's
// last words.
type DriverAttemptsError struct {
	Attempts []DriverAttempt
	Stop     AttemptStop
	Err      error
}

func (e *DriverAttemptsError) Error() string {
	var s strings.Builder
	fmt.Fprintf(&s, "supervise: the manager's driver failed after %d attempt(s), stopped by %s; ", len(e.Attempts), e.Stop)
	var pauses int
	var paused int64
	first := ""
	for _, a := range e.Attempts {
		if a.Class == FailureUnavailable {
			pauses++
			if a.RetryInMS != nil {
				paused += *a.RetryInMS
			}
		}
		if first == "" && a.Error != "" {
			first = a.Error
		}
	}
	if pauses > 0 {
		fmt.Fprintf(&s, "%d attempt(s) met an unavailable upstream and paused %s in all; ", pauses, time.Duration(paused)*time.Millisecond)
	}
	last := ""
	if n := len(e.Attempts); n > 0 {
		last = e.Attempts[n-1].Error
	}
	if first != "" && first != last {
		s.WriteString("first failure: " + first + "; ")
	}
	s.WriteString("last cause: ")
	if e.Err != nil {
		s.WriteString(e.Err.Error())
	}
	return s.String()
}

// Unwrap returns the last failure.
func (e *DriverAttemptsError) Unwrap() error { return e.Err }

// TerminalDriverError marks a brain's failure as a decision that an
// attempt again would only repeat (a harness that is not installed, a
// refused configuration): ClassifyDriverFailure reads it as terminal.
type TerminalDriverError struct{ Err error }

func (e *TerminalDriverError) Error() string {
	if e == nil || e.Err == nil {
		return "supervise: terminal driver failure"
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *TerminalDriverError) Unwrap() error { return e.Err }

// unavailableCodes are the machine codes an upstream publishes for "not
// now" (a quota, a rate limit, an outage): the router's, OpenAI's and
// Anthropic's spellings.
var unavailableCodes = map[string]bool{
	"provider_quota_exhausted": true, "provider_quota_exceeded": true, "provider_rate_limit": true,
	"upstream_unavailable": true, "provider_key_invalid": true, "rate_limit_exceeded": true,
	"rate_limit_error": true, "overloaded_error": true,
}

// unavailableStatus reports 429, 503 and 529 (Anthropic's overload).
func unavailableStatus(s int) bool { return s == 429 || s == 503 || s == 529 }

var (
	codeToken  = regexp.MustCompile(`[a-z_]+`)
	statusText = regexp.MustCompile(`\bstatus code (\d{3})\b`)
)

// MaxClassifiedText bounds how much of a failure's text
// ClassifyDriverFailure reads for a code.
const MaxClassifiedText = 64 << 10

// unavailableInText finds an unavailable code as a whole token, or a
// status in the "status code NNN" framing a harness prints, in the
// failure's text: a harness CLI flattens its upstream's refusal into
// prose.
func unavailableInText(text string) string {
	if len(text) > MaxClassifiedText {
		text = text[:MaxClassifiedText]
	}
	text = strings.ToLower(text)
	for _, tok := range codeToken.FindAllString(text, -1) {
		if unavailableCodes[tok] {
			return tok
		}
	}
	if m := statusText.FindStringSubmatch(text); m != nil {
		if s, _ := strconv.Atoi(m[1]); unavailableStatus(s) {
			return "http-" + m[1]
		}
	}
	return ""
}

// ClassifyDriverFailure says how a driver's failure is answered, and for
// an unavailable one the signal (a code, or http-<status>) that says so.
// Terminal: a context that ended (a stop, a cancellation, the deadline),
// the run's own refusals (ErrInvalidOptions, ErrStopped, a kernel
// refusal, a lost lease or journal, a model the provider served in place
// of the one asked), a TerminalDriverError, an HTTP status of 4xx other
// than 408 and 429. Unavailable: a quota refusal, an HTTP 429, 503 or
// 529, or an upstream code for them in the failure's text. Anything else
// is transient.
func ClassifyDriverFailure(err error) (FailureClass, string) {
	if err == nil {
		return FailureTransient, ""
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrStopped) ||
		errors.Is(err, ErrInvalidOptions) || errors.Is(err, ErrUnsupportedHarness) || errors.Is(err, ErrSpawnLogLost) ||
		errors.Is(err, contract.ErrLeaseLost) || errors.Is(err, kernel.ErrRefused) {
		return FailureTerminal, ""
	}
	if _, ok := errors.AsType[*TerminalDriverError](err); ok {
		return FailureTerminal, ""
	}
	if _, ok := errors.AsType[*kernel.OptionsError](err); ok {
		return FailureTerminal, ""
	}
	if _, ok := errors.AsType[*contract.QuotaRefusalError](err); ok {
		return FailureUnavailable, "quota-refused"
	}
	if re, ok := errors.AsType[*kernel.RunError](err); ok {
		switch re.Reason {
		case kernel.ReasonRefused, kernel.ReasonCancelled, kernel.ReasonCancelledWithHolder, kernel.ReasonModelMismatch,
			kernel.ReasonInvalidCost, kernel.ReasonLeaseLost, kernel.ReasonStoreFailed:
			return FailureTerminal, ""
		case kernel.ReasonQuota:
			return FailureUnavailable, "quota-refused"
		}
	}
	var h interface{ HTTPStatus() int }
	if errors.As(err, &h) {
		switch s := h.HTTPStatus(); {
		case unavailableStatus(s):
			return FailureUnavailable, "http-" + strconv.Itoa(s)
		case s == 408 || s >= 500:
			return FailureTransient, ""
		case s >= 400:
			return FailureTerminal, ""
		}
	}
	if sig := unavailableInText(err.Error()); sig != "" {
		return FailureUnavailable, sig
	}
	return FailureTransient, ""
}

// DefaultUnmetSteer is the instruction a driver that returned with the
// check unmet is entered again with when Reprompt.OnUnmet is nil: the
// verdict, what is owed, the run's counts and what to do.
func DefaultUnmetSteer(u UnmetContract) string {
	owed := strings.TrimSpace(u.Describe)
	lines := []string{"The completion check has not passed. This run has delivered nothing yet."}
	if owed == "" {
		lines = append(lines, "The deliverable this run owes is still missing.")
	} else {
		lines = append(lines, "The deliverable this run owes: "+owed)
	}
	lines = append(lines,
		fmt.Sprintf("Workers settled: %d. Workers that passed the check: %d.", u.Progress.Settled, u.Progress.Delivered),
		"Do the unfinished work with the tools.",
		"Verify that the check passes.",
		"Then submit the result.",
		"Do not restate work you already did.")
	return strings.Join(lines, "\n")
}

// driverLoop is a run's DriverRetry, Reprompt and OnDriverAttempt.
type driverLoop struct {
	retry     DriverRetry
	reprompt  Reprompt
	onAttempt func(DriverAttempt)
	// attempts is what the root manager's loop recorded (mu of the
	// core).
	attempts []DriverAttempt
}

// checkDriverLoop validates the options' DriverRetry and Reprompt.
func checkDriverLoop(o *Options) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	r := o.DriverRetry
	if r.MaxAttempts < 0 || r.MaxConsecutiveFailures < 0 || r.InitialBackoff < 0 || r.MaxBackoff < 0 ||
		r.UnavailablePause < 0 || r.MaxUnavailablePause < 0 {
		bad("DriverRetry: attempts, failures, backoffs and pauses cannot be negative")
	}
	p := o.Reprompt
	switch {
	case p.Max < 0 || p.MaxBarren < 0:
		bad("Reprompt: Max and MaxBarren cannot be negative")
	case p.UntilComplete && p.Max > 0:
		bad("Reprompt: UntilComplete lifts the count cap; leave Max 0")
	case p.UntilComplete && o.Deadline.IsZero() && !o.Resume:
		bad("Reprompt: UntilComplete needs the run's Deadline (a finite bound on re-prompting)")
	}
	return errs
}

// repromptOn reports whether the run re-prompts at all.
func (l *driverLoop) repromptOn() bool { return l.reprompt.UntilComplete || l.reprompt.Max > 0 }

// driverProgress reads the run's progress toward its deliverable.
func (c *Coordinator) driverProgress() DriverProgress {
	r := c.pool.Readout()
	p := DriverProgress{PoolTokensSpent: r.Channels[ledger.ChannelTokens].Committed}
	nodes := c.scope.Nodes()
	c.mu.Lock()
	defer c.mu.Unlock()
	met := c.submitted != nil
	p.Submitted = met
	for _, n := range nodes {
		if n.State.Live() {
			continue
		}
		p.Settled++
		if w := c.workers[n.ID]; w != nil && w.delivered && n.State == StateDone {
			p.Delivered++
			if n.Parent == c.self {
				met = true
			}
		}
	}
	p.Contract = ContractUnmet
	if met {
		p.Contract = ContractMet
	}
	return p
}

// madeProgress: did the run move toward its deliverable between before
// and after? A delivery always counts; spend and settlements only once
// the check is met (never while it is unmet: they are the burn rate, not
// the goal).
func madeProgress(before, after DriverProgress) bool {
	switch {
	case after.Submitted && !before.Submitted, after.Delivered > before.Delivered,
		before.Contract != ContractMet && after.Contract == ContractMet:
		return true
	case after.Contract == ContractUnmet:
		return false
	}
	return after.PoolTokensSpent > before.PoolTokensSpent || after.Settled > before.Settled
}

// budgetStop is the pool's own verdict on another attempt: the deadline
// passed, or a capped channel has nothing free (dollars also once a
// worker's went unreported, resources once theirs did).
func (c *Coordinator) budgetStop() AttemptStop {
	r := c.pool.Readout()
	if !r.Deadline.IsZero() && !c.now().Before(r.Deadline) {
		return StopDeadline
	}
	for ch, b := range r.Channels {
		if !b.Capped {
			continue
		}
		switch ch {
		case ledger.ChannelTokens, ledger.ChannelIterations:
			if b.Free <= 0 {
				return StopBudgetExhausted
			}
		case ledger.ChannelUSD:
			// A worker's unreported dollars close admission (tainted);
			// the manager's own do not (they are observed, not gated).
			if b.Free <= 0 || r.USDTainted {
				return StopBudgetExhausted
			}
		default:
			if b.Free <= 0 || !b.Known {
				return StopBudgetExhausted
			}
		}
	}
	return ""
}

// doubled is first doubled n-1 times, at most ceiling.
func doubled(first, ceiling time.Duration, n int) time.Duration {
	d := first
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// DriveAttempts runs drive as the run's external driver under the run's
// DriverRetry and Reprompt (§3.6 driverRetry, repromptOnUnmet): until
// an attempt completes with the check met, or one that completed is not
// re-prompted, or a failure ends the loop. Each attempt is journaled
// (KindDriverAttempt) and passed to Options.OnDriverAttempt; r is nil on
// the first attempt and says why the driver is entered again on every
// later one. It returns the last completed attempt's report. A loop
// that failed after one attempt returns that attempt's error as it was;
// after more, a *DriverAttemptsError that unwraps to the last failure.
// A completed attempt returns whether or not the check is met: what an
// undelivered run is worth is the finalizer's to say.
func (c *Coordinator) DriveAttempts(ctx context.Context, drive func(ctx context.Context, attempt int, r *DriverReentry) (BrainReport, error)) (BrainReport, error) {
	l := c.driverLoop
	if l == nil {
		l = &driverLoop{}
	}
	pol := l.retry
	maxAttempts := orDefault(pol.MaxAttempts, DefaultDriverMaxAttempts)
	maxConsecutive := orDefault(pol.MaxConsecutiveFailures, DefaultDriverMaxConsecutiveFailures)
	initial := orDefaultDur(pol.InitialBackoff, DefaultDriverInitialBackoff)
	maxBackoff := max(initial, orDefaultDur(pol.MaxBackoff, DefaultDriverMaxBackoff))
	firstPause := orDefaultDur(pol.UnavailablePause, DefaultUnavailablePause)
	maxPause := max(firstPause, orDefaultDur(pol.MaxUnavailablePause, DefaultMaxUnavailablePause))
	maxBarren := orDefault(l.reprompt.MaxBarren, DefaultMaxBarrenReprompts)
	hasDeadline := !c.pool.Readout().Deadline.IsZero()
	if l.reprompt.UntilComplete && !hasDeadline {
		return BrainReport{}, fmt.Errorf("%w: Reprompt.UntilComplete needs the run's Deadline", ErrInvalidOptions)
	}

	var (
		reentry                    *DriverReentry
		report                     BrainReport
		attempts                   []DriverAttempt
		failures, barrenFailures   int
		barrenReentries, reprompts int
		consecutivePauses, pauses  int
	)
	emit := func(a DriverAttempt) {
		a.Manager = c.self
		if reentry != nil {
			a.Reentry = reentry.Reason
		}
		attempts = append(attempts, a)
		if c.IsRoot() {
			// The run's Continuation is its root manager's loop; a
			// nested manager's attempts are journaled on its node.
			c.mu.Lock()
			l.attempts = append(l.attempts, a)
			c.mu.Unlock()
		}
		if v, err := canonjson.ToValue(a); err == nil {
			if err := c.log.appendOrLose(context.WithoutCancel(ctx), Record{Kind: KindDriverAttempt, Node: c.self, Data: v}); err != nil {
				c.logger.Error("supervise: journaling the driver's attempt", "attempt", a.Attempt, "err", err)
			}
		}
		if l.onAttempt != nil {
			c.observeAttempt(ctx, l.onAttempt, a)
		}
	}
	fail := func(err error, stop AttemptStop) (BrainReport, error) {
		if len(attempts) <= 1 {
			return report, err
		}
		return report, &DriverAttemptsError{Attempts: attempts, Stop: stop, Err: err}
	}
	ms := func(d time.Duration) *int64 { v := d.Milliseconds(); return &v }

	for attempt := 1; ; attempt++ {
		before := c.driverProgress()
		started := c.now()
		rep, err := drive(ctx, attempt, reentry)
		dur := c.now().Sub(started).Milliseconds()
		after := c.driverProgress()
		progressed := madeProgress(before, after)
		if err != nil {
			class, signal := ClassifyDriverFailure(err)
			if ctx.Err() != nil {
				class, signal = FailureTerminal, ""
			}
			if class == FailureUnavailable && !hasDeadline {
				// Only a deadline bounds pauses: a run without one
				// retries an unavailable upstream as a failure, so an
				// outage that never ends does not hold it forever.
				class = FailureTransient
			}
			a := DriverAttempt{Attempt: attempt, DurationMS: dur, Error: err.Error(), Class: class, MadeProgress: progressed,
				Contract: after.Contract, UnavailableSignal: signal}
			if progressed {
				barrenReentries = 0
			}
			var stop AttemptStop
			switch {
			case class == FailureTerminal && ctx.Err() != nil:
				stop = c.ctxStop(ctx)
			case errors.Is(err, ErrBudgetStop):
				stop = StopBudgetExhausted
			case class == FailureTerminal:
				stop = StopTerminalError
			case pol.Disabled:
				stop = StopRetryDisabled
			default:
				stop = c.budgetStop()
			}
			if stop == "" && class == FailureTransient {
				failures++
				switch {
				case failures >= maxAttempts:
					stop = StopMaxAttempts
				case !progressed && barrenFailures+1 >= maxConsecutive:
					stop = StopNoProgress
				}
			}
			if stop != "" {
				a.Stop = stop
				emit(a)
				return fail(stoppedOr(ctx, err), stop)
			}
			var wait time.Duration
			if class == FailureUnavailable {
				pauses++
				if progressed {
					consecutivePauses = 1
				} else {
					consecutivePauses++
				}
				wait = doubled(firstPause, maxPause, consecutivePauses)
				reentryNext := &DriverReentry{Reason: ReentryUpstreamUnavailable, Signal: signal, Pause: pauses}
				a.RetryInMS = ms(wait)
				emit(a)
				reentry = reentryNext
			} else {
				consecutivePauses = 0
				if progressed {
					barrenFailures = 0
				} else {
					barrenFailures++
				}
				wait = doubled(initial, maxBackoff, max(1, barrenFailures))
				a.RetryInMS = ms(wait)
				emit(a)
				reentry = &DriverReentry{Reason: ReentryDriverFailure, Failure: err.Error(), Retry: failures}
			}
			// The wait is where a stop, a cancellation or the deadline
			// most often lands: asked again before the driver is.
			if !ctxsleep.Sleep(ctx, wait) {
				return fail(stoppedOr(ctx, err), c.ctxStop(ctx))
			}
			if stop := c.budgetStop(); stop != "" {
				return fail(err, stop)
			}
			continue
		}

		// A completed attempt ends the failure streak, not the barren
		// re-entries: only a delivery ends those.
		report = rep
		barrenFailures, consecutivePauses = 0, 0
		if progressed {
			barrenReentries = 0
		} else if reentry != nil && after.Contract == ContractUnmet {
			barrenReentries++
		}
		a := DriverAttempt{Attempt: attempt, DurationMS: dur, MadeProgress: progressed, Contract: after.Contract}
		if after.Contract == ContractMet || !l.repromptOn() {
			a.Stop = StopCompleted
			emit(a)
			return report, nil
		}
		steer, refused, err := c.decideReprompt(ctx, l, UnmetContract{Attempt: attempt, Reprompts: reprompts,
			Max: l.reprompt.Max, UntilComplete: l.reprompt.UntilComplete, Progress: after,
			Describe: c.check.Describe, BarrenReentries: barrenReentries}, maxBarren)
		if err != nil {
			a.Stop, a.Error, a.Class = StopTerminalError, err.Error(), FailureTerminal
			emit(a)
			return report, err
		}
		if refused != "" {
			a.Stop, a.RepromptRefusedBy = StopCompleted, refused
			emit(a)
			return report, nil
		}
		reprompts++
		a.Reprompted, a.RetryInMS = true, ms(0)
		emit(a)
		// Admission is asked again right before the driver is entered:
		// the journal and the observer took their time, and a
		// completed attempt stays completed (the reference's
		// admissionStop).
		if ctx.Err() != nil || c.budgetStop() != "" {
			return report, nil
		}
		reentry = &DriverReentry{Reason: ReentryUnmetContract, Steer: steer, Reprompt: reprompts}
	}
}

// decideReprompt says whether a driver that completed with the check
// unmet is entered again, and with what: every bound a retry crosses is
// crossed first, and the caller's OnUnmet last, so no instruction talks
// the loop past the deadline. An error is the caller's OnUnmet's.
func (c *Coordinator) decideReprompt(ctx context.Context, l *driverLoop, u UnmetContract, maxBarren int) (string, RepromptRefusal, error) {
	bounds := func() RepromptRefusal {
		if ctx.Err() != nil {
			return RepromptRefusal(c.ctxStop(ctx))
		}
		if stop := c.budgetStop(); stop != "" {
			return RepromptRefusal(stop)
		}
		return ""
	}
	switch {
	case !l.reprompt.UntilComplete && u.Reprompts >= l.reprompt.Max:
		return "", RepromptsExhausted, nil
	case u.BarrenReentries >= maxBarren:
		return "", RepromptRefusal(StopNoProgress), nil
	}
	if r := bounds(); r != "" {
		return "", r, nil
	}
	d := UnmetDecision{Steer: DefaultUnmetSteer(u)}
	if l.reprompt.OnUnmet != nil {
		var err error
		var answered bool
		if d, answered, err = onUnmet(ctx, l.reprompt.OnUnmet, u); !answered {
			// The run's deadline, a cancellation or the manager's stop
			// came first: the hook is no longer waited for.
			return "", bounds(), nil
		}
		if err != nil {
			return "", "", fmt.Errorf("supervise: Reprompt.OnUnmet: %w", err)
		}
	}
	if d.Stop {
		return "", RepromptCallerStop, nil
	}
	// OnUnmet may have taken its time: the bounds are asked again.
	if r := bounds(); r != "" {
		return "", r, nil
	}
	steer := strings.TrimSpace(d.Steer)
	if steer == "" {
		return "", "", fmt.Errorf("%w: Reprompt.OnUnmet returned an empty steer; return an instruction or Stop", ErrInvalidOptions)
	}
	return steer, "", nil
}

// orDefault is v, or def when v is 0.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// orDefaultDur is v, or def when v is 0.
func orDefaultDur(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// Continuation returns what the run's root manager's driver loop did so
// far (DriveAttempts), nil when its brain did not drive through it. A
// nested manager's attempts are not counted here: they are journaled on
// its node and passed to Options.OnDriverAttempt.
func (c *Coordinator) Continuation() *DriverContinuation {
	if c.driverLoop == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return summarize(c.driverLoop.attempts)
}

// ctxStop is the stop a driver loop whose ctx ended reports: the
// deadline when the run's deadline ended it (its brain's context, or a
// nested manager's worker context, carries it as the cause), else
// aborted (a stop, a cancellation, the caller).
func (c *Coordinator) ctxStop(ctx context.Context) AttemptStop {
	if errors.Is(context.Cause(ctx), ledger.ErrDeadline) || c.budgetStop() == StopDeadline {
		return StopDeadline
	}
	return StopAborted
}

// stoppedOr is err, or the manager's stop when that is what ended ctx:
// a stop that lands in a backoff, or cuts an attempt, ends the run as a
// stop, not as the failure before it.
func stoppedOr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); ctx.Err() != nil && errors.Is(cause, ErrStopped) {
		return cause
	}
	return err
}

// ObserverGrace bounds how long a driver loop whose context ended (the
// deadline, a cancellation, a stop) still waits for its
// Options.OnDriverAttempt to return.
const ObserverGrace = 5 * time.Second

// observeAttempt passes a to the run's OnDriverAttempt. The observer
// does not decide the run: a panic in it is logged and the loop goes
// on, and it is waited for until ctx ends (the deadline, a
// cancellation, a stop) and then for at most ObserverGrace more, so a
// quick observer still sees the last attempt before the run returns.
func (c *Coordinator) observeAttempt(ctx context.Context, observe func(DriverAttempt), a DriverAttempt) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				c.logger.Error("supervise: OnDriverAttempt panicked", "attempt", a.Attempt, "panic", fmt.Sprint(p))
			}
		}()
		observe(a)
	}()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(ObserverGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		c.logger.Warn("supervise: OnDriverAttempt had not returned when the run's driver ended; no longer waited for", "attempt", a.Attempt, "grace", ObserverGrace)
	}
}

// onUnmet asks the run's Reprompt.OnUnmet, bounded by ctx: answered is
// false when ctx ended first (the hook is then abandoned, as a check
// that does not answer is). A panic in the hook is its error.
func onUnmet(ctx context.Context, hook func(context.Context, UnmetContract) (UnmetDecision, error), u UnmetContract) (UnmetDecision, bool, error) {
	a, answered := callHook(ctx, func(ctx context.Context) (UnmetDecision, error) { return hook(ctx, u) })
	if a.panic != nil {
		return UnmetDecision{}, answered, fmt.Errorf("panicked: %v", a.panic)
	}
	return a.v, answered, a.err
}
