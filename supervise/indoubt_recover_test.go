package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
	"github.com/google/go-cmp/cmp"
)

// recoveringExecutor is a KernelExecutor (so a Recoverer) that counts
// the workers it executes: recovery must run none.
type recoveringExecutor struct {
	*supervise.KernelExecutor
	executed atomic.Int64
}

func (e *recoveringExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.executed.Add(1)
	return e.KernelExecutor.Execute(ctx, w)
}

// plainExecutor runs workers through a KernelExecutor but is no
// Recoverer: the executor port's recover? is optional.
type plainExecutor struct{ inner *supervise.KernelExecutor }

func (e plainExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	return e.inner.Execute(ctx, w)
}

// keyedOutcome is what the keyed brain saw.
type keyedOutcome struct {
	spawn    supervise.SpawnResult
	spawnErr error
	event    *supervise.Event
	observed supervise.Observation
}

// keyedBrain spawns the keyed alpha worker "k", awaits one settlement
// and observes the worker, checking the pool's conservation between
// steps (behaviour 40's invariant: free + reserved + committed = total).
func keyedBrain(t *testing.T, got *keyedOutcome) supervise.Brain {
	return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		checkPoolConserved(t, c.Readout(), "before the spawn")
		got.spawn, got.spawnErr = c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha", Label: "a", Key: "k"})
		checkPoolConserved(t, c.Readout(), "after the spawn")
		a, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		got.event = a.Event
		checkPoolConserved(t, c.Readout(), "after the await")
		node := got.spawn.WorkerID
		if node == "" {
			node = supervise.ChildID("run1", 1)
		}
		if got.observed, err = c.Observe(node); err != nil {
			return supervise.BrainReport{}, err
		}
		return supervise.BrainReport{}, nil
	})
}

// RES-03, behaviours 40, 44 and 46, §3.6 "in-flight keyed work is
// in-doubt until recovered": a supervisor killed after its keyed worker
// started — the journal ends at the worker's execution-bound record, the
// kernel run it names went on to complete — is resumed: the exact
// execution is recovered from the run store, settled with its real
// spend (not charged at its ceiling), checked and delivered, and the
// key replays it as completed. No worker is executed again.
func TestKeyedWorkerRecoveredAfterCrash(t *testing.T) {
	st := newStore(t)
	dir := t.TempDir()
	first := &recoveringExecutor{KernelExecutor: &supervise.KernelExecutor{Provider: workerProvider(t), Store: st}}
	var ref keyedOutcome
	o := baseOptions(t, first, nil)
	o.RunDir, o.Brain = dir, keyedBrain(t, &ref)
	want, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil || want.Status != supervise.StatusWinner {
		t.Fatalf("the uninterrupted run: %v %+v", err, want)
	}
	if first.executed.Load() != 1 {
		t.Fatalf("the first run executed %d workers, want 1", first.executed.Load())
	}
	// The process died right after its worker's execution was bound:
	// the settlement and everything after it never reached the journal.
	journaltest.KeepThrough(t, dir, supervise.KindExecutionBound, 1)

	second := &recoveringExecutor{KernelExecutor: &supervise.KernelExecutor{Provider: workerProvider(t), Store: st}}
	var got keyedOutcome
	o = baseOptions(t, second, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, keyedBrain(t, &got)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := second.executed.Load(); n != 0 {
		t.Errorf("the resumed run executed %d workers, want 0 (recovery never starts replacement work)", n)
	}
	if got.spawnErr != nil || got.spawn.Resumed != supervise.ResumedCompleted || got.spawn.WorkerID != ref.spawn.WorkerID {
		t.Errorf("the keyed spawn after recovery: %+v, %v; want resumed completed as %s", got.spawn, got.spawnErr, ref.spawn.WorkerID)
	}
	if got.event == nil || got.event.State != supervise.StateDone || got.event.Replayed || got.event.Delivered == nil || !*got.event.Delivered {
		t.Errorf("the recovered settlement event: %+v; want done, delivered, not replayed", got.event)
	}
	if got.observed.InDoubt || got.observed.Status != supervise.StateDone {
		t.Errorf("observe_agent of the recovered worker: %+v", got.observed)
	}
	if res.Status != supervise.StatusWinner || res.Winner.OutRef != want.Winner.OutRef {
		t.Fatalf("resumed result %+v, want the winner %+v", res.Winner, want.Winner)
	}
	if diff := cmp.Diff(want.Breakdown.ChildWork, res.Breakdown.ChildWork); diff != "" {
		t.Errorf("child spend (-uninterrupted +recovered):\n%s", diff)
	}
	if len(res.SpendGaps) != 0 || !res.Spent.TokensKnown || res.Tree[0].InDoubt {
		t.Errorf("a recovered worker is no spend gap: gaps %+v, tokens known %v, in doubt %v", res.SpendGaps, res.Spent.TokensKnown, res.Tree[0].InDoubt)
	}
	recs := journalRecords(t, dir)
	var recovered int
	for _, r := range recs {
		if r.Kind == supervise.KindSettled && r.Recovered {
			recovered++
		}
	}
	if recovered != 1 {
		t.Errorf("%d recovered settlements journaled, want 1", recovered)
	}

	// A third process resumes the now settled run: the recovered
	// settlement replays like any other.
	third := &recoveringExecutor{KernelExecutor: &supervise.KernelExecutor{Provider: workerProvider(t), Store: st}}
	var again keyedOutcome
	o = baseOptions(t, third, nil)
	o.RunDir, o.Resume, o.Brain = dir, true, keyedBrain(t, &again)
	res3, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil || res3.Status != supervise.StatusWinner || third.executed.Load() != 0 || !res3.Tree[0].Replayed {
		t.Errorf("the third process: %v, %+v, executed %d", err, res3, third.executed.Load())
	}
}

// handJournal writes the journal a supervisor killed mid-run leaves:
// run started, the keyed alpha worker spawned and, when execution is
// set, bound to that execution — written through the package's own
// spawn log.
func handJournal(t *testing.T, dir, execution string) {
	t.Helper()
	log, err := supervise.OpenFileSpawnLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	recs := []supervise.Record{
		{Kind: supervise.KindRunStarted, RunID: "run1", StartedAtMS: time.Now().UnixMilli(), Task: "t"},
		{Kind: supervise.KindSpawned, Node: supervise.ChildID("run1", 1), Label: "a", Profile: "writer", Model: "scripted/writer",
			Key: "k", Task: "write alpha"},
	}
	if execution != "" {
		recs = append(recs, supervise.Record{Kind: supervise.KindExecutionBound, Node: supervise.ChildID("run1", 1), Execution: execution})
	}
	if err := log.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
}

func journalRecords(t *testing.T, dir string) []supervise.Record {
	t.Helper()
	log, err := supervise.OpenFileSpawnLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	recs, err := log.Records(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// failingProvider fails every turn in band after reporting exact usage.
func failingProvider(t *testing.T) contract.Provider {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"repeat": true, "steps": [{"text": "partial"}, {"usage": {"inputTokens": 7, "outputTokens": 3, "cost": 0.0001}, "mode": "delta"}], "end": "failed", "error": "tool crashed"}]}`), &s); err != nil {
		t.Fatal(err)
	}
	return scripted.New(&s, scripted.Options{})
}

// §3.6 executor port recover?: a resumed run asks the executor for the
// outcome of each worker's journaled execution. A kernel run that ended
// settles the worker with it (done or failed, its real spend); one still
// running, one the store does not hold, or an executor that cannot
// recover leaves the worker in doubt — charged at its ceiling, its key
// refused in-doubt (behaviour 44), the reason journaled and observable.
func TestInDoubtRecoveryOutcomes(t *testing.T) {
	const execution = "worker-0123456789abcdef"
	kernelRun := func(p func(*testing.T) contract.Provider) func(t *testing.T, st store.Store) {
		return func(t *testing.T, st store.Store) {
			_, _ = kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, writerProfile), Task: "write alpha",
				Provider: p(t), Store: st, RunID: execution, Kind: "supervise-worker"})
		}
	}
	cases := []struct {
		name        string
		setup       func(t *testing.T, st store.Store)
		noExecution bool
		plain       bool
		uncapped    bool
		wantState   supervise.State
		wantResumed supervise.Resumed // how the key answers a recovered worker
		wantInDoubt string            // a word the in-doubt reason holds; "" when recovered
		wantTokens  int64
	}{
		{name: "completed kernel run: recovered done", setup: kernelRun(workerProvider), wantState: supervise.StateDone,
			wantResumed: supervise.ResumedCompleted, wantTokens: 120},
		// A failed turn's usage is a floor: its tokens are unknown and
		// charged at the ceiling, its dollars too (so no dollar ceiling).
		{name: "failed kernel run: recovered failed", setup: kernelRun(failingProvider), wantState: supervise.StateFailed,
			wantResumed: supervise.ResumedRetried, uncapped: true},
		// A steered worker's turns are the runs "<id>.<n>": the last
		// one read is its result, the usage their sum.
		{name: "steered turns completed: recovered from the last", setup: func(t *testing.T, st store.Store) {
			kernelRun(workerProvider)(t, st)
			_, _ = kernel.Execute(context.Background(), kernel.Request{Profile: mustProfile(t, writerProfile), Task: "write alpha again",
				Provider: workerProvider(t), Store: st, RunID: execution + ".1", Kind: "supervise-worker"})
		}, wantState: supervise.StateDone, wantResumed: supervise.ResumedCompleted, wantTokens: 240},
		{name: "a steered turn still running: in doubt", setup: func(t *testing.T, st store.Store) {
			kernelRun(workerProvider)(t, st)
			now := time.Now()
			if _, err := st.CreateRun(context.Background(), store.Run{ID: execution + ".1", Kind: "supervise-worker", Status: store.StatusRunning,
				CreatedAt: now, UpdatedAt: now, LeaseUntil: now.Add(time.Hour), Owner: "elsewhere"}); err != nil {
				t.Fatal(err)
			}
		}, wantInDoubt: execution + ".1 is running"},
		{name: "kernel run still running: in doubt", setup: func(t *testing.T, st store.Store) {
			now := time.Now()
			if _, err := st.CreateRun(context.Background(), store.Run{ID: execution, Kind: "supervise-worker", Status: store.StatusRunning,
				CreatedAt: now, UpdatedAt: now, LeaseUntil: now.Add(time.Hour), Owner: "elsewhere"}); err != nil {
				t.Fatal(err)
			}
		}, wantInDoubt: "running"},
		// A kernel run left running past its lease was interrupted: it
		// will not end by itself, and the reason says what to do.
		{name: "kernel run interrupted: in doubt", setup: func(t *testing.T, st store.Store) {
			then := time.Now().Add(-time.Hour)
			if _, err := st.CreateRun(context.Background(), store.Run{ID: execution, Kind: "supervise-worker", Status: store.StatusRunning,
				CreatedAt: then, UpdatedAt: then, LeaseUntil: then.Add(time.Minute), Owner: "gone"}); err != nil {
				t.Fatal(err)
			}
		}, wantInDoubt: "spawn the work again under a new key"},
		// A kernel run its holder's store failed under mid-turn (the
		// holder paused past its connection's life, cut off from the
		// database) ended failed, but not by its work: in doubt.
		{name: "kernel run failed with its store: in doubt", setup: func(t *testing.T, st store.Store) {
			kernelRun(workerProvider)(t, &failingAppends{Store: st})
			if run, err := st.GetRun(context.Background(), execution); err != nil || run.Status != store.StatusFailed {
				t.Fatalf("the kernel run whose events failed: %+v, %v; want it failed", run, err)
			}
		}, wantInDoubt: "failed with its holder (store-failed"},
		{name: "kernel run missing: in doubt", setup: func(*testing.T, store.Store) {}, wantInDoubt: "before its run began (spawn the work again under a new key), or the run used another store"},
		{name: "executor is no Recoverer: in doubt", setup: kernelRun(workerProvider), plain: true, wantInDoubt: "Recoverer"},
		{name: "no execution journaled: in doubt", setup: kernelRun(workerProvider), noExecution: true, wantInDoubt: "no execution was journaled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			tc.setup(t, st)
			dir := t.TempDir()
			x := execution
			if tc.noExecution {
				x = ""
			}
			handJournal(t, dir, x)
			kx := &recoveringExecutor{KernelExecutor: &supervise.KernelExecutor{Provider: workerProvider(t), Store: st}}
			var exec supervise.Executor = kx
			if tc.plain {
				exec = plainExecutor{inner: kx.KernelExecutor}
			}
			var got keyedOutcome
			o := baseOptions(t, exec, nil)
			o.RunDir, o.Resume, o.Brain = dir, true, keyedBrain(t, &got)
			if tc.uncapped {
				o = uncappedUSD(o)
			}
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatal(err)
			}
			// Recovery executes nothing; only a key whose recovered
			// worker went down runs again, as the manager's own retry.
			if n, want := kx.executed.Load(), int64(0); tc.wantResumed == supervise.ResumedRetried && n != 1 || tc.wantResumed != supervise.ResumedRetried && n != want {
				t.Errorf("executed %d workers (resumed %q)", n, tc.wantResumed)
			}
			node := res.Tree[0]
			if tc.wantState != "" {
				if node.InDoubt || node.State != tc.wantState || got.spawnErr != nil || got.spawn.Resumed != tc.wantResumed {
					t.Fatalf("node %+v, spawn %+v %v; want %s and the key answered %s", node.NodeInfo, got.spawn, got.spawnErr, tc.wantState, tc.wantResumed)
				}
				if got.event == nil || got.event.State != tc.wantState {
					t.Errorf("the recovered settlement event: %+v", got.event)
				}
				if tc.wantTokens != 0 && (node.Settlement.Spent.Tokens == nil || *node.Settlement.Spent.Tokens != tc.wantTokens) {
					t.Errorf("recovered spend %+v, want %d tokens (the real spend, not the ceiling)", node.Settlement.Spent, tc.wantTokens)
				}
				return
			}
			var refusal *supervise.Refusal
			if !errors.As(got.spawnErr, &refusal) || refusal.Code != supervise.CodeInDoubt {
				t.Errorf("the keyed spawn: %+v, %v; want refused in-doubt", got.spawn, got.spawnErr)
			}
			if !node.InDoubt || !got.observed.InDoubt {
				t.Errorf("node %+v, observed %+v; want in doubt", node.NodeInfo, got.observed)
			}
			if !strings.Contains(got.observed.Reason, tc.wantInDoubt) || !strings.Contains(node.InDoubtReason, tc.wantInDoubt) {
				t.Errorf("observe_agent's reason %q, the result's %q: neither may miss %q", got.observed.Reason, node.InDoubtReason, tc.wantInDoubt)
			}
			if res.Breakdown.ChildWork.Tokens != 1_000 || len(res.SpendGaps) == 0 {
				t.Errorf("child spend %+v, gaps %+v; want the ceiling charged and named", res.Breakdown.ChildWork, res.SpendGaps)
			}
			failed := 0
			for _, r := range journalRecords(t, dir) {
				if r.Kind == supervise.KindRecoveryFailed {
					failed++
					if r.Execution != execution || !strings.Contains(r.Reason, tc.wantInDoubt) {
						t.Errorf("recovery-failed record %+v", r)
					}
				}
			}
			if want := 1; tc.noExecution {
				if failed != 0 {
					t.Errorf("%d recovery-failed records for a worker with no execution journaled, want none", failed)
				}
			} else if failed != want {
				t.Errorf("%d recovery-failed records, want %d", failed, want)
			}
		})
	}
}

// failingAppends is a store whose event appends fail, as a connection
// the database closed under a paused process does.
type failingAppends struct{ store.Store }

func (failingAppends) AppendEvents(context.Context, store.Fence, []store.NewEvent) ([]store.Event, error) {
	return nil, errors.New("injected: terminating connection due to idle-in-transaction timeout")
}

// Work.Bind refuses an execution identity it cannot journal truthfully,
// and an executor refused there starts nothing: its worker settles
// failed with nothing spent.
func TestBindRefusesInvalidExecution(t *testing.T) {
	for _, id := range []string{"", "run\nid", strings.Repeat("x", supervise.MaxExecutionID+1)} {
		exec := supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			if err := w.Bind(ctx, id); err != nil {
				return supervise.WorkResult{}, err
			}
			return supervise.WorkResult{Text: "DONE"}, nil
		})
		var got keyedOutcome
		o := baseOptions(t, exec, nil)
		o.Brain = keyedBrain(t, &got)
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if err != nil {
			t.Fatal(err)
		}
		if got.event == nil || got.event.State != supervise.StateFailed || !strings.Contains(got.event.Reason, "invalid execution identity") {
			t.Errorf("Bind(%q): settlement %+v, want failed on the invalid identity", id, got.event)
		}
		if res.Status != supervise.StatusNoWinner {
			t.Errorf("Bind(%q): %s, want no winner", id, res.Status)
		}
	}
}

// The crash-and-resume property (behaviours 36, 40, 46) with an executor
// that recovers: runs of spawns and settlements are cut at a random
// point of their journal, often between a worker's execution-bound
// record and its settlement, and resumed up to three times; the kernel
// runs they name stay in the run store. After recovery, and after every
// step the resumed run takes, free + reserved + committed equals the
// root total on every channel, no worker is left in doubt, and no
// resumed process executes a worker whose execution completed.
func TestConservationAcrossCrashRecoverAndResume(t *testing.T) {
	const seeds = 30
	tasks := []string{"write alpha", "write beta", "write alpha again", "write beta again"}
	recoveries := 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 0x7ec0))
		plan := make([]string, 2+rng.IntN(4))
		for i := range plan {
			plan[i] = tasks[rng.IntN(len(tasks))]
		}
		dir, st := t.TempDir(), newStore(t)
		where := func(phase string, step int) string { return fmt.Sprintf("seed %d, %s, step %d", seed, phase, step) }
		run := func(phase string, resume bool) (supervise.SupervisedResult, int64) {
			exec := &recoveringExecutor{KernelExecutor: &supervise.KernelExecutor{Provider: workerProvider(t), Store: st}}
			o := baseOptions(t, exec, nil)
			o.RunDir, o.Resume = dir, resume
			o.Brain = planBrain(t, plan, func(step int) string { return where(phase, step) })
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil {
				t.Fatalf("%s: %v", where(phase, -1), err)
			}
			for _, n := range res.Tree {
				// Only a worker whose execution was never journaled may
				// stay in doubt.
				if n.InDoubt && !strings.Contains(n.InDoubtReason, "no execution was journaled") {
					t.Fatalf("%s: %s left in doubt: %s", where(phase, -1), n.ID, n.InDoubtReason)
				}
			}
			return res, exec.executed.Load()
		}
		run("first run", false)
		for crash := range 1 + rng.IntN(3) {
			cutJournal(t, dir, rng)
			var unsettled []supervise.NodeID // bound to a completed execution, not settled
			settled := map[supervise.NodeID]bool{}
			recs := journalRecords(t, dir)
			for _, r := range recs {
				if r.Kind == supervise.KindSettled {
					settled[r.Node] = true
				}
			}
			for _, r := range recs {
				if r.Kind == supervise.KindExecutionBound && !settled[r.Node] {
					unsettled = append(unsettled, r.Node)
				}
			}
			res, _ := run(fmt.Sprintf("resume %d", crash+1), true)
			for _, id := range unsettled {
				for _, n := range res.Tree {
					if n.ID == id && (n.Replayed || n.State != supervise.StateDone && n.State != supervise.StateFailed) {
						t.Fatalf("%s: %s bound to a completed execution ended %s (replayed %v)", where("resume", -1), id, n.State, n.Replayed)
					}
				}
				recoveries++
			}
		}
	}
	if recoveries == 0 {
		t.Fatal("no cut fell between an execution and its settlement: the property was not exercised")
	}
	t.Logf("%d seeds, %d workers recovered", seeds, recoveries)
}

// hangingRecoverer is an executor whose run store stopped answering:
// Recover waits for its context.
type hangingRecoverer struct {
	plainExecutor
	asked atomic.Int64
}

func (h *hangingRecoverer) Recover(ctx context.Context, _ supervise.RecoverWork) (supervise.Recovered, error) {
	h.asked.Add(1)
	<-ctx.Done()
	return supervise.Recovered{}, context.Cause(ctx)
}

// A store that stops answering delays a resumed run by at most
// Options.RecoverTimeout for all its in-doubt workers together; the
// worker it could not ask about stays in doubt, saying so, and the run
// goes on.
func TestRecoveryPassIsBounded(t *testing.T) {
	dir := t.TempDir()
	handJournal(t, dir, "worker-aaaa")
	log, err := supervise.OpenFileSpawnLog(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Append(context.Background(),
		supervise.Record{Kind: supervise.KindSpawned, Node: supervise.ChildID("run1", 2), Label: "b", Profile: "writer", Model: "scripted/writer", Task: "write beta"},
		supervise.Record{Kind: supervise.KindExecutionBound, Node: supervise.ChildID("run1", 2), Execution: "worker-bbbb"}); err != nil {
		t.Fatal(err)
	}
	log.Close()
	exec := &hangingRecoverer{plainExecutor: plainExecutor{inner: &supervise.KernelExecutor{Provider: workerProvider(t), Store: newStore(t)}}}
	var got keyedOutcome
	o := baseOptions(t, exec, nil)
	o.RunDir, o.Resume, o.Brain, o.RecoverTimeout = dir, true, keyedBrain(t, &got), 300*time.Millisecond
	start := time.Now()
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the resumed run took %s: the recovery pass was not bounded", took)
	}
	if n := exec.asked.Load(); n != 1 {
		t.Errorf("Recover asked %d times, want 1 (the pass ran out of time before the second)", n)
	}
	for _, n := range res.Tree[:2] {
		if !n.InDoubt || !strings.Contains(n.InDoubtReason, "deadline") && !strings.Contains(n.InDoubtReason, "ran out of time") {
			t.Errorf("%s: in doubt %v, reason %q", n.ID, n.InDoubt, n.InDoubtReason)
		}
	}
}
