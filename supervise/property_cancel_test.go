package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// gatedExec runs each worker until the test releases it with its spend
// (it settles done) or its context ends (it settles cancelled, charged
// the partial spend it reports): the test decides when each worker
// settles, so cancels can be aimed at live workers and raced against
// their settlement.
type gatedExec struct {
	mu    sync.Mutex
	gates map[supervise.NodeID]chan ledger.Spend
}

func (g *gatedExec) gate(id supervise.NodeID) chan ledger.Spend {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates == nil {
		g.gates = map[supervise.NodeID]chan ledger.Spend{}
	}
	ch, ok := g.gates[id]
	if !ok {
		ch = make(chan ledger.Spend, 1)
		g.gates[id] = ch
	}
	return ch
}

func (g *gatedExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	select {
	case sp := <-g.gate(w.Node):
		return supervise.WorkResult{Text: "DONE", Spent: sp}, nil
	case <-ctx.Done():
		z := int64(0)
		return supervise.WorkResult{Spent: ledger.Spend{Tokens: i64(7), Iterations: &z, MicroUSD: i64(70)}}, context.Cause(ctx)
	}
}

// release lets worker id settle with sp.
func (g *gatedExec) release(id supervise.NodeID, sp ledger.Spend) { g.gate(id) <- sp }

// The cancel half of issue 13's property test (Done when: "random spawn
// / settle / cancel / crash-and-resume sequences"; behaviours 36, 40,
// 46, 49; checklist RTP-02): a brain driven by a seeded random source
// spawns workers, settles them, cancels them through the run dir
// (CancelWorker), cancels them while they settle (the release and the
// cancel race), and sometimes cancels the whole run (CancelRun); each
// run's journal is then cut at a random record, as a process killed
// there leaves it, and resumed, up to three times, the resumed runs
// driving on with more random steps. After every step, in every run,
// free + reserved + committed equals the root total on tokens, usd and
// iterations; every cancellation ends acknowledged as cancelled or
// not_live, never success of the wrong kind, and a cancel that lost
// its race to a settlement is not_live. Deterministic per seed (the
// goroutine schedule varies; the invariant must hold under any).
func TestConservationWithCancelsAcrossCrashAndResume(t *testing.T) {
	seeds := uint64(24)
	if testing.Short() {
		seeds = 6
	}
	var stats cancelStats
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 0xca9ce1))
		dir := t.TempDir()
		runCancelProperty(t, dir, seed, "first run", false, rng, &stats)
		for crash := range 1 + rng.IntN(3) {
			cutJournal(t, dir, rng)
			runCancelProperty(t, dir, seed, fmt.Sprintf("resume %d", crash+1), true, rng, &stats)
		}
	}
	t.Logf("%+v", stats)
	if stats.cancelled == 0 || stats.racedNotLive == 0 || stats.racedNotLive == stats.raced || stats.runCancels == 0 || stats.settled == 0 || stats.resumes == 0 ||
		stats.unsettled == 0 || stats.endsChecked == 0 {
		t.Errorf("the sequences exercised too little: %+v", stats)
	}
}

type cancelStats struct {
	steps, spawned, settled, cancelled, raced, racedNotLive, runCancels, resumes int
	unsettled, endsChecked                                                       int
}

// runCancelProperty runs (or resumes) the supervised run in dir under a
// random brain and checks conservation after every step.
func runCancelProperty(t *testing.T, dir string, seed uint64, phase string, resume bool, rng *rand.Rand, stats *cancelStats) {
	t.Helper()
	exec := &gatedExec{}
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		t.Fatal(err)
	}
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: i64(6_000), Iterations: i64(60), MicroUSD: i64(600_000)},
		PerWorker: ledger.Budget{Tokens: i64(400), Iterations: i64(3), MicroUSD: i64(40_000)},
		Profiles:  map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec,
		RunDir: dir, RunID: "prop", Resume: resume, MaxLiveWorkers: 6,
	}
	// The brain's own random source, drawn from the seed's: the run's
	// steps do not depend on how many the previous run took.
	brainRNG := rand.New(rand.NewPCG(rng.Uint64(), seed))
	op := 0
	opID := func(kind string) string {
		op++
		return fmt.Sprintf("%s-%s-%d", kind, strings.ReplaceAll(phase, " ", "-"), op)
	}
	// last is the pool at the brain's last step; settledAll says the
	// brain returned with every worker it spawned settled.
	var last ledger.Readout
	settledAll := false
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		step := 0
		check := func(what string) {
			t.Helper()
			stats.steps++
			last = c.Readout()
			checkPoolConserved(t, last, fmt.Sprintf("seed %d, %s, step %d (%s)", seed, phase, step, what))
		}
		check("replayed")
		var live []supervise.NodeID
		take := func() supervise.NodeID {
			i := brainRNG.IntN(len(live))
			id := live[i]
			live = append(live[:i], live[i+1:]...)
			return id
		}
		spend := func() ledger.Spend {
			return ledger.Spend{Tokens: i64(brainRNG.Int64N(450)), Iterations: i64(brainRNG.Int64N(3)), MicroUSD: i64(brainRNG.Int64N(45_000))}
		}
		// awaitSettled waits for id's settlement event, passing over the
		// replayed settlements a resumed run delivers first.
		awaitSettled := func(id supervise.NodeID) error {
			for {
				r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000, Kinds: []string{supervise.EventSettled}})
				switch {
				case err != nil:
					return err
				case r.Event != nil && r.Event.Replayed:
					continue
				case r.Event == nil || r.Event.WorkerID != id:
					return fmt.Errorf("awaiting %s: %+v (event %+v)", id, r, r.Event)
				}
				return nil
			}
		}
		for ; step < 14; step++ {
			if ctx.Err() != nil {
				return supervise.BrainReport{}, nil
			}
			switch k := brainRNG.IntN(100); {
			case k < 40 || len(live) == 0: // spawn
				r, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: fmt.Sprintf("task %d", brainRNG.IntN(5))})
				var refusal *supervise.Refusal
				switch {
				case errors.As(err, &refusal):
				case err != nil:
					return supervise.BrainReport{}, err
				case !r.Replayed:
					live = append(live, r.WorkerID)
					stats.spawned++
				}
				check("spawn")
			case k < 62: // settle
				id := take()
				exec.release(id, spend())
				if err := awaitSettled(id); err != nil {
					return supervise.BrainReport{}, err
				}
				stats.settled++
				check("settle " + string(id))
			case k < 80: // cancel a live worker through the run dir
				id := take()
				eff, err := cancelAndWait(ctx, dir, string(id), opID("cancel"))
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if eff != kernel.EffectCancelled {
					return supervise.BrainReport{}, fmt.Errorf("cancelling live worker %s: effect %s, want cancelled", id, eff)
				}
				if err := awaitSettled(id); err != nil {
					return supervise.BrainReport{}, err
				}
				stats.cancelled++
				check("cancel " + string(id))
			case k < 96: // a cancel racing the worker's settlement
				id := take()
				sp, delay := spend(), time.Duration(brainRNG.IntN(2*int(supervise.ControlScanInterval/time.Millisecond)))*time.Millisecond
				go func() {
					time.Sleep(delay) // within a scan or two: either may win
					exec.release(id, sp)
				}()
				eff, err := cancelAndWait(ctx, dir, string(id), opID("race"))
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if eff != kernel.EffectCancelled && eff != kernel.EffectNotLive {
					return supervise.BrainReport{}, fmt.Errorf("cancel racing %s's settlement: effect %s", id, eff)
				}
				if err := awaitSettled(id); err != nil {
					return supervise.BrainReport{}, err
				}
				stats.raced++
				if eff == kernel.EffectNotLive {
					stats.racedNotLive++
				}
				check("race " + string(id))
			default: // cancel the whole run, with workers live
				if _, err := supervise.CancelRun(ctx, dir, opID("run"), supervise.RunCancelOptions{Reason: "property"}); err != nil {
					return supervise.BrainReport{}, err
				}
				select {
				case <-ctx.Done():
				case <-time.After(30 * time.Second):
					return supervise.BrainReport{}, errors.New("the run cancellation was never applied")
				}
				stats.runCancels++
				check("run cancelled")
				return supervise.BrainReport{}, nil
			}
		}
		for len(live) > 0 { // settle what is left
			id := take()
			exec.release(id, spend())
			if err := awaitSettled(id); err != nil {
				return supervise.BrainReport{}, err
			}
			check("final settle " + string(id))
		}
		settledAll = true
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatalf("seed %d, %s: %v", seed, phase, err)
	}
	if res.Error != nil && res.Reason != supervise.ReasonCancelled {
		t.Fatalf("seed %d, %s: the brain failed: %+v", seed, phase, res.Error)
	}
	if resume {
		stats.resumes++
		if !res.Resumed {
			t.Fatalf("seed %d, %s: the run was not resumed", seed, phase)
		}
	}
	// Behaviour 40: a worker the crash left without a settlement (in
	// doubt on resume: the test's executor recovers nothing) is charged
	// its ceiling on every channel, its spend unknown.
	var ceilings ledger.Spend
	for _, n := range res.Tree {
		if n.Settlement != nil {
			continue
		}
		if !n.InDoubt && !n.NeverSettled {
			t.Fatalf("seed %d, %s: %s ended %s with no settlement, neither in doubt nor never-settled", seed, phase, n.ID, n.State)
		}
		stats.unsettled++
		if n.Reserved.Tokens == nil || n.Reserved.Iterations == nil || n.Reserved.MicroUSD == nil {
			t.Fatalf("seed %d, %s: never-settled %s reserved %+v", seed, phase, n.ID, n.Reserved)
		}
		ceilings.Tokens, ceilings.Iterations, ceilings.MicroUSD = addp(ceilings.Tokens, *n.Reserved.Tokens),
			addp(ceilings.Iterations, *n.Reserved.Iterations), addp(ceilings.MicroUSD, *n.Reserved.MicroUSD)
	}
	if ceilings.Tokens != nil && (res.Spent.TokensKnown || res.Spent.Tokens < *ceilings.Tokens ||
		res.Spent.Iterations < *ceilings.Iterations || res.Spent.MicroUSD < *ceilings.MicroUSD) {
		t.Fatalf("seed %d, %s: spent %+v does not charge the never-settled ceilings %d tokens, %d iterations, %d µUSD",
			seed, phase, res.Spent, *ceilings.Tokens, *ceilings.Iterations, *ceilings.MicroUSD)
	}
	// With every worker settled when the brain returned (it spends
	// nothing itself), the pool at its last step is the run's end:
	// spentTotal = committed + reserved on each channel.
	if settledAll {
		for ch, spent := range map[string]int64{ledger.ChannelTokens: res.Spent.Tokens, ledger.ChannelIterations: res.Spent.Iterations,
			ledger.ChannelUSD: res.Spent.MicroUSD} {
			if b := last.Channels[ch]; spent != b.Committed+b.Reserved {
				t.Fatalf("seed %d, %s: %s spentTotal %d != committed %d + reserved %d", seed, phase, ch, spent, b.Committed, b.Reserved)
			}
		}
		stats.endsChecked++
	}
}

// addp is *p + v, with a nil p read as 0.
func addp(p *int64, v int64) *int64 {
	if p != nil {
		v += *p
	}
	return &v
}

// cancelAndWait asks the run in dir to cancel worker and waits (at most
// 30 s) for the acknowledgement to leave cancel_requested.
func cancelAndWait(ctx context.Context, dir, worker, opID string) (kernel.Effect, error) {
	if _, err := supervise.CancelWorker(ctx, dir, worker, opID, supervise.CancelOptions{Reason: "property"}); err != nil {
		return "", err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rec, err := supervise.ReadWorkerCancellation(ctx, dir, opID)
		if err != nil {
			return "", err
		}
		if rec.Effect != kernel.EffectCancelRequested && rec.Effect != kernel.EffectUnknown && rec.Effect != "" {
			return rec.Effect, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("cancelling %s: still %q after 30 s", worker, rec.Effect)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
