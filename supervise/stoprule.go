package supervise

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// The no-progress bound (§3.6 stopRule, onProgressStop: "a run settles
// only on: deadline, cancel, exhausted budget, accepted result, or the
// no-progress bound"). Every other bound is a ceiling; a StopRule reads
// the run's progress — its root manager's settled workers, the curve of
// the best delivered objective, its live workers — and ends a run that
// stopped getting anywhere before it runs out. A rule only adds a stop:
// it is consulted while nothing else ended the manager (no Stop, no
// abort, no cancellation, no deadline, no tripped breaker), so it never
// keeps a run going past a ceiling. The thresholds are the caller's;
// NoProgressFor, Plateau and AllWorkersStalled carry no default for the
// numbers that decide.

// ErrProgressStopped matches the cause the run's StopRule stops the
// manager and cancels its live workers with; it matches ErrStopped too
// (the manager was stopped, not failed).
var ErrProgressStopped = fmt.Errorf("%w by its stop rule (no progress)", ErrStopped)

// ErrInvalidStopRule: a stop rule's thresholds cannot decide anything
// (NoProgressFor with neither bound, a negative window, …). It matches
// ErrInvalidOptions.
var ErrInvalidStopRule = fmt.Errorf("%w: invalid stop rule", ErrInvalidOptions)

// ProgressSample is one settlement of a worker the root manager spawned,
// as a StopRule reads it. Objective is the worker's delivered objective:
// its verdict's score, 1 for a delivered result the check did not score
// (the winner's ranking, so progress and the winner agree), nil for a
// result that was not delivered (a scored but undelivered result is not
// progress). At is when it settled on the run's clock; zero when unknown
// (a settlement an earlier process journaled without its time).
type ProgressSample struct {
	Node      NodeID
	At        time.Time
	Objective *float64
	Delivered bool
}

// LiveWorker is one live worker of the root manager as a StopRule sees
// it: its id and its progress (Stalled, IdleMS; see WorkerProgress).
type LiveWorker struct {
	Node     NodeID
	Progress WorkerProgress
}

// ProgressView is what a StopRule decides from: the run's progress, never
// its budget. Unknown is never zero: Best is nil while nothing delivered,
// LastSettleAt and LastImprovementAt are zero while none happened (or its
// time is unknown).
type ProgressView struct {
	// Now is the run's clock (Options.Now) at the evaluation.
	Now time.Time
	// Samples are the root manager's workers' settlements, in the
	// journal's order; Settles counts them and Delivered those that
	// delivered.
	Samples   []ProgressSample
	Settles   int
	Delivered int
	// Curve is the best objective so far after each settlement (nil
	// entries before the first delivery); Best is its last value.
	Curve []*float64
	Best  *float64
	// LastSettleAt is when the latest settlement landed;
	// LastImprovementAt when the best objective last rose.
	LastSettleAt      time.Time
	LastImprovementAt time.Time
	// SettlesSinceImprovement counts the settlements after the last one
	// that raised the best objective (all of them when none did).
	SettlesSinceImprovement int
	// Workers are the root manager's running workers; InFlight counts
	// its live workers, Waiting those waiting on a decision (a worker
	// waiting on the world is not stalled).
	Workers  []LiveWorker
	InFlight int
	Waiting  int
}

// StopDecision is a StopRule's answer: Stop with the Reason the run ends
// for (a rule that stops with no reason is given "stop rule").
type StopDecision struct {
	Stop   bool
	Reason string
}

// DefaultStopRuleTimeout bounds each call of Options.StopRule and
// Options.OnProgressStop. A rule that panics or has not answered by
// then fails the run (no-winner driver-failed, *StopRuleError), unless
// the manager ended otherwise meanwhile (the deadline, a cancellation, a
// stop): a rule still running then is waited for no longer, and that end
// decides. An OnProgressStop that has not returned by then is not
// waited for.
const DefaultStopRuleTimeout = 5 * time.Second

// StopRule decides from the run's progress whether the run has stopped
// getting anywhere. It is called with no lock held, after each
// settlement of a worker the root manager spawned and, for the router
// brain, before each of its model turns after the first; it must be
// quick and must not block (each call is bounded by
// DefaultStopRuleTimeout). The first decision to stop ends the run.
type StopRule func(ProgressView) StopDecision

// StopRuleError is a StopRule that failed while the manager drove: it
// panicked (Panic holds what it panicked with) or did not answer within
// Timeout. The run ends no-winner driver-failed with it, as the
// reference's run does when its synchronous rule throws on the driver's
// path: a broken bound is a failure, never a silent run without one.
type StopRuleError struct {
	Panic   any
	Timeout time.Duration
}

func (e *StopRuleError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("supervise: the stop rule panicked: %v", e.Panic)
	}
	return fmt.Sprintf("supervise: the stop rule did not answer within %s", e.Timeout)
}

// ProgressStop is how the run's StopRule ended it: the rule's Reason,
// and when (AtMS, Unix milliseconds on the run's clock).
type ProgressStop struct {
	Reason string `json:"reason"`
	AtMS   int64  `json:"atMs"`
}

// NoProgressFor is the "nothing new has happened" bound: it stops once
// Settles settlements in a row did not raise the best delivered
// objective, or once Within passed since the last settlement while no
// worker is waiting on a decision. Either may be left zero, not both;
// no decision is made before MinSettles settlements (0 means 1).
type NoProgressFor struct {
	Settles    int
	Within     time.Duration
	MinSettles int
}

// Rule checks n and returns its StopRule; an error matches
// ErrInvalidStopRule.
func (n NoProgressFor) Rule() (StopRule, error) {
	switch {
	case n.Settles == 0 && n.Within == 0:
		return nil, fmt.Errorf("%w: NoProgressFor needs Settles or Within", ErrInvalidStopRule)
	case n.Settles < 0 || n.Within < 0 || n.MinSettles < 0:
		return nil, fmt.Errorf("%w: NoProgressFor's thresholds cannot be negative", ErrInvalidStopRule)
	}
	minSettles := max(n.MinSettles, 1)
	return func(v ProgressView) StopDecision {
		if v.Settles < minSettles {
			return StopDecision{}
		}
		if n.Settles > 0 && v.SettlesSinceImprovement >= n.Settles {
			return StopDecision{Stop: true, Reason: fmt.Sprintf("no-progress: %d settlements with no improvement (limit %d), best %s",
				v.SettlesSinceImprovement, n.Settles, objectiveText(v.Best))}
		}
		if n.Within > 0 && v.Waiting == 0 && !v.LastSettleAt.IsZero() {
			if idle := v.Now.Sub(v.LastSettleAt); idle >= n.Within {
				return StopDecision{Stop: true, Reason: fmt.Sprintf("no-progress: %dms since the last settlement (limit %dms)",
					idle.Milliseconds(), n.Within.Milliseconds())}
			}
		}
		return StopDecision{}
	}, nil
}

// Plateau is the "the objective stopped climbing" bound: it stops once
// the best delivered objective rose by no more than MinDelta over the
// last Window settlements. No decision is made before MinSettles
// settlements (0 means Window).
type Plateau struct {
	Window     int
	MinDelta   float64
	MinSettles int
}

// Rule checks p and returns its StopRule; an error matches
// ErrInvalidStopRule.
func (p Plateau) Rule() (StopRule, error) {
	switch {
	case p.Window < 1:
		return nil, fmt.Errorf("%w: Plateau's Window must be at least 1", ErrInvalidStopRule)
	case math.IsNaN(p.MinDelta) || math.IsInf(p.MinDelta, 0) || p.MinDelta < 0:
		return nil, fmt.Errorf("%w: Plateau's MinDelta must be a finite number, at least 0", ErrInvalidStopRule)
	case p.MinSettles < 0:
		return nil, fmt.Errorf("%w: Plateau's MinSettles cannot be negative", ErrInvalidStopRule)
	}
	minSettles := p.MinSettles
	if minSettles == 0 {
		minSettles = p.Window
	}
	return func(v ProgressView) StopDecision {
		if v.Settles < minSettles || len(v.Curve) < p.Window {
			return StopDecision{}
		}
		// The rise is measured from the best before the window: nothing
		// when the window holds the run's first settlement, so a first
		// delivery is a rise.
		end := v.Curve[len(v.Curve)-1]
		var from *float64
		if len(v.Curve) > p.Window {
			from = v.Curve[len(v.Curve)-p.Window-1]
		}
		rose := end != nil && (from == nil || *end-*from > p.MinDelta)
		if rose {
			return StopDecision{}
		}
		return StopDecision{Stop: true, Reason: fmt.Sprintf("plateau: the best objective rose by at most %g over the last %d settlements, best %s",
			p.MinDelta, p.Window, objectiveText(v.Best))}
	}, nil
}

// AllWorkersStalled is the "everyone is stuck" bound: it stops once the
// root manager has at least MinWorkers running workers (0 means 1), every
// one of them stalled (idle StallAfter or more), and none waiting on a
// decision.
type AllWorkersStalled struct {
	MinWorkers int
}

// Rule checks a and returns its StopRule; an error matches
// ErrInvalidStopRule.
func (a AllWorkersStalled) Rule() (StopRule, error) {
	if a.MinWorkers < 0 {
		return nil, fmt.Errorf("%w: AllWorkersStalled's MinWorkers cannot be negative", ErrInvalidStopRule)
	}
	minWorkers := max(a.MinWorkers, 1)
	return func(v ProgressView) StopDecision {
		if v.Waiting > 0 || len(v.Workers) < minWorkers {
			return StopDecision{}
		}
		var worst int64
		for _, w := range v.Workers {
			if !w.Progress.Stalled {
				return StopDecision{}
			}
			if w.Progress.IdleMS != nil {
				worst = max(worst, *w.Progress.IdleMS)
			}
		}
		return StopDecision{Stop: true, Reason: fmt.Sprintf("all-stalled: %d running workers idle, the longest %dms", len(v.Workers), worst)}
	}, nil
}

// AnyOf stops when any of rules stops, with the first one's reason.
func AnyOf(rules ...StopRule) StopRule {
	return func(v ProgressView) StopDecision {
		for _, r := range rules {
			if d := r(v); d.Stop {
				return d
			}
		}
		return StopDecision{}
	}
}

// AllOf stops only when every one of rules stops (none: never), with
// their reasons joined by " AND ".
func AllOf(rules ...StopRule) StopRule {
	return func(v ProgressView) StopDecision {
		if len(rules) == 0 {
			return StopDecision{}
		}
		reason := ""
		for i, r := range rules {
			d := r(v)
			if !d.Stop {
				return StopDecision{}
			}
			if i > 0 {
				reason += " AND "
			}
			reason += d.Reason
		}
		return StopDecision{Stop: true, Reason: reason}
	}
}

func objectiveText(o *float64) string {
	if o == nil {
		return "none"
	}
	return fmt.Sprintf("%g", *o)
}

// progressRule is the run's no-progress bound (Options.StopRule), shared
// by the root's views (core.progress).
type progressRule struct {
	rule   StopRule
	notify func(reason string)
	// timeout bounds each call of rule and notify
	// (DefaultStopRuleTimeout).
	timeout time.Duration
	// evalMu serializes evaluations, so that the first decision to stop
	// (or the rule's failure) is the one the run ends for.
	evalMu sync.Mutex
	// mu guards samples (appended in the journal's order), stopped
	// (set once the rule ended the run, here or in an earlier
	// process's journal) and failed (set once the rule failed: it is
	// read no more, and the run ends driver-failed with it).
	mu      sync.Mutex
	samples []ProgressSample
	stopped *ProgressStop
	failed  *StopRuleError
	// downAtFailure is how many nodes were down when the rule failed:
	// the workers its failure cancels do not outrank it.
	downAtFailure int
}

// sample is the settlement of worker w (settled in state at at) as a
// ProgressSample.
func sample(id NodeID, at time.Time, state State, delivered bool, verdictScore *float64) ProgressSample {
	s := ProgressSample{Node: id, At: at, Delivered: state == StateDone && delivered}
	if s.Delivered {
		o := 1.0
		if verdictScore != nil {
			o = *verdictScore
		}
		s.Objective = &o
	}
	return s
}

// noteSettled records the settlement of node id, a worker of the root
// manager; spawnMu is held, so samples are in the journal's order.
func (p *progressRule) noteSettled(s ProgressSample) {
	if p == nil || p.rule == nil {
		return
	}
	p.mu.Lock()
	p.samples = append(p.samples, s)
	p.mu.Unlock()
}

// stop returns how the rule ended the run, nil when it did not.
func (p *progressRule) stop() *ProgressStop {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped == nil {
		return nil
	}
	s := *p.stopped
	return &s
}

// failure returns how the rule failed, nil when it did not, and how
// many nodes were down then.
func (p *progressRule) failure() (*StopRuleError, int) {
	if p == nil {
		return nil, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed, p.downAtFailure
}

// view builds the ProgressView of the run's root manager at now.
func (c *Coordinator) progressView(now time.Time) ProgressView {
	p := c.progress
	p.mu.Lock()
	samples := slices.Clone(p.samples)
	p.mu.Unlock()
	v := ProgressView{Now: now, Samples: samples, Settles: len(samples), Curve: make([]*float64, len(samples))}
	var best *float64
	improvedAt := -1
	for i, s := range samples {
		if s.Delivered {
			v.Delivered++
		}
		if s.Objective != nil && (best == nil || *s.Objective > *best) {
			o := *s.Objective
			best, improvedAt = &o, i
			v.LastImprovementAt = s.At
		}
		v.Curve[i] = best
	}
	v.Best = best
	if len(samples) > 0 {
		v.LastSettleAt = samples[len(samples)-1].At
	}
	v.SettlesSinceImprovement = len(samples) - 1 - improvedAt
	root := c.root
	for _, n := range c.scope.Nodes() {
		if n.Parent != root.self || !live(n) {
			continue
		}
		v.InFlight++
		if n.State == StateWaiting {
			v.Waiting++
			continue
		}
		if n.State != StateRunning {
			continue
		}
		if wp := c.progressOf(n); wp != nil {
			v.Workers = append(v.Workers, LiveWorker{Node: n.ID, Progress: *wp})
		}
	}
	return v
}

// checkProgress evaluates the run's StopRule, while its root manager
// drives and nothing else ended it; when the rule stops the run, the
// stop is journaled (KindProgressStopped) before anything acts on it,
// OnProgressStop is told, the scope is aborted (every later spawn is
// refused scope-aborted), the manager is stopped and every live worker
// cancelled (ErrProgressStopped).
func (c *Coordinator) checkProgress(ctx context.Context) {
	p := c.progress
	if p == nil || p.rule == nil {
		return
	}
	p.evalMu.Lock()
	defer p.evalMu.Unlock()
	if f, _ := p.failure(); f != nil || !c.rootDriving() || p.stop() != nil {
		return
	}
	now := c.now()
	view := c.progressView(now)
	// The rule is the caller's code: one that panics or does not answer
	// within its bound is a failure of the run's driving (a blocked one
	// may still be running; it is not called again).
	// Nor is it waited for once the root manager ended (its deadline, a
	// cancellation, a stop): that end came first, and the run ends at it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
	c.mu.Lock()
	scope := c.root.brainCtx
	c.mu.Unlock()
	if scope != nil {
		stop := context.AfterFunc(scope, cancel)
		defer stop()
	}
	a, answered := callHook(rctx, func(context.Context) (StopDecision, error) { return p.rule(view), nil })
	cancel()
	var failed *StopRuleError
	switch {
	case !answered && !c.rootDriving():
		return
	case !answered:
		failed = &StopRuleError{Timeout: p.timeout}
	case a.panic != nil:
		failed = &StopRuleError{Panic: a.panic}
	}
	if failed != nil {
		c.failStopRule(failed)
		return
	}
	d := a.v
	if !d.Stop {
		return
	}
	reason := d.Reason
	if reason == "" {
		reason = "stop rule"
	}
	reason = clip(reason, MaxReasonBytes)
	c.spawnMu.Lock() // admission and the stop in one order
	if !c.rootDriving() {
		// Something else ended the manager while the rule ran: the first
		// end decides.
		c.spawnMu.Unlock()
		return
	}
	stop := &ProgressStop{Reason: reason, AtMS: now.UnixMilli()}
	p.mu.Lock()
	p.stopped = stop
	p.mu.Unlock()
	c.scope.Abort()
	c.spawnMu.Unlock()
	if err := c.log.appendOrLose(context.WithoutCancel(ctx), Record{Kind: KindProgressStopped, Reason: reason, AtMS: stop.AtMS}); err != nil {
		c.logger.Error("supervise: journaling the stop rule's end", "err", err)
	}
	c.logger.Info("supervise: the stop rule ended the run", "reason", reason)
	if p.notify != nil {
		// Told once; not waited for past its bound, so the stop it is
		// told of always ends the run.
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.timeout)
		a, answered := callHook(nctx, func(context.Context) (struct{}, error) { p.notify(reason); return struct{}{}, nil })
		cancel()
		switch {
		case !answered:
			c.logger.Error("supervise: OnProgressStop did not return; the run ends without waiting for it", "timeout", p.timeout)
		case a.panic != nil:
			c.logger.Error("supervise: OnProgressStop panicked", "panic", a.panic)
		}
	}
	c.abortRun(fmt.Errorf("%w: %s", ErrProgressStopped, reason))
}

// failStopRule ends the run for its failed StopRule, when nothing else
// ended it first: the failure is kept (finish makes it the run's
// driver-failed error, and no finalizer picks a winner), the scope is
// aborted and the manager and its live workers are stopped with it. It
// is not journaled: a resumed run reads its rule again.
func (c *Coordinator) failStopRule(failed *StopRuleError) {
	p := c.progress
	c.spawnMu.Lock() // admission and the failure in one order
	down := c.downCount()
	// The check and the failure under one hold of mu, where Submit takes
	// a result: one of the two ends comes first.
	c.mu.Lock()
	if !c.rootDrivingLocked() {
		c.mu.Unlock()
		c.spawnMu.Unlock()
		return
	}
	p.mu.Lock()
	p.failed, p.downAtFailure = failed, down
	p.mu.Unlock()
	c.mu.Unlock()
	c.scope.Abort()
	c.spawnMu.Unlock()
	c.logger.Error("supervise: the stop rule failed; the run ends driver-failed", "err", failed)
	c.abortRun(failed)
}

// rootDriving reports whether the run's root manager drives and nothing
// ended it yet: its brain has not returned (ChildSettleGrace is not
// driving), no stop, accepted result (one being journaled counts:
// the driver loop closes result-accepted, and the rule is read no more),
// cancellation, deadline, abort or trip.
func (c *Coordinator) rootDriving() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rootDrivingLocked()
}

// rootDrivingLocked is rootDriving with c.mu held.
func (c *Coordinator) rootDrivingLocked() bool {
	root := c.root
	if root.brainCtx == nil || root.brainCtx.Err() != nil || root.stopped || root.returned || root.submitted != nil || root.submitting {
		return false
	}
	return c.tripped == nil && c.abortWhy == "" && !c.deadlineFirst && !c.cancelJournaled
}

// progressStopped reports whether the run's StopRule ended it, here or
// in an earlier process's journal.
func (c *Coordinator) progressStopped() bool { return c.progress.stop() != nil }

// isRootChild reports whether id is a worker the run's root manager
// spawned (the workers the no-progress bound reads).
func (c *Coordinator) isRootChild(id NodeID) bool {
	n, ok := c.scope.Node(id)
	return ok && n.Parent == c.scope.Root()
}

// stopRuleTimeoutKey, set on Supervise's context by tests only, holds
// the bound of each StopRule and OnProgressStop call.
type stopRuleTimeoutKey struct{}

// stopRuleTimeout is the bound of each StopRule and OnProgressStop call
// of the run Supervise starts on ctx.
func stopRuleTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(stopRuleTimeoutKey{}).(time.Duration); ok && d > 0 {
		return d
	}
	return DefaultStopRuleTimeout
}
