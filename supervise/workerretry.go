package supervise

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// Defaults of WorkerRetry's bounds (spec/runtime.md §3.6 workerRetry),
// used when a field is 0.
const (
	// DefaultWorkerRetryInitialBackoff is the wait before the first
	// re-entry; it doubles per attempt.
	DefaultWorkerRetryInitialBackoff = 5 * time.Second
	// DefaultWorkerRetryMaxBackoff caps the doubling.
	DefaultWorkerRetryMaxBackoff = 60 * time.Second
	// DefaultWorkerRetryMaxTotal bounds the time one worker's retries
	// may take, its waits included.
	DefaultWorkerRetryMaxTotal = 15 * time.Minute
)

// KindWorkerRetry is the journal record of a worker whose attempt was
// refused before anything ran and is about to be started again
// (Options.WorkerRetry): Record.Node the worker, Record.Reason the
// attempt's error, Record.AtMS when it was refused. It is a reading for
// the journal's reader; a resume replays nothing from it: a retried
// attempt ran nothing and spent nothing, and a worker cut between
// attempts is recovered, or left in doubt, the way any spawn without a
// settlement is.
const KindWorkerRetry = "worker-retry"

// WorkerRetry is how a worker whose execution was refused before it ran
// is started again (§3.6 workerRetry). The zero value never retries
// (the reference's default: a failed worker already settles as a typed
// failure its manager can answer, and adding latency to a run is not
// the runtime's call).
//
// The rule is deliberately narrower than the driver's transient class
// (ClassifyDriverFailure): a worker attempt is re-entered only on two
// independent proofs that it did no work, because re-running an attempt
// that may have reached a provider would spend twice.
//
//  1. Its error is a pre-spawn refusal: a *NotStartedError in its
//     chain, or a message matching the built-in admission-deadline
//     signature ("host-executor: acquire timeout after 60000ms", also
//     scoped-host-executor and container-pool) or one of PreSpawn. The
//     error must not be terminal by ClassifyDriverFailure either (a
//     cancellation, a stop, a lost lease or journal is never retried).
//  2. The attempt yielded no execution event (its Work.Observer saw no
//     turn start, event or turn end) and reported a spend that is known
//     and zero on every channel. An attempt whose spend is unknown may
//     have metered: it settles. Binding an execution id (Work.Bind) is
//     not an event: KernelExecutor and fleet.Executor journal the id
//     before anything exists, and KernelExecutor reports a run its
//     provider refused before admitting anything (a
//     contract.QuotaRefusalError without a Run) as spending nothing.
//
// A retried attempt therefore spent nothing, and the worker's settlement
// charges the last attempt's spend in full, against the same
// reservation: the pool's free+reserved+committed = total holds.
type WorkerRetry struct {
	// MaxAttempts is how many times one worker may be started, its
	// first attempt included; 0 and 1 never retry.
	MaxAttempts int
	// InitialBackoff is the wait before the first re-entry, doubling per
	// attempt up to MaxBackoff (0: the defaults). A MaxBackoff below
	// InitialBackoff is read as InitialBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxTotal bounds the time from a worker's first attempt past which
	// no wait is started (0: DefaultWorkerRetryMaxTotal). The run's
	// deadline bounds it too: a wait that would end past it is not
	// started, and the worker settles failed with its last error.
	MaxTotal time.Duration
	// PreSpawn adds signatures of refusals the caller's own admission
	// layer emits before any provider call. Proof 2 still applies to
	// each, so a wrong pattern cannot re-run an attempt that spent.
	PreSpawn []*regexp.Regexp
}

// WorkerRetryAttempt is one re-entry, passed to Options.OnWorkerRetry
// before its wait starts.
type WorkerRetryAttempt struct {
	// Node is the worker; Profile its profile's name ("" when none).
	Node    NodeID
	Profile string
	// Attempt is the 1-based attempt that was just refused.
	Attempt int
	// Wait is how long the run waits before the next attempt.
	Wait time.Duration
	// Error is the refused attempt's error text.
	Error string
}

// NotStartedError marks an executor's failure as a refusal issued before
// anything ran (no process, no box, no provider request): the one kind
// of failure Options.WorkerRetry re-enters. An executor wraps such a
// failure in it only when that is true.
type NotStartedError struct {
	Err error
}

// Error returns the wrapped error's message.
func (e *NotStartedError) Error() string {
	if e == nil || e.Err == nil {
		return "supervise: the worker was refused before it started"
	}
	return e.Err.Error()
}

// Unwrap returns the wrapped error.
func (e *NotStartedError) Unwrap() error { return e.Err }

// preSpawnSignature is the built-in pre-spawn refusal: an admission
// deadline of the pools a bridge or a container host admits through,
// anchored to the whole phrase with its deadline.
var preSpawnSignature = regexp.MustCompile(`\b(?:host-executor|scoped-host-executor|container-pool): acquire timeout after \d+ms\b`)

// IsPreSpawnRefusal reports whether err says its worker was refused
// before anything ran: a *NotStartedError in its chain, or a message
// matching the built-in signature or one of extra. It is proof 1 of
// WorkerRetry; it does not say whether the attempt spent.
func IsPreSpawnRefusal(err error, extra ...*regexp.Regexp) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[*NotStartedError](err); ok {
		return true
	}
	msg := err.Error()
	if preSpawnSignature.MatchString(msg) {
		return true
	}
	for _, re := range extra {
		if re != nil && re.MatchString(msg) {
			return true
		}
	}
	return false
}

// enabled reports whether r retries at all.
func (r WorkerRetry) enabled() bool { return r.MaxAttempts > 1 }

// backoff is the wait after the 1-based attempt.
func (r WorkerRetry) backoff(attempt int) time.Duration {
	initial, ceiling := r.InitialBackoff, r.MaxBackoff
	if initial == 0 {
		initial = DefaultWorkerRetryInitialBackoff
	}
	if ceiling == 0 {
		ceiling = DefaultWorkerRetryMaxBackoff
	}
	ceiling = max(ceiling, initial)
	d := initial
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// maxTotal is r.MaxTotal, the default when it is 0.
func (r WorkerRetry) maxTotal() time.Duration {
	if r.MaxTotal == 0 {
		return DefaultWorkerRetryMaxTotal
	}
	return r.MaxTotal
}

// checkWorkerRetry validates o.WorkerRetry.
func checkWorkerRetry(o *Options) []error {
	var errs []error
	r := o.WorkerRetry
	for _, f := range []struct {
		field, pointer string
		v              int64
	}{
		{"WorkerRetry.MaxAttempts", "/workerRetry/maxAttempts", int64(r.MaxAttempts)},
		{"WorkerRetry.InitialBackoff", "/workerRetry/initialBackoffMs", int64(r.InitialBackoff)},
		{"WorkerRetry.MaxBackoff", "/workerRetry/maxBackoffMs", int64(r.MaxBackoff)},
		{"WorkerRetry.MaxTotal", "/workerRetry/maxTotalMs", int64(r.MaxTotal)},
	} {
		if f.v < 0 {
			errs = append(errs, &OptionError{Field: f.field, Pointer: f.pointer, Reason: "cannot be negative; 0 means the default"})
		}
	}
	for i, re := range r.PreSpawn {
		if re == nil {
			errs = append(errs, &OptionError{Field: fmt.Sprintf("WorkerRetry.PreSpawn[%d]", i), Pointer: fmt.Sprintf("/workerRetry/additionalPreSpawnSignatures/%d", i),
				Reason: "is nil; each signature must be a compiled regular expression"})
		}
	}
	if o.OnWorkerRetry != nil && !r.enabled() {
		errs = append(errs, &OptionError{Field: "OnWorkerRetry", Pointer: "/onWorkerRetry",
			Reason: "is set but WorkerRetry.MaxAttempts is below 2, so no worker is ever retried"})
	}
	return errs
}

// spentNothing reports whether s is known and zero on every channel,
// each resource reserved included: a reserved resource s does not report
// may have been used (the pool charges it as unknown).
func spentNothing(s ledger.Spend, reserved ledger.Budget) bool {
	zero := func(p *int64) bool { return p != nil && *p == 0 }
	if !zero(s.Tokens) || !zero(s.Iterations) || !zero(s.MicroUSD) {
		return false
	}
	if s.TokensFloor != nil && *s.TokensFloor != 0 {
		return false
	}
	for _, v := range s.Resources {
		if !zero(v) {
			return false
		}
	}
	for name := range reserved.Resources {
		if !zero(s.Resources[name]) {
			return false
		}
	}
	return true
}

// executeRetrying runs w on exec, re-entering it while the run's
// WorkerRetry says its attempt was refused before anything ran. What it
// returns is the last attempt's: a retried attempt spent nothing.
func (c *Coordinator) executeRetrying(ctx context.Context, exec Executor, w Work) (WorkResult, error) {
	r := c.workerRetry
	if !r.enabled() {
		return c.execute(ctx, exec, w)
	}
	if _, ok := exec.(*nestedManager); ok {
		return c.execute(ctx, exec, w) // a nested manager is driven, not retried
	}
	first := time.Now()
	for attempt := 1; ; attempt++ {
		// Proof 2's witness: a turn started or an event streamed on this
		// attempt. Binding an execution id is not one: KernelExecutor and
		// fleet.Executor journal the id before anything exists, so that a
		// cut process leaves it recoverable.
		ran := &attemptObserver{passObserver: passObserver{w.Observer}}
		wa := w
		wa.Observer = ran
		res, err := c.execute(ctx, exec, wa)
		if err == nil || attempt >= r.MaxAttempts || ctx.Err() != nil || ran.ran.Load() || !spentNothing(res.Spent, w.Reserved) ||
			!IsPreSpawnRefusal(err, r.PreSpawn...) {
			return res, err
		}
		if class, _ := ClassifyDriverFailure(err); class == FailureTerminal {
			return res, err
		}
		wait := r.backoff(attempt)
		if time.Since(first)+wait >= r.maxTotal() {
			return res, err
		}
		if dl, ok := ctx.Deadline(); ok && !time.Now().Add(wait).Before(dl) {
			return res, err // the run's deadline comes first: the worker settles failed
		}
		reason := clip(err.Error(), MaxReasonBytes)
		if jerr := c.log.append(context.WithoutCancel(ctx), Record{Kind: KindWorkerRetry, Node: w.Node, Reason: reason, AtMS: c.now().UnixMilli()}); jerr != nil {
			// A retry the journal cannot hold is not started: the worker
			// settles with the attempt's own error.
			c.logger.Error("supervise: journaling a worker retry", "node", w.Node, "err", jerr)
			return res, err
		}
		c.logger.Info("supervise: a worker was refused before it started; starting it again", "node", w.Node, "attempt", attempt, "wait", wait, "err", reason)
		if c.onWorkerRetry != nil {
			var name string
			if w.Profile != nil && w.Profile.Name != nil {
				name = *w.Profile.Name
			}
			c.notifyWorkerRetry(ctx, WorkerRetryAttempt{Node: w.Node, Profile: name, Attempt: attempt, Wait: wait, Error: reason})
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, err
		}
	}
}

// attemptObserver is one worker attempt's kernel.Observer: it passes
// every hook on and records whether the attempt started a turn or
// streamed anything (an execution event, which may have metered).
type attemptObserver struct {
	passObserver
	ran atomic.Bool
}

// TurnStarted implements kernel.Observer.
func (o *attemptObserver) TurnStarted(ctx context.Context, t kernel.TurnStart) (context.Context, error) {
	o.ran.Store(true)
	return o.passObserver.TurnStarted(ctx, t)
}

// Event implements kernel.Observer.
func (o *attemptObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	o.ran.Store(true)
	return o.passObserver.Event(ctx, e)
}

// TurnEnded implements kernel.Observer.
func (o *attemptObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	o.ran.Store(true)
	return o.passObserver.TurnEnded(ctx, t)
}

// notifyWorkerRetry passes a to the run's OnWorkerRetry, bounded by
// ObserverGrace (and ctx): a panic is logged, one that does not return
// in time is no longer waited for. It never decides the retry.
func (c *Coordinator) notifyWorkerRetry(ctx context.Context, a WorkerRetryAttempt) {
	hctx, cancel := context.WithTimeout(ctx, ObserverGrace)
	defer cancel()
	ans, answered := callHook(hctx, func(context.Context) (struct{}, error) {
		c.onWorkerRetry(a)
		return struct{}{}, nil
	})
	switch {
	case !answered:
		c.logger.Warn("supervise: OnWorkerRetry had not returned; no longer waited for", "node", a.Node, "attempt", a.Attempt, "grace", ObserverGrace)
	case ans.panic != nil:
		c.logger.Error("supervise: OnWorkerRetry panicked", "node", a.Node, "attempt", a.Attempt, "panic", fmt.Sprint(ans.panic))
	}
}
