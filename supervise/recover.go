package supervise

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// Journal record kinds of in-doubt recovery (§3.6 "in-flight keyed work
// is in-doubt until recovered").
const (
	// KindExecutionBound names the execution a worker's executor is
	// about to start (Record.Node the worker, Record.Execution its
	// identity, such as a kernel run id). It is journaled before the
	// execution starts (Work.Bind), so a resumed run whose journal holds
	// no settlement for the worker knows which exact execution to
	// recover.
	KindExecutionBound = "execution-bound"
	// KindRecoveryFailed says a resumed run could not recover a worker
	// left in doubt (Record.Node, Record.Execution, Record.Reason why):
	// the worker stays in doubt, charged at its ceiling, its key refused
	// in-doubt. Replay passes it over; the next resume tries again.
	KindRecoveryFailed = "recovery-failed"
)

// errNoExecution is the in-doubt reason of a worker whose journal names
// no execution to recover.
const errNoExecution = "no execution was journaled for it (its executor names none through Work.Bind, or the process stopped before it did): its outcome cannot be recovered; spawn the work again under a new key"

// MaxExecutionID bounds an execution identity Work.Bind journals, in
// bytes.
const MaxExecutionID = 512

// DefaultRecoverTimeout bounds a resumed run's recovery pass, every
// Recoverer.Recover call of it together, when Options.RecoverTimeout is
// 0: a store that stops answering delays the run by at most this, and
// the workers it left unasked stay in doubt.
const DefaultRecoverTimeout = 30 * time.Second

// ErrInvalidExecution matches Work.Bind's refusal of an execution
// identity that is empty, longer than MaxExecutionID or holds control
// characters.
var ErrInvalidExecution = errors.New("supervise: invalid execution identity")

// RecoverWork is a worker a resumed run found in doubt, as a Recoverer
// receives it: the journaled identity of the exact execution it
// started (Execution, as it passed it to Work.Bind) and what it was
// asked.
type RecoverWork struct {
	RunID     string
	Node      NodeID
	Execution string
	Task      string
	Reserved  ledger.Budget
}

// Recovered is how a recovered execution ended: State is StateDone,
// StateFailed or StateCancelled; Reason says why when it is not done;
// Result is what it produced and spent, charged as a worker's is (a nil
// quantity is unknown and charged at the ceiling).
type Recovered struct {
	State  State
	Reason string
	Result WorkResult
}

// Recoverer is implemented by an executor that can reattach the exact
// execution a worker's journal names (the executor port's recover?,
// §3.6). Supervise calls it on a resumed run for every worker whose
// spawn has an execution-bound record and no settlement, before the
// brain drives. Recover must never start replacement work: it reports
// how that execution ended, or returns an error when its outcome is
// still unknown (it is running, it was interrupted, it cannot be found
// or read), and the worker then stays in doubt with that error as its
// reason. A recovered worker is settled as if it had just ended: its
// reservation is replaced by what it really spent, its result checked
// and journaled.
type Recoverer interface {
	Recover(ctx context.Context, w RecoverWork) (Recovered, error)
}

// checkExecutionID is Work.Bind's validation of an execution identity.
func checkExecutionID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidExecution)
	case len(id) > MaxExecutionID:
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidExecution, len(id), MaxExecutionID)
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: control characters", ErrInvalidExecution)
	}
	return nil
}

// ranFor is how long a worker started at started ran until now; 0 for
// a worker this process did not start (a recovered one), whose start
// it does not know.
func ranFor(now, started time.Time) time.Duration {
	if started.IsZero() {
		return 0
	}
	return now.Sub(started)
}

// bind is node id's Work.Bind: the execution is journaled before the
// executor starts it; an identity the journal did not take is an error
// and the executor starts nothing.
func (c *Coordinator) bind(id NodeID) func(ctx context.Context, execution string) error {
	return func(ctx context.Context, execution string) error {
		if err := checkExecutionID(execution); err != nil {
			return err
		}
		if err := c.log.append(ctx, Record{Kind: KindExecutionBound, Node: id, Execution: execution}); err != nil {
			return fmt.Errorf("supervise: journaling worker %s's execution: %w", id, err)
		}
		c.mu.Lock()
		if w := c.workers[id]; w != nil {
			w.execution = execution
		}
		c.mu.Unlock()
		return nil
	}
}

// recoverable is a replayed worker left without a settlement whose
// execution the journal names: it stays live (its reservation held)
// until recoverInDoubt recovers it or marks it in doubt.
type recoverable struct {
	node      NodeID
	execution string
	// cancelAsked: the journal holds a cancel request for the worker
	// (or a subtree holding it, or the whole run).
	cancelAsked bool
}

// errCancelledByHolder is why a recovered execution that ended cancelled
// with no cancel request in the journal stays in doubt.
const errCancelledByHolder = "its execution ended cancelled, but nobody asked this run to cancel the worker: it was cut off with the process that held the run (stopped, or lost its lease), so the work's outcome is unknown; spawn the work again under a new key"

// recoverInDoubt settles, or marks in doubt, each worker a resumed
// run's journal left started without a terminal receipt but bound to an
// execution (c.recovering, in journal order). With try and an executor
// that is a Recoverer, each execution's outcome is asked for, all within
// Options.RecoverTimeout: one that ended is settled with its real spend
// and result (checked, journaled, queued for Await), as no replacement
// work runs; one that cannot be recovered is journaled KindRecoveryFailed
// and marked in doubt, charged at its ceiling. Without try (a run
// resumed to its journaled end) all are marked in doubt, and nothing is
// journaled.
func (c *Coordinator) recoverInDoubt(ctx context.Context, try bool) {
	c.mu.Lock()
	pending := c.recovering
	c.recovering = nil
	c.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	rec, canRecover := c.exec.(Recoverer)
	bound := c.recoverTimeout
	if bound <= 0 {
		bound = DefaultRecoverTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for _, p := range pending {
		info, ok := c.scope.Node(p.node)
		if !ok || !live(info) {
			continue
		}
		var reason string
		switch {
		case !try:
		case !canRecover:
			reason = "the executor cannot recover an execution (it is not a supervise.Recoverer): spawn the work again under a new key"
		default:
			got, err := c.recoverOne(ctx, rec, info, p.execution)
			switch {
			case err == nil && got.State == StateCancelled && !p.cancelAsked:
				// Cancelled by its holder's end, not by a decision of
				// this run: not the worker's outcome.
				reason = errCancelledByHolder
			case err == nil:
				c.settleRecovered(ctx, p.node, got)
				continue
			default:
				reason = err.Error()
			}
		}
		c.markInDoubt(ctx, p, reason, try)
	}
	c.pruneReplay()
}

// recoverOne asks rec for the outcome of node info's execution.
func (c *Coordinator) recoverOne(ctx context.Context, rec Recoverer, info NodeInfo, execution string) (got Recovered, err error) {
	defer func() {
		if p := recover(); p != nil {
			got, err = Recovered{}, fmt.Errorf("supervise: Recover panicked: %v", p)
		}
	}()
	c.mu.Lock()
	task := ""
	if w := c.workers[info.ID]; w != nil {
		task = w.task
	}
	c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return Recovered{}, fmt.Errorf("supervise: the recovery pass ran out of time before this worker: %w", context.Cause(ctx))
	}
	got, err = rec.Recover(ctx, RecoverWork{RunID: c.runID, Node: info.ID, Execution: execution, Task: task, Reserved: info.Reserved})
	if err != nil {
		return Recovered{}, err
	}
	if got.State != StateDone && got.State != StateFailed && got.State != StateCancelled {
		return Recovered{}, fmt.Errorf("supervise: Recover reported state %q, not done, failed or cancelled", got.State)
	}
	return got, nil
}

// settleRecovered settles node with the outcome of its recovered
// execution, as a worker that just ended is settled.
func (c *Coordinator) settleRecovered(ctx context.Context, node NodeID, got Recovered) {
	c.mu.Lock()
	w := c.workers[node]
	if w == nil {
		w = &worker{id: node}
		c.workers[node] = w
	}
	w.replayed, w.recovered = false, true
	box := c.viewOfLocked(parentOrRoot(node, c.root.self))
	box.inflight++
	c.mu.Unlock()
	if c.afterSettle == nil {
		c.settleAs(ctx, w, got.Result, got.State, got.Reason, false)
		return
	}
	c.mu.Lock()
	box.inflight++
	c.mu.Unlock()
	defer box.releaseInflight()
	c.settleAs(ctx, w, got.Result, got.State, got.Reason, false)
	c.afterSettled(ctx, w)
	c.hookDone(ctx, node)
}

// markInDoubt marks a worker that was not recovered in doubt, saying why
// (journaled when journal is set).
func (c *Coordinator) markInDoubt(ctx context.Context, p recoverable, reason string, journal bool) {
	if journal {
		if err := c.log.append(context.WithoutCancel(ctx), Record{Kind: KindRecoveryFailed, Node: p.node, Execution: p.execution, Reason: reason}); err != nil {
			c.logger.Error("supervise: journaling a failed recovery", "node", p.node, "err", err)
		}
		c.logger.Warn("supervise: a worker left in doubt could not be recovered", "node", p.node, "execution", p.execution, "reason", reason)
	}
	if err := c.scope.MarkInDoubt(p.node); err != nil {
		c.logger.Error("supervise: marking a worker in doubt", "node", p.node, "err", err)
	}
	c.mu.Lock()
	if w := c.workers[p.node]; w != nil && reason != "" {
		w.reason = reason
	}
	c.mu.Unlock()
}

// Recover reports how the kernel runs of a worker's execution ended,
// read from Store: the exact runs Execute started under the journaled
// run id (its task's turn, then one run "<id>.<n>" per steered turn,
// read until one is missing). It starts nothing. A turn that completed
// is the worker's result so far; one that failed, timed out or was
// cancelled ends it so; a turn still pending or running, or
// interrupted, leaves its outcome unknown (an error), and so does a
// first run the store does not hold. Usage is summed over the turns
// read, unknown channels unknown. A turn interrupted because its
// holder's lease lapsed with no end recorded (the process running it
// was killed) is closed as this run's judge (kernel.CloseAbandoned): its
// record ends interrupted, reason abandoned, naming this run and node,
// so that it no longer reads as unfinished work of nobody; one still
// leased is left to its holder.
func (e *KernelExecutor) Recover(ctx context.Context, w RecoverWork) (Recovered, error) {
	if e == nil || e.Store == nil {
		return Recovered{}, errors.New("supervise: KernelExecutor needs a Store to recover")
	}
	maxSteer := e.MaxSteerTurns
	if maxSteer == 0 {
		maxSteer = DefaultMaxSteerTurns
	}
	var (
		usage ledger.Usage
		out   Recovered
	)
	for turn := 0; turn <= max(maxSteer, 0); turn++ {
		id := w.Execution
		if turn > 0 {
			id = fmt.Sprintf("%s.%d", w.Execution, turn)
		}
		run, err := e.Store.GetRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) && turn > 0 {
			break // the worker took no more turns
		}
		if errors.Is(err, store.ErrNotFound) {
			return Recovered{}, fmt.Errorf("supervise: kernel run %s is not in this run store: either the process stopped after journaling the worker's start and before its run began (spawn the work again under a new key), or the run used another store (resume with that one): %w", id, err)
		}
		if err != nil {
			return Recovered{}, fmt.Errorf("supervise: reading kernel run %s: %w", id, err)
		}
		switch {
		case run.Status == store.StatusInterrupted:
			why := fmt.Errorf("supervise: kernel run %s was interrupted: the process running it stopped before it ended, so its outcome stays unknown; spawn the work again under a new key", id)
			return Recovered{}, e.closeAbandoned(ctx, w, run, why)
		case !run.Status.Terminal():
			return Recovered{}, fmt.Errorf("supervise: kernel run %s is %s (its holder's lease lasts until %s): another process may still be running it, so its outcome stays unknown to this run; a resume of the run begun after that lease, before the run finished, can recover it", id, run.Status, run.LeaseUntil.UTC().Format(time.RFC3339))
		case turn == 0 && run.Kind == kernel.KindSeated:
			// A seated worker (KernelExecutor.Accounts) takes no steered
			// turns: its one execution is its seat chain.
			rr, err := kernel.ReadRun(ctx, e.Store, id)
			if err != nil {
				return Recovered{}, fmt.Errorf("supervise: reading seated run %s: %w", id, err)
			}
			return e.recoverSeated(ctx, rr)
		}
		rec, err := kernel.DecodeRecord(run.Doc)
		if err != nil {
			return Recovered{}, fmt.Errorf("supervise: kernel run %s: %w", id, err)
		}
		if rec.Terminal == nil {
			return Recovered{}, fmt.Errorf("supervise: kernel run %s is %s but its record holds no end", id, run.Status)
		}
		if r := rec.Terminal.Reason; run.Status == store.StatusFailed && (r == kernel.ReasonStoreFailed || r == kernel.ReasonLeaseLost) {
			// Its holder, not its work, ended it: the process running it
			// lost its store or its lease (paused, or cut off) mid-turn.
			// What the work would have come to is unknown.
			return Recovered{}, fmt.Errorf("supervise: kernel run %s failed with its holder (%s: %s), not by its work, so the work's outcome is unknown; spawn the work again under a new key", id, r, rec.Terminal.Detail)
		}
		var turnUsage ledger.Usage // unknown unless the record holds it
		if rec.Usage != nil {
			turnUsage = rec.Usage.Usage
		}
		if turn == 0 {
			usage = turnUsage
		} else {
			usage = usage.Plus(turnUsage)
		}
		u := usage
		res := WorkResult{Output: rec.Output, Spent: SpendOf(usage), ServedModel: string(rec.ServedModel), Usage: &u}
		if rec.Text != nil {
			res.Text = *rec.Text
		}
		out = Recovered{State: StateDone, Result: res}
		switch run.Status {
		case store.StatusCompleted:
			continue
		case store.StatusCancelled:
			out.State = StateCancelled
		default:
			out.State = StateFailed
		}
		out.Reason = fmt.Sprintf("kernel run %s %s", id, run.Status)
		if why := strings.TrimSpace(rec.Terminal.Reason + " " + rec.Terminal.Detail); why != "" {
			out.Reason += ": " + why
		}
		return out, nil
	}
	return out, nil
}

// closeAbandoned records the end of worker w's kernel run run, found
// interrupted with no end (its holder stopped), as w's judge: the worker
// stays in doubt (why, returned with what became of the run's record).
func (e *KernelExecutor) closeAbandoned(ctx context.Context, w RecoverWork, run store.Run, why error) error {
	lapsed := run.LeaseUntil.UTC().Format(time.RFC3339)
	detail := fmt.Sprintf("the process running it stopped before it ended (its lease lapsed at %s); supervise run %s, resumed, settled node %s in doubt: its outcome is unknown, its spend only what it recorded, and it was not delivered", lapsed, w.RunID, w.Node)
	_, err := kernel.CloseAbandoned(ctx, e.Store, run.ID, Work{RunID: w.RunID, Node: w.Node}.JudgedBy(), detail)
	switch {
	case err == nil:
		return fmt.Errorf("%w (its record now says so: ended %s)", why, kernel.ReasonAbandoned)
	case errors.Is(err, kernel.ErrNotAbandoned):
		// Its end is recorded already, or another judges it: left as is.
		return why
	}
	if e.Logger != nil {
		e.Logger.Warn("supervise: recording an abandoned worker run's end", "run", run.ID, "node", w.Node, "err", err)
	}
	return fmt.Errorf("%w (its record could not be closed: %w)", why, err)
}
