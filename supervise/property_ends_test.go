package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// endsExec settles each worker by the first word of its task: "ok" done
// with its spend reported, "crash" failed (a down the restart breaker
// counts), "unknown" done with its tokens and dollars unreported (a
// spend gap), "hold" only when its context ends. It counts executions
// per task and per node.
type endsExec struct {
	mu    sync.Mutex
	calls map[string]int
	nodes map[supervise.NodeID]int
}

func (e *endsExec) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.mu.Lock()
	if e.calls == nil {
		e.calls, e.nodes = map[string]int{}, map[supervise.NodeID]int{}
	}
	e.calls[w.Task]++
	e.nodes[w.Node]++
	e.mu.Unlock()
	known := ledger.Spend{Tokens: i64(40), Iterations: i64(1), MicroUSD: i64(400)}
	switch strings.Fields(w.Task)[0] {
	case "crash":
		return supervise.WorkResult{Spent: known}, errors.New("worker crashed")
	case "unknown": // tokens unreported
		return supervise.WorkResult{Text: "DONE", Spent: ledger.Spend{Iterations: i64(1), MicroUSD: i64(400)}}, nil
	case "unknown-all": // nothing reported: its dollars taint the pool's
		return supervise.WorkResult{Text: "DONE"}, nil
	case "hold":
		<-ctx.Done()
		return supervise.WorkResult{Spent: known}, context.Cause(ctx)
	}
	return supervise.WorkResult{Text: "DONE", Spent: known}, nil
}

func (e *endsExec) count(task string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[task]
}

func (e *endsExec) ran(id supervise.NodeID) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.nodes[id]
}

func (e *endsExec) total() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, c := range e.calls {
		n += c
	}
	return n
}

type endsStats struct {
	sequences, runs, steps, resumes, pastDeadline, aborts, trips, nested, keyed, unknown, driverTurns, inDoubt, gapsChecked int
	notRerun, keyedNotRerun, managerGaps, carvedChecks, carvedEnds                                                          int
}

// The ways a run ends that came after the first property tests (issue
// 13's Done when: "random spawn / settle / cancel / crash-and-resume
// sequences ... free + reserved + committed equals the root total on
// tokens, usd and iterations"): a seeded brain spawns workers that
// settle done, crash (tripping the restart breaker when one is set,
// Options.MaxRestarts), report no usage (spend gaps), or hold until the
// run's end; it spawns nested managers that spawn and settle workers of
// their own, keys some spawns, meters its own turns (Coordinator.Meter,
// with unknown dollars sometimes) and external-harness turns
// (OpenDriverTurn, ended with an unknown total sometimes), and may abort
// the run (RootHandle.Abort). Each run's journal is then cut at a random
// record, as a process killed there leaves it, and resumed — sometimes
// after the run's deadline passed (Pool.Readmit of what it held). After
// every step the pool conserves on all three channels
// (Readout.Conserved); after every run no ticket is open, spentTotal's
// known flags are truthful (a node whose tokens are unknown makes
// tokensKnown false and is named in spendGaps; unknown is never 0), and
// no child the cut journal held settled is executed again.
func TestConservationAcrossNewRunEnds(t *testing.T) {
	sequences := uint64(2000)
	if testing.Short() || raceEnabled {
		sequences = 200
	}
	var st endsStats
	for seed := range sequences {
		runEndsSequence(t, seed, &st)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
	t.Logf("%+v", st)
	if st.resumes == 0 || st.pastDeadline == 0 || st.aborts == 0 || st.trips == 0 || st.nested == 0 || st.keyed == 0 ||
		st.unknown == 0 || st.driverTurns == 0 || st.inDoubt == 0 || st.gapsChecked == 0 || st.notRerun == 0 || st.keyedNotRerun == 0 || st.managerGaps == 0 ||
		st.carvedChecks == 0 || st.carvedEnds == 0 {
		t.Errorf("the sequences exercised too little: %+v", st)
	}
}

func runEndsSequence(t *testing.T, seed uint64, st *endsStats) {
	t.Helper()
	st.sequences++
	rng := rand.New(rand.NewPCG(seed, 0xe4d5))
	dir := t.TempDir()
	start := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	clock := &manualClock{now: start}
	maxRestarts, within := 0, time.Duration(0)
	if rng.IntN(2) == 0 {
		maxRestarts, within = rng.IntN(3), time.Hour
	}
	brainSeed := rng.Uint64()
	steps := 3 + rng.IntN(8)
	ctx := supervise.WithUnsyncedJournal(context.Background())
	run := func(phase string, resume bool) {
		t.Helper()
		st.runs++
		where := func(step int, what string) string {
			return fmt.Sprintf("seed %d, %s, step %d (%s)", seed, phase, step, what)
		}
		exec := &endsExec{}
		writer, err := profile.Parse([]byte(writerProfile))
		if err != nil {
			t.Fatal(err)
		}
		root := supervise.NewRootHandle()
		o := supervise.Options{
			Budget:      ledger.Budget{Tokens: i64(4_000), Iterations: i64(40), MicroUSD: i64(400_000)},
			PerWorker:   ledger.Budget{Tokens: i64(200), Iterations: i64(2), MicroUSD: i64(20_000)},
			Profiles:    map[string]*profile.Profile{"writer": writer, "lead": leadProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)},
			Deliverable: doneCheck, Executor: exec, RunDir: dir, RunID: "ends", Resume: resume,
			MaxLiveWorkers: 4, MaxDepth: 2, Now: clock.Now, Deadline: start.Add(time.Hour),
			MaxRestarts: maxRestarts, RestartsWithin: within, Root: root,
		}
		// check runs on the root brain's goroutine and on the leads':
		// it counts under a lock and fails with Errorf (the sequence
		// loop stops at the first failed seed).
		var stepsMu sync.Mutex
		check := func(c *supervise.Coordinator, what string, step int) {
			t.Helper()
			stepsMu.Lock()
			st.steps++
			stepsMu.Unlock()
			if err := c.Readout().Conserved(); err != nil {
				t.Errorf("%s: %v", where(step, what), err)
			}
			// A lead's carved pool (its grant) conserves too.
			if r, ok := c.CarvedReadout(c.Self()); ok {
				stepsMu.Lock()
				st.carvedChecks++
				stepsMu.Unlock()
				if err := r.Conserved(); err != nil {
					t.Errorf("%s: %s's carved pool: %v", where(step, what), c.Self(), err)
				}
			}
		}
		// awaitSettled waits for id's settlement, passing over others (a
		// resumed run delivers the journal's settlements first) but
		// remembering them: a settlement already taken is not awaited
		// again. It gives up when the view idles or stops.
		var seenMu sync.Mutex
		seen := map[supervise.NodeID]bool{}
		awaitSettled := func(ctx context.Context, c *supervise.Coordinator, id supervise.NodeID) {
			for ctx.Err() == nil {
				seenMu.Lock()
				done := seen[id]
				seenMu.Unlock()
				if done {
					return
				}
				r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000, Kinds: []string{supervise.EventSettled}})
				switch {
				case r.Pending: // every awaited worker settles at once
					t.Errorf("seed %d, %s: awaiting %s ran out: %+v", seed, phase, id, r)
					return
				case err != nil || r.Idle || r.Stopped:
					return
				case r.Event != nil:
					seenMu.Lock()
					seen[r.Event.WorkerID] = true
					seenMu.Unlock()
				}
			}
		}
		// spawn admits one worker and, unless it holds, awaits it.
		spawn := func(ctx context.Context, c *supervise.Coordinator, a supervise.SpawnArgs) bool {
			r, err := c.Spawn(ctx, a)
			var refusal *supervise.Refusal
			switch {
			case errors.As(err, &refusal):
				return false
			case err != nil:
				if ctx.Err() == nil {
					t.Errorf("spawn %+v: %v", a, err)
				}
				return false
			}
			if !strings.HasPrefix(a.Task, "hold") {
				awaitSettled(ctx, c, r.WorkerID)
			}
			return true
		}
		o.ManagerBrain = func(*profile.Profile) supervise.Brain {
			return goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
				// A lead's children follow from its task: deterministic across
				// resumes.
				kinds := []string{"ok", "unknown", "crash"}
				n := len(task) % 3
				for i := range 1 + n {
					spawn(ctx, c, supervise.SpawnArgs{Profile: "writer", Task: fmt.Sprintf("%s %s/%d", kinds[(i+n)%3], task, i)})
					check(c, "lead "+task, i)
				}
				return supervise.BrainReport{Text: "DONE"}, nil
			})
		}
		var rootView *supervise.Coordinator
		// What the brain left unknown of its own spend in this process
		// (a Meter without dollars, a driver turn ended without a total):
		// the result must report it unknown, in the manager's gap.
		var mgrTokensUnknown, mgrUSDUnknown bool
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			rootView = c
			brng := rand.New(rand.NewPCG(brainSeed, 1))
			check(c, "replayed", -1)
			for step := range steps {
				if ctx.Err() != nil {
					return supervise.BrainReport{}, nil
				}
				task := func(kind string) string { return fmt.Sprintf("%s s%d", kind, step) }
				switch k := brng.IntN(100); {
				case k < 25:
					spawn(ctx, c, supervise.SpawnArgs{Profile: "writer", Task: task("ok")})
				case k < 35:
					a := supervise.SpawnArgs{Profile: "writer", Task: task("ok"), Key: fmt.Sprintf("key-%d", step)}
					if spawn(ctx, c, a) {
						st.keyed++
					}
				case k < 47:
					spawn(ctx, c, supervise.SpawnArgs{Profile: "writer", Task: task("crash")})
				case k < 57:
					kind := "unknown"
					if brng.IntN(8) == 0 {
						kind = "unknown-all"
					}
					if spawn(ctx, c, supervise.SpawnArgs{Profile: "writer", Task: task(kind)}) {
						st.unknown++
					}
				case k < 64:
					spawn(ctx, c, supervise.SpawnArgs{Profile: "writer", Task: task("hold")})
				case k < 76:
					// Half the leads are granted what their children
					// reserve (three writers of 200 tokens, 2 iterations
					// and $0.02); the others have the per-worker budget,
					// which their second writer outruns (refused
					// budget-exhausted by the lead's pool, not the run's).
					a := supervise.SpawnArgs{Profile: "lead", Task: fmt.Sprintf("lead s%d", step)}
					if step%2 == 0 {
						tokens, iterations, usd := int64(600), int64(6), 0.06
						a.Budget = &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations, USD: &usd}
					}
					if spawn(ctx, c, a) {
						st.nested++
					}
				case k < 84:
					u := ledger.Usage{InputTokens: ledger.ExactAmount[int64](15), CostUSD: ledger.ExactAmount(0.0001)}
					if brng.IntN(3) == 0 {
						u.CostUSD = ledger.Amount[float64]{}
					}
					if err := c.Meter(ctx, u); err != nil {
						if ctx.Err() == nil {
							t.Errorf("%s: meter: %v", where(step, "meter"), err)
						}
					} else if !u.CostUSD.Reported {
						mgrUSDUnknown = true
					}
				case k < 94:
					turn, err := c.OpenDriverTurn(ctx)
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("%s: open driver turn: %v", where(step, "turn"), err)
						}
						break
					}
					st.driverTurns++
					u := ledger.Usage{InputTokens: ledger.ExactAmount[int64](20), CostUSD: ledger.ExactAmount(0.0002)}
					_ = turn.Meter(ctx, u)
					check(c, "driver turn metered", step)
					var total *ledger.Usage
					if brng.IntN(3) != 0 {
						all := ledger.Usage{InputTokens: ledger.ExactAmount[int64](30), CostUSD: ledger.ExactAmount(0.0003)}
						total = &all
					}
					if err := turn.End(ctx, total); err == nil && total == nil {
						mgrTokensUnknown, mgrUSDUnknown = true, true
					}
				default:
					if err := root.Abort("property"); err != nil {
						t.Errorf("%s: abort: %v", where(step, "abort"), err)
					}
					st.aborts++
					check(c, "aborted", step)
					return supervise.BrainReport{}, nil
				}
				check(c, "step", step)
			}
			return supervise.BrainReport{Text: "DONE"}, nil
		})
		// What the journal holds settled before this run: none of it may
		// execute again, nor may a keyed spawn's task whose worker settled
		// (the brain's same key replays it).
		settledNodes, settledTasks := map[supervise.NodeID]bool{}, map[string]bool{}
		if resume {
			recs, _, err := supervise.ReadRunDir(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			keyed := map[supervise.NodeID]string{}
			for _, r := range recs {
				switch r.Kind {
				case supervise.KindSpawned:
					if r.Key != "" {
						keyed[r.Node] = r.Task
					}
				case supervise.KindSettled:
					settledNodes[r.Node] = true
					if tk, ok := keyed[r.Node]; ok {
						settledTasks[tk] = true
					}
				}
			}
		}
		res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
		if err != nil {
			t.Fatalf("%s: %v", where(-1, "run"), err)
		}
		if res.Status == "" {
			t.Fatalf("%s: no result", where(-1, "run"))
		}
		if resume {
			st.resumes++
			if !res.Resumed {
				t.Fatalf("%s: not resumed", where(-1, "run"))
			}
		}
		if res.Breaker != nil {
			st.trips++
			if res.Reason != supervise.ReasonAllChildrenDown {
				t.Fatalf("%s: breaker tripped, reason %s", where(-1, "end"), res.Reason)
			}
		}
		for id := range settledNodes {
			if n := exec.ran(id); n != 0 {
				t.Fatalf("%s: %s settled in the journal ran %d more times on resume", where(-1, "end"), id, n)
			}
			st.notRerun++
		}
		for tk := range settledTasks {
			if n := exec.count(tk); n != 0 {
				t.Fatalf("%s: keyed %q settled in the journal ran %d more times on resume", where(-1, "end"), tk, n)
			}
			st.keyedNotRerun++
		}
		if rootView != nil {
			r := rootView.Readout()
			if err := r.Conserved(); err != nil {
				t.Fatalf("%s: %v", where(-1, "end"), err)
			}
			if r.OpenTickets != 0 {
				t.Fatalf("%s: %d tickets open after the run ended", where(-1, "end"), r.OpenTickets)
			}
			for _, n := range res.Tree {
				cr, ok := rootView.CarvedReadout(n.ID)
				if !ok {
					continue
				}
				st.carvedEnds++
				if err := cr.Conserved(); err != nil {
					t.Fatalf("%s: %s's carved pool: %v", where(-1, "end"), n.ID, err)
				}
				if cr.OpenTickets != 0 {
					t.Fatalf("%s: %s's carved pool holds %d tickets after the run ended", where(-1, "end"), n.ID, cr.OpenTickets)
				}
			}
		} else if exec.total() != 0 {
			t.Fatalf("%s: the brain was not driven, yet %d workers executed", where(-1, "end"), exec.total())
		}
		checkKnownFlags(t, res, where(-1, "end"), st)
		if mgrTokensUnknown || mgrUSDUnknown {
			st.managerGaps++
			var gap *supervise.SpendGap
			for i, g := range res.SpendGaps {
				if g.Label == "manager" {
					gap = &res.SpendGaps[i]
				}
			}
			if gap == nil || mgrTokensUnknown && (res.Spent.TokensKnown || !slices.Contains(gap.Channels, ledger.ChannelTokens)) ||
				mgrUSDUnknown && (res.Spent.USDKnown || !slices.Contains(gap.Channels, ledger.ChannelUSD)) {
				t.Fatalf("%s: the manager's spend was left unknown (tokens %v, usd %v), but the result says %+v, gaps %+v",
					where(-1, "end"), mgrTokensUnknown, mgrUSDUnknown, res.Spent, res.SpendGaps)
			}
		}
	}
	run("first run", false)
	for crash := range 1 + rng.IntN(3) {
		cutJournal(t, dir, rng)
		if rng.IntN(6) == 0 {
			clock.Advance(2 * time.Hour) // the deadline passes while the process is down
			st.pastDeadline++
		}
		run(fmt.Sprintf("resume %d", crash+1), true)
	}
}

// checkKnownFlags fails t unless res's spentTotal is truthful: every node
// whose spend on a channel is unknown (never settled, or settled without
// reporting it) makes that channel's Known flag false and is named in
// spendGaps with that channel.
func checkKnownFlags(t *testing.T, res supervise.SupervisedResult, where string, st *endsStats) {
	t.Helper()
	gaps := map[supervise.NodeID]map[string]bool{}
	for _, g := range res.SpendGaps {
		gaps[g.ID] = map[string]bool{}
		for _, ch := range g.Channels {
			gaps[g.ID][ch] = true
		}
	}
	for _, n := range res.Tree {
		if n.InDoubt {
			st.inDoubt++
		}
		var got ledger.Spend
		if n.Settlement != nil {
			got = n.Settlement.Spent
		}
		for _, c := range []struct {
			ch    string
			v     *int64
			known bool
		}{{ledger.ChannelTokens, got.Tokens, res.Spent.TokensKnown}, {ledger.ChannelUSD, got.MicroUSD, res.Spent.USDKnown},
			{ledger.ChannelIterations, got.Iterations, res.Spent.IterationsKnown}} {
			if c.v != nil {
				continue
			}
			st.gapsChecked++
			if c.known {
				t.Fatalf("%s: %s's %s is unknown (settlement %+v), but spentTotal claims it known: %+v", where, n.ID, c.ch, n.Settlement, res.Spent)
			}
			if !gaps[n.ID][c.ch] {
				t.Fatalf("%s: %s's %s is unknown, but spendGaps %+v does not name it", where, n.ID, c.ch, res.SpendGaps)
			}
		}
	}
}
