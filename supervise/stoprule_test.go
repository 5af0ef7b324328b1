package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
	"github.com/google/go-cmp/cmp"
)

func f64(v float64) *float64 { return &v }

// progressExecutor: "hold" runs until its context ends; a task saying
// DONE settles done with that text (delivered by doneCheck); any other
// settles done undelivered. It counts executions.
type progressExecutor struct{ runs *atomic.Int64 }

func (e progressExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.runs.Add(1)
	spent := ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}
	if w.Task == "hold" {
		<-ctx.Done()
		return supervise.WorkResult{Spent: spent}, context.Cause(ctx)
	}
	return supervise.WorkResult{Text: w.Task, Spent: spent}, nil
}

// §3.6 stopRule: the rules read only the run's progress, and each
// decides on its own thresholds; unknown objectives are nil.
func TestStopRulesDecideOnProgress(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	view := func(now time.Time, objectives ...*float64) supervise.ProgressView {
		v := supervise.ProgressView{Now: now}
		var best *float64
		since := 0
		for i, o := range objectives {
			s := supervise.ProgressSample{Node: supervise.NodeID("r:s" + string(rune('1'+i))), At: at.Add(time.Duration(i) * time.Second), Objective: o, Delivered: o != nil}
			v.Samples = append(v.Samples, s)
			since++
			if o != nil && (best == nil || *o > *best) {
				best, since = o, 0
				v.LastImprovementAt = s.At
			}
			if o != nil {
				v.Delivered++
			}
			v.Curve = append(v.Curve, best)
			v.LastSettleAt = s.At
		}
		v.Settles, v.Best, v.SettlesSinceImprovement = len(objectives), best, since
		return v
	}
	must := func(r supervise.StopRule, err error) supervise.StopRule {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	noImprove2 := must(supervise.NoProgressFor{Settles: 2}.Rule())
	idle := must(supervise.NoProgressFor{Within: time.Minute}.Rule())
	plateau := must(supervise.Plateau{Window: 2, MinDelta: 0.1}.Rule())
	plateau1 := must(supervise.Plateau{Window: 1}.Rule())
	stalled := must(supervise.AllWorkersStalled{MinWorkers: 2}.Rule())
	idleMS := int64(180_000)
	stalledWorker := supervise.LiveWorker{Node: "r:s9", Progress: supervise.WorkerProgress{Stalled: true, IdleMS: &idleMS}}
	tests := []struct {
		name   string
		rule   supervise.StopRule
		view   supervise.ProgressView
		stop   bool
		reason string
	}{
		{"no settlement yet", noImprove2, view(at), false, ""},
		{"one without improvement", noImprove2, view(at, f64(0.5), nil), false, ""},
		{"two without improvement", noImprove2, view(at, f64(0.5), nil, f64(0.4)), true, "no-progress: 2 settlements with no improvement (limit 2), best 0.5"},
		{"nothing ever delivered", noImprove2, view(at, nil, nil), true, "no-progress: 2 settlements with no improvement (limit 2), best none"},
		{"idle under the bound", idle, view(at.Add(59*time.Second), nil), false, ""},
		{"idle at the bound", idle, view(at.Add(time.Minute), nil), true, "no-progress: 60000ms since the last settlement (limit 60000ms)"},
		{"idle while a worker waits", idle, func() supervise.ProgressView { v := view(at.Add(time.Hour), nil); v.Waiting = 1; return v }(), false, ""},
		{"plateau before its window", plateau, view(at, f64(0.5)), false, ""},
		{"plateau rising", plateau, view(at, f64(0.1), f64(0.2), f64(0.5)), false, ""},
		{"plateau flat", plateau, view(at, f64(0.5), f64(0.55), f64(0.6)), true, "plateau: the best objective rose by at most 0.1 over the last 2 settlements, best 0.6"},
		{"plateau of nothing", plateau, view(at, nil, nil), true, "plateau: the best objective rose by at most 0.1 over the last 2 settlements, best none"},
		// The window's first settlement is measured from the best before
		// it: nothing, when it is the run's first. A first delivery is a
		// rise; the reference (plateauLength) never fires on a window
		// that holds the first settlement.
		{"plateau: the first delivery rose", plateau, view(at, f64(0.5), f64(0.5)), false, ""},
		{"plateau of one: the first delivery rose", plateau1, view(at, f64(0.5)), false, ""},
		{"plateau of one: flat after it", plateau1, view(at, f64(0.5), f64(0.5)), true, "plateau: the best objective rose by at most 0 over the last 1 settlements, best 0.5"},
		{"one stalled of two needed", stalled, supervise.ProgressView{Workers: []supervise.LiveWorker{stalledWorker}}, false, ""},
		{"all stalled", stalled, supervise.ProgressView{Workers: []supervise.LiveWorker{stalledWorker, stalledWorker}}, true, "all-stalled: 2 running workers idle, the longest 180000ms"},
		{"one not stalled", stalled, supervise.ProgressView{Workers: []supervise.LiveWorker{stalledWorker, {Node: "r:s8"}}}, false, ""},
		{"any of", supervise.AnyOf(idle, noImprove2), view(at, nil, nil), true, "no-progress: 2 settlements with no improvement (limit 2), best none"},
		{"all of, one holds", supervise.AllOf(idle, noImprove2), view(at, nil, nil), false, ""},
		{"all of", supervise.AllOf(idle, noImprove2), view(at.Add(time.Hour), nil, nil), true,
			"no-progress: 3599000ms since the last settlement (limit 60000ms) AND no-progress: 2 settlements with no improvement (limit 2), best none"},
		{"all of none", supervise.AllOf(), view(at, nil), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rule(tc.view)
			if diff := cmp.Diff(supervise.StopDecision{Stop: tc.stop, Reason: tc.reason}, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []interface {
		Rule() (supervise.StopRule, error)
	}{supervise.NoProgressFor{}, supervise.NoProgressFor{Settles: -1}, supervise.Plateau{}, supervise.Plateau{Window: 1, MinDelta: -1},
		supervise.AllWorkersStalled{MinWorkers: -1}} {
		if _, err := bad.Rule(); !errors.Is(err, supervise.ErrInvalidStopRule) || !errors.Is(err, supervise.ErrInvalidOptions) {
			t.Errorf("%#v: %v, want ErrInvalidStopRule", bad, err)
		}
	}
}

// settleLoop is a brain that spawns a held worker, then spawns and
// awaits the tasks one after another until a spawn is refused; it keeps
// the refusal and whether its context had ended then.
type settleLoop struct {
	t       *testing.T
	tasks   []string
	refused map[string]any
	stopped bool
	settled int
	c       *supervise.Coordinator
}

func (b *settleLoop) Drive(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
	b.c = c
	bg := context.WithoutCancel(ctx)
	if r := tool(b.t, bg, c, supervise.VerbSpawnWorker, spawnArgs("hold")); r["error"] != nil {
		b.t.Fatalf("spawning the held worker: %v", r)
	}
	for _, task := range b.tasks {
		if r := tool(b.t, bg, c, supervise.VerbSpawnWorker, spawnArgs(task)); r["error"] != nil {
			b.refused, b.stopped = r, ctx.Err() != nil
			return supervise.BrainReport{}, nil
		}
		ev := tool(b.t, bg, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		if e, _ := ev["event"].(map[string]any); e["state"] == "done" || ev["stopped"] == true {
			b.settled++
			continue
		}
		b.t.Fatalf("await_event: %v", ev)
	}
	return supervise.BrainReport{}, nil
}

// §3.6 "a run settles only on: deadline, cancel, exhausted budget,
// accepted result, or the no-progress bound" (behaviour 36's run end):
// a StopRule of two settlements without improvement closes the run once
// the second undelivered result settles — the stop journaled before it
// is acted on, OnProgressStop told once, the scope aborted (the next
// spawn refused scope-aborted), the manager stopped, the held worker
// cancelled with ErrProgressStopped, the pool conserved — and the run
// ends as a stopped manager's does: no-winner all-children-down when
// nothing delivered, the winner when a worker did, with ProgressStop
// naming the rule's reason.
func TestStopRuleClosesTheRunNoProgressBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tasks  []string
		status supervise.Status
		reason supervise.NoWinnerReason
		winner supervise.NodeID
		want   string
	}{
		{"nothing delivered", []string{"half 1", "half 2", "half 3"}, supervise.StatusNoWinner, supervise.ReasonAllChildrenDown, "",
			"no-progress: 2 settlements with no improvement (limit 2), best none"},
		{"one delivered", []string{"first DONE", "half 1", "half 2", "half 3"}, supervise.StatusWinner, "", "run1:s2",
			"no-progress: 2 settlements with no improvement (limit 2), best 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule, err := supervise.NoProgressFor{Settles: 2}.Rule()
			if err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int64
			var told []string
			var mu sync.Mutex
			brain := &settleLoop{t: t, tasks: tc.tasks}
			o := baseOptions(t, progressExecutor{runs: &runs}, nil)
			o.RunDir, o.Brain, o.StopRule = t.TempDir(), brain, rule
			o.OnProgressStop = func(reason string) { mu.Lock(); told = append(told, reason); mu.Unlock() }
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if brain.refused["error"] != string(supervise.CodeScopeAborted) || !brain.stopped {
				t.Fatalf("after the stop, spawn answered %v (manager stopped %v); want scope-aborted to a stopped manager", brain.refused, brain.stopped)
			}
			if res.Status != tc.status || res.Reason != tc.reason || res.Error != nil {
				t.Errorf("result %s %s (error %+v), want %s %s", res.Status, res.Reason, res.Error, tc.status, tc.reason)
			}
			if tc.winner != "" && (res.Winner == nil || res.Winner.Node != tc.winner) {
				t.Errorf("winner %+v, want %s", res.Winner, tc.winner)
			}
			if res.ProgressStop == nil || res.ProgressStop.Reason != tc.want {
				t.Errorf("progress stop %+v, want reason %q", res.ProgressStop, tc.want)
			}
			if diff := cmp.Diff([]string{tc.want}, told); diff != "" {
				t.Errorf("OnProgressStop told (-want +got):\n%s", diff)
			}
			hold, ok := nodeState(res, "run1:s1")
			if !ok || hold.State != supervise.StateCancelled || !strings.Contains(hold.Reason, supervise.ErrProgressStopped.Error()) {
				t.Errorf("the held worker: %+v, want it cancelled by the stop rule", hold)
			}
			if r := brain.c.Readout(); r.Conserved() != nil || r.OpenTickets != 0 {
				t.Errorf("pool: %v, %d open tickets", r.Conserved(), r.OpenTickets)
			}
			if n := runs.Load(); n != int64(len(tc.tasks)) { // the held worker and all but the refused spawn
				t.Errorf("%d executions, want %d", n, len(tc.tasks))
			}
		})
	}
}

// §3.6, the first end decides: the stop rule's end is journaled
// (KindProgressStopped) before it is acted on, so a run whose process
// died right after it resumes ended by it — no manager driven, no worker
// run, the same no-winner and reason, OnProgressStop not told again —
// and a resume with ReturnEnded returns it from the finished record.
func TestStopRuleEndSurvivesResume(t *testing.T) {
	for _, cut := range []bool{true, false} {
		t.Run(map[bool]string{true: "cut", false: "ended"}[cut], func(t *testing.T) {
			dir := t.TempDir()
			rule, err := supervise.NoProgressFor{Settles: 1}.Rule()
			if err != nil {
				t.Fatal(err)
			}
			mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
			var runs atomic.Int64
			var told atomic.Int64
			options := func(brain supervise.Brain) supervise.Options {
				o := baseOptions(t, progressExecutor{runs: &runs}, nil)
				o.RunDir, o.Brain, o.StopRule = dir, brain, rule
				o.OnProgressStop = func(string) { told.Add(1) }
				return o
			}
			ctx := context.Background()
			var dead atomic.Bool
			if cut {
				ctx = supervise.WithSpawnLogWrapper(ctx, func(sl supervise.SpawnLog) supervise.SpawnLog {
					return cutAfter{SpawnLog: sl, kind: supervise.KindProgressStopped, dead: &dead}
				})
			}
			was, err := supervise.Supervise(ctx, mgr, "t", options(&settleLoop{t: t, tasks: []string{"half 1", "half 2"}}))
			if cut != (err != nil) || cut != dead.Load() {
				t.Fatalf("first run: err %v, cut %v", err, dead.Load())
			}
			if was.ProgressStop == nil || told.Load() != 1 {
				t.Fatalf("first run: progress stop %+v, told %d times", was.ProgressStop, told.Load())
			}
			runs.Store(0)
			driven := false
			o := options(supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
				driven = true
				return supervise.BrainReport{}, nil
			}))
			o.Resume, o.Budget = true, ledger.Budget{}
			for _, returnEnded := range []bool{false, true} {
				if returnEnded && cut {
					continue // no finished record to return
				}
				o.ReturnEnded = returnEnded
				res, err := supervise.Supervise(context.Background(), mgr, "", o)
				if err != nil {
					t.Fatal(err)
				}
				if driven || runs.Load() != 0 || told.Load() != 1 {
					t.Errorf("resumed (returnEnded %v): drove %v, ran %d, told %d times", returnEnded, driven, runs.Load(), told.Load())
				}
				if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAllChildrenDown || res.ProgressStop == nil ||
					*res.ProgressStop != *was.ProgressStop {
					t.Errorf("resumed (returnEnded %v): %s %s %+v, want no-winner all-children-down %+v", returnEnded, res.Status, res.Reason, res.ProgressStop, was.ProgressStop)
				}
			}
		})
	}
}

// clockAdvancer moves the run's clock when a worker settles, after the
// settlement's own reading of the stop rule.
type clockAdvancer struct {
	clock *manualClock
	by    time.Duration
}

func (a clockAdvancer) RunStarted(ctx context.Context, _ supervise.RunStart) context.Context {
	return ctx
}
func (a clockAdvancer) NodeStarted(ctx context.Context, _ supervise.NodeInfo) (context.Context, kernel.Observer) {
	return ctx, nil
}
func (a clockAdvancer) NodeSettled(context.Context, supervise.NodeSettled)   { a.clock.Advance(a.by) }
func (a clockAdvancer) RunEnded(context.Context, supervise.SupervisedResult) {}

// §3.6 stopRule read by the router brain before a model turn (the
// reference's router driver reads it before each inference turn): the
// worker settles at t0 (the settlement's reading: idle 0, no stop), the
// clock then moves two minutes, and the reading before the manager's
// next turn stops the run — the turn that would spawn again never runs.
// The manager's stop is no failure: the run ends no-winner
// all-children-down, nothing charged for the turn not taken.
func TestStopRuleReadBeforeRouterTurn(t *testing.T) {
	clock := &manualClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	rule, err := supervise.NoProgressFor{Within: time.Minute}.Rule()
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	manager := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "half 1"}),
			call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}), managerUsage(10, 5, 0.0001)),
		turn(call("c3", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "first DONE"}), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("done"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, progressExecutor{runs: &runs}, manager)
	o.Now, o.StopRule, o.RunDir = clock.Now, rule, t.TempDir()
	o.Observer = clockAdvancer{clock: clock, by: 2 * time.Minute}
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 || len(res.Tree) != 1 {
		t.Errorf("%d executions, tree %+v; want only the first worker", runs.Load(), res.Tree)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAllChildrenDown || res.Error != nil {
		t.Errorf("result %s %s (error %+v), want no-winner all-children-down", res.Status, res.Reason, res.Error)
	}
	if res.ProgressStop == nil || res.ProgressStop.Reason != "no-progress: 120000ms since the last settlement (limit 60000ms)" {
		t.Errorf("progress stop %+v", res.ProgressStop)
	}
	if res.Breakdown.DriverInference.Tokens != 15 {
		t.Errorf("driver inference %d tokens, want 15: one turn", res.Breakdown.DriverInference.Tokens)
	}
}

// OnProgressStop without StopRule is a half-wired seam: refused at start.
func TestOnProgressStopNeedsStopRule(t *testing.T) {
	var runs atomic.Int64
	o := baseOptions(t, progressExecutor{runs: &runs}, nil)
	o.Brain = &settleLoop{t: t}
	o.OnProgressStop = func(string) {}
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); !errors.Is(err, supervise.ErrInvalidOptions) {
		t.Fatalf("%v, want ErrInvalidOptions", err)
	}
}

// §3.6 stopRule, onProgressStop: both are the caller's code, called on
// the run's settlement path, so neither may crash the process or hold
// the run open. A rule that panics or does not answer within its bound
// fails the run as the reference's throwing rule does on its driver's
// path: no-winner driver-failed with a *StopRuleError — even though a
// worker had delivered (no finalizer picks a winner), with no progress
// stop, the scope aborted and the held worker cancelled; an
// OnProgressStop that panics or blocks is not waited for past its
// bound, and the stop it is told of still ends the run.
func TestStopRuleAndOnProgressStopPanicOrBlockAreBounded(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	const bound = 300 * time.Millisecond
	for _, tc := range []struct {
		name     string
		rule     func(calls *atomic.Int64) supervise.StopRule
		notify   func(string)
		stopped  bool
		maxCalls int64
		failed   string
	}{
		{"rule panics", func(calls *atomic.Int64) supervise.StopRule {
			return func(supervise.ProgressView) supervise.StopDecision { calls.Add(1); panic("the caller's rule broke") }
		}, nil, false, 1, "the stop rule panicked: the caller's rule broke"},
		{"rule blocks", func(calls *atomic.Int64) supervise.StopRule {
			return func(supervise.ProgressView) supervise.StopDecision {
				calls.Add(1)
				<-release
				return supervise.StopDecision{Stop: true}
			}
		}, nil, false, 1, "the stop rule did not answer within 300ms"},
		{"OnProgressStop blocks", func(calls *atomic.Int64) supervise.StopRule {
			return func(supervise.ProgressView) supervise.StopDecision {
				calls.Add(1)
				return supervise.StopDecision{Stop: true, Reason: "enough"}
			}
		}, func(string) { <-release }, true, 1, ""},
		{"OnProgressStop panics", func(calls *atomic.Int64) supervise.StopRule {
			return func(supervise.ProgressView) supervise.StopDecision {
				calls.Add(1)
				return supervise.StopDecision{Stop: true, Reason: "enough"}
			}
		}, func(string) { panic("the caller's notifier broke") }, true, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs, calls atomic.Int64
			brain := &settleLoop{t: t, tasks: []string{"half 1", "half 2", "half 3"}}
			o := baseOptions(t, progressExecutor{runs: &runs}, nil)
			o.RunDir, o.Brain, o.StopRule, o.OnProgressStop = t.TempDir(), brain, tc.rule(&calls), tc.notify
			ctx, cancel := context.WithTimeout(supervise.WithStopRuleTimeout(context.Background(), bound), time.Minute)
			defer cancel()
			start := time.Now()
			res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the run took %v", took)
			}
			if n := calls.Load(); n < 1 || n > tc.maxCalls {
				t.Errorf("the rule was read %d times, want 1..%d", n, tc.maxCalls)
			}
			if tc.stopped {
				if res.ProgressStop == nil || res.ProgressStop.Reason != "enough" || brain.refused["error"] != string(supervise.CodeScopeAborted) {
					t.Errorf("progress stop %+v, refused %v; want the stop to end the run", res.ProgressStop, brain.refused)
				}
				return
			}
			if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonDriverFailed || res.Error == nil ||
				res.Error.Name != "StopRuleError" || !strings.Contains(res.Error.Message, tc.failed) {
				t.Errorf("status %s reason %s error %+v; want driver-failed with %q", res.Status, res.Reason, res.Error, tc.failed)
			}
			if res.ProgressStop != nil || res.Winner != nil || brain.settled != 1 || brain.refused["error"] != string(supervise.CodeScopeAborted) {
				t.Errorf("progress stop %+v, winner %v, %d settled, refused %v; want the run ended at the rule's failure", res.ProgressStop, res.Winner, brain.settled, brain.refused)
			}
		})
	}
}
