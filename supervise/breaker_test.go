package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// breakerExecutor fails every worker at once, except one whose task is
// "hold": that one runs until its context ends. It counts executions.
type breakerExecutor struct{ runs *atomic.Int64 }

func (e breakerExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.runs.Add(1)
	spent := ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}
	if w.Task == "hold" {
		<-ctx.Done()
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
	return supervise.WorkResult{Spent: spent}, errors.New("worker crashed")
}

// crashLoop is a brain that spawns a held worker, then spawns and awaits
// crashing workers one after another, the clock moving gap between
// them, until a spawn is refused or n crashed. It keeps the refusal, the
// coordinator, and whether its own context had ended when refused.
type crashLoop struct {
	t       *testing.T
	clock   *manualClock
	gaps    []time.Duration
	n       int
	refused map[string]any
	crashed int
	stopped bool
	c       *supervise.Coordinator
}

func (b *crashLoop) Drive(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
	b.c = c
	bg := context.WithoutCancel(ctx)
	if r := tool(b.t, bg, c, supervise.VerbSpawnWorker, spawnArgs("hold")); r["error"] != nil {
		b.t.Fatalf("spawning the held worker: %v", r)
	}
	for i := range b.n {
		r := tool(b.t, bg, c, supervise.VerbSpawnWorker, spawnArgs(fmt.Sprintf("crash %d", i)))
		if r["error"] != nil {
			b.refused, b.stopped = r, ctx.Err() != nil
			return supervise.BrainReport{}, nil
		}
		ev := tool(b.t, bg, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		e, _ := ev["event"].(map[string]any)
		switch {
		case e["state"] == "failed":
		case ev["stopped"] == true && strings.Contains(fmt.Sprint(ev["reason"]), supervise.ErrBreakerTripped.Error()):
			// The crash that trips the breaker stops the manager before
			// its settlement is queued (the manager that sees it finds
			// the scope aborted), so an await under way may answer
			// stopped first, as Await's contract says; the crash
			// happened all the same, and the next spawn is refused.
		default:
			b.t.Fatalf("await_event: %v, want the crash's settlement", ev)
		}
		b.crashed++
		if i < len(b.gaps) {
			b.clock.Advance(b.gaps[i])
		}
	}
	return supervise.BrainReport{}, nil
}

func nodeState(res supervise.SupervisedResult, id supervise.NodeID) (supervise.WorkerSummary, bool) {
	for _, n := range res.Tree {
		if n.ID == id {
			return n, true
		}
	}
	return supervise.WorkerSummary{}, false
}

// §3.6 "OTP breaker: more than maxRestarts within withinMs → no-winner".
// A restart is a worker's down settlement (the breaker never restarts
// anything; it circuits the manager's own re-spawns). With MaxRestarts 2
// over a minute, the third crash within it trips the breaker: the scope
// is aborted (the next spawn is refused scope-aborted), the manager is
// stopped, the live worker is cancelled, the pool conserves, and the run
// ends no-winner all-children-down — the reference's reason for a
// tripped breaker, which outranks the abort it raised — naming the trip.
func TestRestartBreakerTripsIntoNoWinner(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &manualClock{now: start}
	var runs atomic.Int64
	brain := &crashLoop{t: t, clock: clock, gaps: []time.Duration{time.Second, time.Second, time.Second}, n: 5}
	o := baseOptions(t, breakerExecutor{runs: &runs}, nil)
	o.Now, o.Brain = clock.Now, brain
	o.MaxRestarts, o.RestartsWithin = 2, time.Minute
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if brain.crashed != 3 || brain.refused["error"] != string(supervise.CodeScopeAborted) {
		t.Fatalf("crashed %d, then spawn answered %v; want 3 crashes then scope-aborted", brain.crashed, brain.refused)
	}
	if !brain.stopped {
		t.Error("the manager's context was still live after the breaker tripped")
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAllChildrenDown || res.Error != nil {
		t.Errorf("result %s %s (error %+v), want no-winner all-children-down without an error", res.Status, res.Reason, res.Error)
	}
	want := supervise.BreakerTrip{Downs: 3, MaxRestarts: 2, WithinMS: 60_000, AtMS: start.Add(2 * time.Second).UnixMilli(), Node: "run1:s4"}
	if res.Breaker == nil || *res.Breaker != want {
		t.Errorf("breaker %+v, want %+v", res.Breaker, want)
	}
	hold, ok := nodeState(res, "run1:s1") // the held worker, spawned first
	if !ok || hold.State != supervise.StateCancelled || hold.NeverSettled || !strings.Contains(hold.Reason, supervise.ErrBreakerTripped.Error()) {
		t.Errorf("the live worker: %+v, want it cancelled by the breaker and settled", hold)
	}
	if res.DownCount != 4 || runs.Load() != 4 {
		t.Errorf("downCount %d, executions %d; want 4 and 4", res.DownCount, runs.Load())
	}
	r := brain.c.Readout()
	if err := r.Conserved(); err != nil || r.OpenTickets != 0 {
		t.Errorf("pool: %v, %d open tickets", err, r.OpenTickets)
	}
}

// The window slides on the run's clock (Options.Now): downs older than
// RestartsWithin no longer count, and one exactly RestartsWithin old
// still does. With MaxRestarts 1 over a minute, two crashes two minutes
// apart do not trip it; a third 60s after the second does.
func TestRestartBreakerCountsOnlyDownsWithinTheWindow(t *testing.T) {
	clock := &manualClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var runs atomic.Int64
	brain := &crashLoop{t: t, clock: clock, gaps: []time.Duration{2 * time.Minute, time.Minute}, n: 5}
	o := baseOptions(t, breakerExecutor{runs: &runs}, nil)
	o.Now, o.Brain = clock.Now, brain
	o.MaxRestarts, o.RestartsWithin = 1, time.Minute
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if brain.crashed != 3 || brain.refused["error"] != string(supervise.CodeScopeAborted) {
		t.Fatalf("crashed %d, then spawn answered %v; want 3 crashes then scope-aborted", brain.crashed, brain.refused)
	}
	if res.Breaker == nil || res.Breaker.Downs != 2 || res.Breaker.Node != "run1:s4" {
		t.Errorf("breaker %+v, want tripped by run1:s4 with 2 downs in the window", res.Breaker)
	}
}

// Without RestartsWithin the breaker is off (the reference's breaker is
// inert unless both bounds are set): crashes only count as downs.
// MaxRestarts without RestartsWithin, or either negative, is refused.
func TestRestartBreakerOffWithoutWindow(t *testing.T) {
	clock := &manualClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var runs atomic.Int64
	brain := &crashLoop{t: t, clock: clock, n: 4}
	o := baseOptions(t, breakerExecutor{runs: &runs}, nil)
	o.Now, o.Brain = clock.Now, brain
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if brain.crashed != 4 || brain.refused != nil || res.Breaker != nil {
		t.Errorf("crashed %d, refused %v, breaker %+v; want 4 crashes, no refusal, no trip", brain.crashed, brain.refused, res.Breaker)
	}
	for _, bad := range []struct{ max int }{{max: 2}, {max: -1}} {
		o := baseOptions(t, breakerExecutor{runs: &runs}, nil)
		o.Brain, o.MaxRestarts = brain, bad.max
		if bad.max < 0 {
			o.RestartsWithin = time.Minute
		}
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); !errors.Is(err, supervise.ErrInvalidOptions) {
			t.Errorf("MaxRestarts %d: %v, want ErrInvalidOptions", bad.max, err)
		}
	}
}

// Only a down while the manager drives is a restart: the workers the
// run's end cancels (here the manager returned with one live, under a
// breaker that trips on the first down) do not trip it.
func TestRestartBreakerIgnoresDownsTheRunsEndCauses(t *testing.T) {
	var runs atomic.Int64
	o := baseOptions(t, breakerExecutor{runs: &runs}, nil)
	o.MaxRestarts, o.RestartsWithin = 0, time.Hour
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if r := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("hold")); r["error"] != nil {
			t.Fatalf("spawn: %v", r)
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	hold, _ := nodeState(res, "run1:s1")
	if res.Breaker != nil || hold.State != supervise.StateCancelled || res.Reason != supervise.ReasonAllChildrenDown {
		t.Errorf("breaker %+v, worker %s, reason %s; want no trip, the worker cancelled by the run's end", res.Breaker, hold.State, res.Reason)
	}
}

// cutAfter is a spawn journal whose process "dies" right after a record
// of kind is durable: nothing lands after it, the run's end included.
type cutAfter struct {
	supervise.SpawnLog
	kind string
	dead *atomic.Bool
}

func (c cutAfter) Append(ctx context.Context, recs ...supervise.Record) error {
	if c.dead.Load() {
		return errCrashed
	}
	if err := c.SpawnLog.Append(ctx, recs...); err != nil {
		return err
	}
	for _, r := range recs {
		if r.Kind == c.kind {
			c.dead.Store(true)
		}
	}
	return nil
}

// A tripped breaker is journaled (KindBreakerTripped) before anything
// else of it is visible, so a run resumed after it — its process killed
// before its end was journaled, or resumed after that end without
// ReturnEnded — stays tripped: no manager driven, no worker run, the
// same no-winner and trip, in a file journal and in a SQLite one.
func TestTrippedRunResumesTrippedWithoutRunning(t *testing.T) {
	for _, medium := range []string{"file", "sqlite"} {
		for _, cut := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/cut=%v", medium, cut), func(t *testing.T) {
				dir := t.TempDir()
				var st store.Store
				if medium == "sqlite" {
					s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.Close() })
					st = s
				}
				options := func(exec supervise.Executor, brain supervise.Brain, clock *manualClock) supervise.Options {
					o := baseOptions(t, exec, nil)
					o.RunDir, o.Brain, o.Now = dir, brain, clock.Now
					o.MaxRestarts, o.RestartsWithin = 1, time.Minute
					if st != nil {
						o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
					}
					return o
				}
				mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
				clock := &manualClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
				var runs atomic.Int64
				first := &crashLoop{t: t, clock: clock, gaps: []time.Duration{time.Second, time.Second}, n: 5}
				ctx := context.Background()
				var dead atomic.Bool
				if cut {
					ctx = supervise.WithSpawnLogWrapper(ctx, func(sl supervise.SpawnLog) supervise.SpawnLog {
						return cutAfter{SpawnLog: sl, kind: supervise.KindBreakerTripped, dead: &dead}
					})
				}
				was, err := supervise.Supervise(ctx, mgr, "t", options(breakerExecutor{runs: &runs}, first, clock))
				if cut != (err != nil) || cut != dead.Load() {
					t.Fatalf("first run: err %v, cut %v", err, dead.Load())
				}
				if was.Breaker == nil || first.refused["error"] != string(supervise.CodeScopeAborted) {
					t.Fatalf("first run: breaker %+v, refusal %v; want tripped", was.Breaker, first.refused)
				}

				clock.Advance(time.Hour) // far past the window: the trip is not forgotten
				runs.Store(0)
				driven := false
				o := options(breakerExecutor{runs: &runs}, supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
					driven = true
					return supervise.BrainReport{}, nil
				}), clock)
				o.Resume, o.Budget = true, ledger.Budget{}
				res, err := supervise.Supervise(context.Background(), mgr, "", o)
				if err != nil {
					t.Fatal(err)
				}
				if driven || runs.Load() != 0 {
					t.Errorf("the resumed run drove its manager (%v) or ran %d workers", driven, runs.Load())
				}
				if !res.Resumed || res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAllChildrenDown {
					t.Errorf("resumed: %s %s (resumed %v), want no-winner all-children-down", res.Status, res.Reason, res.Resumed)
				}
				if res.Breaker == nil || *res.Breaker != *was.Breaker {
					t.Errorf("resumed breaker %+v, want %+v", res.Breaker, was.Breaker)
				}
				if cut {
					return
				}
				// Its finished record holds the trip too: a resume that
				// returns the ended run's result returns it.
				o.ReturnEnded = true
				ended, err := supervise.Supervise(context.Background(), mgr, "", o)
				if err != nil {
					t.Fatal(err)
				}
				if driven || runs.Load() != 0 || ended.Reason != supervise.ReasonAllChildrenDown || ended.Breaker == nil || *ended.Breaker != *was.Breaker {
					t.Errorf("returned ended: %s %s breaker %+v (driven %v, ran %d), want %+v", ended.Status, ended.Reason, ended.Breaker, driven, runs.Load(), was.Breaker)
				}
			})
		}
	}
}

// §3.6 rootHandle, and the no-winner arm aborted: a caller's
// RootHandle.Abort — distinct from a cancellation, which ends a run
// no-winner cancelled — aborts the scope (the next spawn is refused
// scope-aborted), stops the manager, cancels the live worker, keeps the
// pool conserved and ends the run no-winner aborted. The handle reaches
// only a live run and serves one run at a time; the abort is journaled,
// so the run resumed stays aborted without driving its manager.
func TestRootHandleAbortEndsTheRunAborted(t *testing.T) {
	h := supervise.NewRootHandle()
	if err := h.Abort("too early"); !errors.Is(err, supervise.ErrRootNotLive) {
		t.Fatalf("abort before the run: %v, want ErrRootNotLive", err)
	}
	dir := t.TempDir()
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	var runs atomic.Int64
	var refused map[string]any
	var stopped bool
	var c0 *supervise.Coordinator
	var inUse error
	o := baseOptions(t, breakerExecutor{runs: &runs}, nil)
	o.RunDir, o.Root = dir, h
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		c0 = c
		bg := context.WithoutCancel(ctx)
		if r := tool(t, bg, c, supervise.VerbSpawnWorker, spawnArgs("hold")); r["error"] != nil {
			t.Fatalf("spawning the held worker: %v", r)
		}
		other := baseOptions(t, breakerExecutor{runs: &runs}, nil)
		other.RunID, other.Root, other.Brain = "run2", h, c0brain{}
		_, inUse = supervise.Supervise(bg, mgr, "t", other)
		if err := h.Abort("the operator pulled the plug"); err != nil {
			t.Fatalf("abort: %v", err)
		}
		stopped = ctx.Err() != nil
		refused = tool(t, bg, c, supervise.VerbSpawnWorker, spawnArgs("crash"))
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), mgr, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inUse, supervise.ErrRootInUse) {
		t.Errorf("a second run on the bound handle: %v, want ErrRootInUse", inUse)
	}
	if !stopped || refused["error"] != string(supervise.CodeScopeAborted) {
		t.Errorf("after the abort: manager stopped %v, spawn answered %v; want stopped and scope-aborted", stopped, refused)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAborted || res.Error != nil || res.Cancellation != nil || res.Breaker != nil {
		t.Errorf("result %s %s (error %+v, cancellation %+v, breaker %+v), want no-winner aborted and nothing else",
			res.Status, res.Reason, res.Error, res.Cancellation, res.Breaker)
	}
	hold, ok := nodeState(res, "run1:s1")
	if !ok || hold.State != supervise.StateCancelled || !strings.Contains(hold.Reason, "the operator pulled the plug") {
		t.Errorf("the live worker: %+v, want it cancelled by the abort", hold)
	}
	r := c0.Readout()
	if err := r.Conserved(); err != nil || r.OpenTickets != 0 || runs.Load() != 1 {
		t.Errorf("pool: %v, %d open tickets; %d executions, want 1", err, r.OpenTickets, runs.Load())
	}
	if err := h.Abort("too late"); !errors.Is(err, supervise.ErrRootNotLive) {
		t.Errorf("abort after the run: %v, want ErrRootNotLive", err)
	}

	driven := false
	o = baseOptions(t, breakerExecutor{runs: &runs}, nil)
	o.RunDir, o.Resume, o.Budget, o.Root = dir, true, ledger.Budget{}, h
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		driven = true
		return supervise.BrainReport{}, nil
	})
	again, err := supervise.Supervise(context.Background(), mgr, "", o)
	if err != nil {
		t.Fatal(err)
	}
	if driven || runs.Load() != 1 || again.Reason != supervise.ReasonAborted || !again.Resumed {
		t.Errorf("resumed: driven %v, executions %d, %s %s; want aborted again, nothing driven or run", driven, runs.Load(), again.Status, again.Reason)
	}
}

// c0brain is a brain that does nothing.
type c0brain struct{}

func (c0brain) Drive(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
	return supervise.BrainReport{}, nil
}
