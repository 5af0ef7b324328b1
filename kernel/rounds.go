package kernel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/taskqueue"
)

// Decision is what a driver decides after a round. The four terminal
// decisions end the rounds; any other value is the caller's own
// vocabulary and continues them (so a refine loop that returns "fail"
// after round 0 ends before it refines — decide with care).
type Decision string

// The terminal decisions.
const (
	DecisionDone       Decision = "done"
	DecisionStop       Decision = "stop"
	DecisionPickWinner Decision = "pick-winner"
	DecisionFail       Decision = "fail"
)

// IsTerminal reports whether d ends the rounds.
func (d Decision) IsTerminal() bool {
	switch d {
	case DecisionDone, DecisionStop, DecisionPickWinner, DecisionFail:
		return true
	}
	return false
}

// Driver authors the rounds: each round it plans the next tasks, the
// kernel runs them, then it decides. Plan and Decide are required.
type Driver[T, O any] struct {
	// Name labels the driver in the run record.
	Name string
	// Plan returns the next round's tasks given the iterations so far:
	// one task refines, several fan out, none ends the rounds.
	Plan func(ctx context.Context, task T, history []Iteration[T, O]) ([]T, error)
	// Decide judges the iterations so far after each round.
	Decide func(ctx context.Context, history []Iteration[T, O]) (Decision, error)
	// DescribePlan, when set, names the move the last Plan made.
	DescribePlan func() PlanMove
	// SelectWinner, when set, picks the winner's iteration index; ok
	// false leaves the choice to the default rule.
	SelectWinner func(history []Iteration[T, O]) (index int, ok bool)
}

// PlanMove describes one plan: its kind ("stop", "refine", "fanout" or
// the caller's word), why, and the iteration it builds on.
type PlanMove struct {
	Kind        string `json:"kind"`
	Rationale   string `json:"rationale,omitzero"`
	ParentIndex *int   `json:"parentIndex,omitzero"`
}

// Agent is one agent the rounds run tasks on.
type Agent[T any] struct {
	// Name labels the agent; the profile's name when empty, else "agent".
	Name string
	// Profile is what runs, exactly.
	Profile *profile.Profile
	// Prompt turns a task into the turn's prompt. Nil sends a string
	// task as it is and any other task as its canonical JSON.
	Prompt func(task T) string
	// Stage is the seat stage to run.
	Stage int
}

// IterationInfo tells a validator which iteration it judges. The
// environment is still alive, so the validator can read what the worker
// wrote.
type IterationInfo struct {
	Index       int
	RunID       string
	Environment contract.Environment
}

// RoundsOptions configures Rounds.
type RoundsOptions[T, O any] struct {
	// Task is the caller's task, handed to Plan.
	Task T
	// Driver plans and decides.
	Driver Driver[T, O]
	// Agents run the tasks, round-robin by the global iteration index.
	Agents []Agent[T]
	// Parse turns a settled run into the iteration's output. It should be
	// pure: the same outcome gives the same output.
	Parse func(out Outcome) (O, error)
	// Validate, when set, judges each output; an iteration is delivered
	// only when its verdict passed. Without it nothing is delivered.
	Validate func(ctx context.Context, output O, it IterationInfo) (Verdict, error)
	// Provider runs every iteration; Store records the rounds and each
	// iteration as its own run.
	Provider contract.Provider
	Store    store.Store
	// Budget, when set, is the pool every iteration reserves Reserve from
	// before it is dispatched.
	Budget  *ledger.Pool
	Reserve ledger.Budget
	// MaxIterations caps iterations over all rounds (default 10);
	// MaxConcurrency caps iterations in flight (default 4).
	MaxIterations, MaxConcurrency int
	// RunID names the rounds run; iteration runs are RunID.<index>.
	RunID string
	// SelectWinner, when set, overrides the driver's and the default
	// winner selection.
	SelectWinner func(history []Iteration[T, O]) (index int, ok bool)
	// LeaseTTL, CleanupTimeout, Now and Logger are as in Request; each
	// iteration's run has the same.
	LeaseTTL       time.Duration
	CleanupTimeout time.Duration
	Now            func() time.Time
	Logger         *slog.Logger
	// Observe, when set, returns the Observer of the iteration run named
	// runID (nil: none), as Request.Observer; a panic in it is logged and
	// the iteration runs unobserved.
	Observe func(runID string) Observer
}

// Iteration is one task run on one agent.
type Iteration[T, O any] struct {
	Index, Round int
	// ParentIndex is the iteration this round built on (nil in round 0).
	ParentIndex *int
	Task        T
	Agent       string
	// RunID is the iteration's own run record.
	RunID  string
	Status store.Status
	// Output is valid when HasOutput: the run completed and Parse
	// succeeded.
	Output    O
	HasOutput bool
	Verdict   *Verdict
	Delivered bool
	// Err is why the iteration failed (the run did not complete, parsing
	// or validation failed); the driver sees it in the history.
	Err       error
	Text      string
	Usage     ledger.Usage
	StartedAt time.Time
	EndedAt   time.Time
}

// SelectionReceipt records how one candidate fared in winner selection.
type SelectionReceipt struct {
	CandidateIndex int      `json:"candidateIndex"`
	Selected       bool     `json:"selected"`
	Score          *float64 `json:"score,omitzero"`
	// Selector is "caller", "driver" or "default".
	Selector string `json:"selector"`
	// Reason explains the default selector's choice.
	Reason string `json:"reason,omitzero"`
}

// RoundsResult is how the rounds ended.
type RoundsResult[T, O any] struct {
	RunID string
	// Decision is the driver's last decision; it may be non-terminal when
	// the rounds ended because the plan was empty or the cap was reached.
	Decision   Decision
	Iterations []Iteration[T, O]
	// Winner is the selected iteration, nil when no iteration produced an
	// output.
	Winner   *Iteration[T, O]
	Receipts []SelectionReceipt
	// Usage sums the iterations' usage; a channel any iteration left
	// unknown is a floor.
	Usage    ledger.Usage
	Duration time.Duration
}

// Rounds runs caller-authored plan/decide rounds (seed 003's
// runAgentRounds): each round the driver plans tasks, the kernel runs each
// as an exact run (Execute) with at most MaxConcurrency in flight, parses
// and validates the outputs, and the driver decides. The rounds and every
// iteration are recorded in the store.
//
// An iteration that fails is part of the history, not an error. Rounds
// returns an error — with the result so far — when ctx ends, when the
// driver fails, or when an iteration cannot even be recorded; the batch
// then stops admitting, waits for the iterations already started, and
// the first error wins.
func Rounds[T, O any](ctx context.Context, opts RoundsOptions[T, O]) (*RoundsResult[T, O], error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r, err := newRounds(ctx, opts, cancel)
	if err != nil {
		return nil, err
	}
	defer r.life.release()
	defer r.afterPanic(ctx)
	err = r.loop(ctx)
	return r.finish(ctx, err)
}

// afterPanic, deferred, ends the record of rounds whose driver (or a
// callback) panicked as failed, rather than leaving it running under a
// renewed lease; the panic then goes on.
func (r *rounds[T, O]) afterPanic(ctx context.Context) {
	p := recover()
	if p == nil {
		return
	}
	if !r.finishing {
		r.finish(ctx, fmt.Errorf("kernel: the rounds panicked: %v", p))
	}
	panic(p)
}

type rounds[T, O any] struct {
	opts RoundsOptions[T, O]
	// provider is opts.Provider.Name(), read once before the run is
	// recorded (see execution.provider).
	provider  string
	names     []string
	now       func() time.Time
	log       *slog.Logger
	started   time.Time
	res       RoundsResult[T, O]
	events    int
	life      *life
	finishing bool
}

func newRounds[T, O any](ctx context.Context, o RoundsOptions[T, O], cancel context.CancelCauseFunc) (*rounds[T, O], error) {
	var errs optionErrors
	if o.Driver.Plan == nil {
		errs.add("Driver.Plan", "the driver needs Plan")
	}
	if o.Driver.Decide == nil {
		errs.add("Driver.Decide", "the driver needs Decide")
	}
	if len(o.Agents) == 0 {
		errs.add("Agents", "at least one agent is needed")
	}
	for i, a := range o.Agents {
		if a.Profile == nil {
			errs.add(fmt.Sprintf("Agents[%d].Profile", i), "agent %d has no profile", i)
		}
		if a.Stage < 0 {
			errs.add(fmt.Sprintf("Agents[%d].Stage", i), "%d is negative", a.Stage)
		}
	}
	if o.Parse == nil {
		errs.add("Parse", "Parse is required")
	}
	if o.Provider == nil {
		errs.add("Provider", "a provider is required")
	}
	if o.MaxIterations < 0 {
		errs.add("MaxIterations", "%d is negative", o.MaxIterations)
	}
	if o.MaxConcurrency < 0 {
		errs.add("MaxConcurrency", "%d is negative", o.MaxConcurrency)
	}
	lo := lifeOptions{Store: o.Store, RunID: cmp.Or(o.RunID, NewID("rounds")), Kind: KindRounds, LeaseTTL: o.LeaseTTL,
		CleanupTimeout: o.CleanupTimeout, Logger: o.Logger}
	lo.check(&errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	o.MaxIterations = cmp.Or(o.MaxIterations, 10)
	o.MaxConcurrency = cmp.Or(o.MaxConcurrency, 4)
	o.RunID, o.LeaseTTL, o.CleanupTimeout = lo.RunID, lo.LeaseTTL, lo.CleanupTimeout
	r := &rounds[T, O]{opts: o, provider: o.Provider.Name(), now: o.Now, log: lo.Logger}
	if r.now == nil {
		r.now = time.Now
	}
	for _, a := range o.Agents {
		name := a.Name
		if name == "" && a.Profile.Name != nil {
			name = *a.Profile.Name
		}
		r.names = append(r.names, cmp.Or(name, "agent"))
	}
	r.started = r.now()
	r.res = RoundsResult[T, O]{RunID: o.RunID}
	doc, err := r.doc(store.StatusRunning, nil)
	if err != nil {
		return nil, err
	}
	if r.life, err = startLife(ctx, lo, doc, cancel); err != nil {
		return nil, err
	}
	return r, nil
}

// loop runs rounds until the driver decides, the plan is empty or the
// iteration cap is reached.
func (r *rounds[T, O]) loop(ctx context.Context) error {
	for round := 0; ; round++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		history := slices.Clone(r.res.Iterations)
		planned, err := r.opts.Driver.Plan(ctx, r.opts.Task, history)
		if err != nil {
			return fmt.Errorf("kernel: the driver's plan failed: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return err // planning may be a long model call
		}
		room := r.opts.MaxIterations - len(r.res.Iterations)
		if len(planned) > room {
			planned = planned[:room]
		}
		move := r.move(round, len(planned))
		if err := r.record(ctx, "loop.plan", planEvent{Round: round, Tasks: len(planned), Move: move}); err != nil {
			return err
		}
		if len(planned) == 0 {
			break
		}
		if err := r.batch(ctx, round, move.ParentIndex, planned); err != nil {
			return err
		}
		decision, err := r.decide(ctx, round)
		if err != nil {
			return err
		}
		if decision.IsTerminal() {
			return nil
		}
		if len(r.res.Iterations) >= r.opts.MaxIterations {
			break
		}
	}
	_, err := r.decide(ctx, -1)
	return err
}

func (r *rounds[T, O]) decide(ctx context.Context, round int) (Decision, error) {
	d, err := r.opts.Driver.Decide(ctx, slices.Clone(r.res.Iterations))
	if err != nil {
		return "", fmt.Errorf("kernel: the driver's decision failed: %w", err)
	}
	r.res.Decision = d
	ev := decisionEvent{Decision: string(d), Terminal: d.IsTerminal()}
	if round >= 0 {
		ev.Round = &round
	}
	return d, r.record(ctx, "loop.decision", ev)
}

// move names the plan's move and the iteration it builds on: declared by
// the driver, or inferred — round 0 builds on nothing; later rounds on the
// best-scoring valid iteration (ties to the latest), else the latest.
func (r *rounds[T, O]) move(round, tasks int) PlanMove {
	var m PlanMove
	if r.opts.Driver.DescribePlan != nil {
		m = r.opts.Driver.DescribePlan()
	}
	if m.Kind == "" {
		switch tasks {
		case 0:
			m.Kind = "stop"
		case 1:
			m.Kind = "refine"
		default:
			m.Kind = "fanout"
		}
	}
	if m.ParentIndex == nil && round > 0 && len(r.res.Iterations) > 0 {
		p := branchPoint(r.res.Iterations)
		m.ParentIndex = &p
	}
	return m
}

func branchPoint[T, O any](its []Iteration[T, O]) int {
	best, bestScore := -1, 0.0
	for _, it := range its {
		if it.Verdict == nil || !it.Verdict.Passed || it.Verdict.Score == nil {
			continue
		}
		if s := *it.Verdict.Score; best < 0 || s >= bestScore {
			best, bestScore = it.Index, s
		}
	}
	if best < 0 {
		return its[len(its)-1].Index
	}
	return best
}

// batch runs one round's tasks through the task queue and appends the
// settled iterations to the history in index order.
func (r *rounds[T, O]) batch(ctx context.Context, round int, parent *int, tasks []T) error {
	base := len(r.res.Iterations)
	next := 0
	var first error
	take := func(ctx context.Context, active []string) (taskqueue.Task[Iteration[T, O]], bool, error) {
		if next == len(tasks) || first != nil || ctx.Err() != nil {
			return taskqueue.Task[Iteration[T, O]]{}, false, nil
		}
		index := base + next
		it := Iteration[T, O]{Index: index, Round: round, ParentIndex: parent, Task: tasks[next],
			Agent: r.names[index%len(r.names)], RunID: r.opts.RunID + "." + strconv.Itoa(index), StartedAt: r.now()}
		next++
		// Durable before it starts: the admission is recorded first.
		if err := r.record(ctx, "loop.iteration.started", startedEvent{Index: index, Round: round, Agent: it.Agent,
			RunID: it.RunID, ParentIndex: parent, TaskDigest: digestOf(it.Task)}); err != nil {
			return taskqueue.Task[Iteration[T, O]]{}, false, err
		}
		return taskqueue.Task[Iteration[T, O]]{ID: strconv.Itoa(index), Run: func(ctx context.Context) (Iteration[T, O], error) {
			return r.iterate(ctx, it)
		}}, true, nil
	}
	var settled []Iteration[T, O]
	for s, err := range taskqueue.Run(ctx, take, taskqueue.Options{MaxActive: r.opts.MaxConcurrency}) {
		if err != nil {
			first = cmp.Or(first, err)
			break
		}
		it := s.Value
		if s.Err != nil {
			first = cmp.Or(first, s.Err)
			if it.RunID == "" {
				continue // a panic: nothing to record
			}
		}
		settled = append(settled, it)
		if err := r.record(ctx, "loop.iteration.ended", endedEvent(it)); err != nil {
			first = cmp.Or(first, err)
		}
	}
	slices.SortFunc(settled, func(a, b Iteration[T, O]) int { return a.Index - b.Index })
	r.res.Iterations = append(r.res.Iterations, settled...)
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// iterate runs one iteration as an exact run. A run that fails is the
// iteration's failure; a cancelled context or a run that cannot be
// recorded is the batch's error.
func (r *rounds[T, O]) iterate(ctx context.Context, it Iteration[T, O]) (Iteration[T, O], error) {
	agent := r.opts.Agents[it.Index%len(r.opts.Agents)]
	prompt, err := promptFor(agent, it.Task)
	if err != nil {
		it.Err, it.EndedAt = err, r.now()
		return it, nil
	}
	var (
		parsed   bool
		parseErr error
	)
	check := func(ctx context.Context, out Outcome) (Verdict, error) {
		o, err := r.opts.Parse(out)
		if err != nil {
			parseErr = fmt.Errorf("parsing the output: %w", err)
			return Verdict{}, parseErr
		}
		it.Output, it.HasOutput, parsed = o, true, true
		if r.opts.Validate == nil {
			return Verdict{}, errNoValidator
		}
		return r.opts.Validate(ctx, o, IterationInfo{Index: it.Index, RunID: it.RunID, Environment: out.Environment})
	}
	res, err := Execute(ctx, Request{Profile: agent.Profile, Task: prompt, Provider: r.opts.Provider, Store: r.opts.Store,
		Check: check, Stage: agent.Stage, RunID: it.RunID, Kind: "iteration", Budget: r.opts.Budget, Reserve: r.opts.Reserve,
		LeaseTTL: r.opts.LeaseTTL, CleanupTimeout: r.opts.CleanupTimeout, Now: r.opts.Now, Logger: r.opts.Logger,
		Observer: r.observer(it.RunID)})
	it.EndedAt = r.now()
	var runErr *RunError
	if res == nil || (err != nil && !errors.As(err, &runErr)) {
		it.Err = err
		if ctx.Err() != nil {
			it.Status = contextStatus(ctx)
			return it, context.Cause(ctx)
		}
		return it, fmt.Errorf("kernel: iteration %d: %w", it.Index, err)
	}
	it.Status, it.Text, it.Usage, it.Delivered, it.Verdict = res.Status, res.Text, res.Usage, res.Delivered, res.Verdict
	switch {
	case runErr != nil:
		it.Err = runErr
		if ctx.Err() != nil {
			return it, context.Cause(ctx)
		}
	case parseErr != nil:
		it.Err = parseErr
	case !parsed:
		it.Err = errors.New(res.CheckError) // Parse panicked
	case res.CheckError != "" && res.CheckError != errNoValidator.Error():
		it.Err = fmt.Errorf("validating the output: %s", res.CheckError)
	}
	if !parsed {
		var zero O
		it.Output, it.HasOutput = zero, false
	}
	return it, nil
}

var errNoValidator = errors.New("no validator was given")

// observer is the Observer Observe gives the iteration run runID.
func (r *rounds[T, O]) observer(runID string) (o Observer) {
	if r.opts.Observe == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Warn("the rounds' Observe panicked; the iteration runs unobserved", "run", runID, "panic", p)
			o = nil
		}
	}()
	return r.opts.Observe(runID)
}

// contextStatus is the terminal status of work whose context ended.
func contextStatus(ctx context.Context) store.Status {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return store.StatusTimedOut
	}
	return store.StatusCancelled
}

func promptFor[T any](a Agent[T], task T) (string, error) {
	if a.Prompt != nil {
		return a.Prompt(task), nil
	}
	if s, ok := any(task).(string); ok {
		return s, nil
	}
	v, err := canonjson.ToValue(task)
	if err != nil {
		return "", fmt.Errorf("the task has no JSON form for a prompt (give the agent a Prompt func): %w", err)
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		return "", fmt.Errorf("the task has no canonical JSON form for a prompt: %w", err)
	}
	return string(b), nil
}

// digestOf is the canonical digest of a value, or "" when it has none.
func digestOf(x any) string {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return ""
	}
	d, err := canonjson.Digest(v)
	if err != nil {
		return ""
	}
	return d
}

// finish selects the winner, sums usage and records how the rounds
// ended. Rounds that did not complete return a *RunError.
func (r *rounds[T, O]) finish(ctx context.Context, loopErr error) (*RoundsResult[T, O], error) {
	r.finishing = true
	res := &r.res
	res.Duration = r.now().Sub(r.started)
	res.Usage = sumUsage(res.Iterations)
	selErr := r.selectWinner()
	status, reason := store.StatusCompleted, ""
	if res.Decision == DecisionFail {
		status, reason = store.StatusFailed, ReasonDriver
	}
	err := errors.Join(loopErr, selErr)
	var runErr *RunError
	switch {
	case r.life.leaseLost() != nil:
		lost := r.life.leaseLost()
		runErr = &RunError{RunID: res.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
	case err == nil:
	case ctx.Err() != nil:
		runErr = contextError(ctx, res.RunID)
	default:
		status, reason = store.StatusFailed, ReasonDriver
	}
	if runErr != nil {
		status, reason = runErr.Status, runErr.Reason
		err = errors.Join(err, runErr.Cause)
	}
	if status == store.StatusInterrupted {
		// The store refuses this process: it records only the
		// interruption, where the store still lets it.
		r.life.end(status, func(lost *LeaseLostError) canonjson.Value {
			d, _ := r.doc(store.StatusInterrupted, runErr)
			return d
		})
		return res, runErr
	}
	ended := loopEnded{Decision: string(res.Decision), Iterations: len(res.Iterations), Usage: UsageValue(res.Usage),
		DurationMS: res.Duration.Milliseconds(), Status: string(status)}
	if res.Winner != nil {
		ended.Winner = &res.Winner.Index
	}
	if err != nil {
		ended.Error = err.Error()
	}
	if recErr := r.record(ctx, "loop.ended", ended); recErr != nil {
		err = errors.Join(err, recErr)
	}
	doc, docErr := r.doc(status, err)
	if docErr == nil {
		_, docErr = r.life.end(status, func(lost *LeaseLostError) canonjson.Value {
			if lost == nil {
				return doc
			}
			lostDoc, _ := r.doc(store.StatusInterrupted, lost)
			return lostDoc
		})
	}
	if lost, ok := errors.AsType[*LeaseLostError](docErr); ok {
		return res, &RunError{RunID: res.RunID, Status: store.StatusInterrupted, Reason: ReasonLeaseLost, Detail: lost.Error(), Cause: lost}
	}
	if re, ok := errors.AsType[*RunError](docErr); ok {
		// The end is unrecorded: the rounds read interrupted once their
		// lease lapses, whatever they reached.
		return res, re
	}
	if docErr != nil {
		err = errors.Join(err, docErr)
	}
	if status == store.StatusCompleted {
		if err != nil {
			return res, fmt.Errorf("kernel: rounds %s: %w", res.RunID, err)
		}
		return res, nil
	}
	if runErr == nil {
		runErr = &RunError{RunID: res.RunID, Status: status, Reason: reason}
		if err != nil {
			runErr.Detail, runErr.Cause = err.Error(), err
		} else {
			runErr.Detail = "the driver decided the work failed"
		}
	} else if docErr != nil {
		runErr.Cause = errors.Join(runErr.Cause, docErr)
	}
	return res, runErr
}

// selectWinner applies the caller's selector, then the driver's, then
// the default rule: among iterations with output and no error, the valid
// ones if any, by score (unscored last) then index.
func (r *rounds[T, O]) selectWinner() error {
	res := &r.res
	var candidates []int
	for i, it := range res.Iterations {
		if it.HasOutput && it.Err == nil {
			candidates = append(candidates, i)
		}
	}
	pick := func(selector string, f func([]Iteration[T, O]) (int, bool)) (bool, error) {
		if f == nil {
			return false, nil
		}
		index, ok := f(slices.Clone(res.Iterations))
		if !ok {
			return false, nil
		}
		pos := slices.IndexFunc(res.Iterations, func(it Iteration[T, O]) bool { return it.Index == index })
		if pos < 0 {
			return false, fmt.Errorf("kernel: the %s selected iteration %d, which does not exist", selector, index)
		}
		res.Winner = &res.Iterations[pos]
		for _, c := range candidates {
			it := res.Iterations[c]
			res.Receipts = append(res.Receipts, SelectionReceipt{CandidateIndex: it.Index, Selected: it.Index == index,
				Score: scoreOf(it), Selector: selector})
		}
		return true, nil
	}
	for _, s := range []struct {
		name string
		f    func([]Iteration[T, O]) (int, bool)
	}{{"caller", r.opts.SelectWinner}, {"driver", r.opts.Driver.SelectWinner}} {
		if done, err := pick(s.name, s.f); done || err != nil {
			return err
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	valid := slices.DeleteFunc(slices.Clone(candidates), func(c int) bool { return !res.Iterations[c].Delivered })
	pool, why := valid, "best valid"
	if len(valid) == 0 {
		pool, why = candidates, "best non-errored"
	}
	slices.SortStableFunc(pool, func(a, b int) int {
		sa, sb := scoreOf(res.Iterations[a]), scoreOf(res.Iterations[b])
		switch {
		case sa != nil && sb != nil && *sa != *sb:
			return cmp.Compare(*sb, *sa)
		case sa != nil && sb == nil:
			return -1
		case sa == nil && sb != nil:
			return 1
		}
		return cmp.Compare(a, b)
	})
	res.Winner = &res.Iterations[pool[0]]
	for _, c := range candidates {
		it := res.Iterations[c]
		rc := SelectionReceipt{CandidateIndex: it.Index, Selected: c == pool[0], Score: scoreOf(it), Selector: "default"}
		switch {
		case rc.Selected:
			rc.Reason = why
		case it.Delivered:
			rc.Reason = "valid but not top"
		default:
			rc.Reason = "not selected"
		}
		res.Receipts = append(res.Receipts, rc)
	}
	return nil
}

func scoreOf[T, O any](it Iteration[T, O]) *float64 {
	if it.Verdict == nil {
		return nil
	}
	return it.Verdict.Score
}

// sumUsage adds the iterations' usage; no iterations spent exactly
// nothing.
func sumUsage[T, O any](its []Iteration[T, O]) ledger.Usage {
	if len(its) == 0 {
		return ledger.NoUsage()
	}
	u := its[0].Usage
	for _, it := range its[1:] {
		u = u.Plus(it.Usage)
	}
	return u
}
