package supervise_test

// Outside scenarios for the conserved pool (spec/runtime.md §3.6, §6;
// §15 behaviours 36–39), written from the spec through the public
// Supervise API with a caller-owned brain and a gated executor.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

func osI64(v int64) *int64 { return &v }

// osProfile parses a profile document or fails the test.
func osProfile(t *testing.T, doc string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// osManager is a manager profile declaring the coordination verbs; a
// caller brain drives it, so its model is never called.
func osManager(t *testing.T) *profile.Profile {
	t.Helper()
	return osProfile(t, osManagerDoc())
}

// osManagerDoc is osManager's document.
func osManagerDoc() string {
	tools := map[string]bool{}
	for _, v := range []string{supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbObserveAgent, supervise.VerbSteerAgent, supervise.VerbStop} {
		tools[supervise.ToolPrefix+v] = true
	}
	doc, _ := json.Marshal(map[string]any{"name": "manager", "harness": "cli-base",
		"model": map[string]any{"default": "scripted/manager"}, "tools": tools})
	return string(doc)
}

const osWorkerProfile = `{"name": "worker", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/worker"}}`

// osRelease is what a gated worker returns when released.
type osRelease struct {
	spent ledger.Spend
	text  string
	err   error
}

// gatedExecutor holds every worker until the test releases it (or its
// context ends, when it returns what onCancel says it spent).
type gatedExecutor struct {
	mu       sync.Mutex
	gates    map[supervise.NodeID]chan osRelease
	started  map[supervise.NodeID]chan struct{}
	onCancel ledger.Spend
}

func newGated() *gatedExecutor {
	return &gatedExecutor{gates: map[supervise.NodeID]chan osRelease{}, started: map[supervise.NodeID]chan struct{}{}}
}

func (g *gatedExecutor) gate(id supervise.NodeID) (chan osRelease, chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[id] == nil {
		g.gates[id] = make(chan osRelease, 1)
		g.started[id] = make(chan struct{})
	}
	return g.gates[id], g.started[id]
}

func (g *gatedExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	gate, started := g.gate(w.Node)
	close(started)
	select {
	case r := <-gate:
		return supervise.WorkResult{Text: r.text, Spent: r.spent}, r.err
	case <-ctx.Done():
		return supervise.WorkResult{Spent: g.onCancel}, ctx.Err()
	}
}

func (g *gatedExecutor) release(id supervise.NodeID, r osRelease) {
	gate, _ := g.gate(id)
	gate <- r
}

// passCheck delivers every output that says DONE.
var passCheck = supervise.Deliverable{Describe: "say DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
	return kernel.Verdict{Passed: out.Text == "DONE"}, nil
}}

// funcBrain is a caller brain.
type funcBrain func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error)

func (f funcBrain) Drive(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
	return f(ctx, c, task)
}

// conserved reports a channel of r that does not conserve.
func conserved(r ledger.Readout) error {
	for _, ch := range []string{"tokens", "usd", "iterations"} {
		b, ok := r.Channels[ch]
		if !ok {
			return fmt.Errorf("readout has no %s channel: %+v", ch, r.Channels)
		}
		if b.Capped && b.Free+b.Reserved+b.Committed != b.Total {
			return fmt.Errorf("%s: free %d + reserved %d + committed %d != total %d", ch, b.Free, b.Reserved, b.Committed, b.Total)
		}
	}
	return r.Conserved()
}

// poolModel is the test's own account of what the pool must hold.
type poolModel struct {
	total               map[string]int64
	reserved, committed map[string]int64
	tainted             bool
	tokensKnown         bool
}

func (m *poolModel) free(ch string) int64 { return m.total[ch] - m.reserved[ch] - m.committed[ch] }

// admits says whether the pool must admit a ceiling, and if not, the
// refusal code and cause the spec orders first (§6: tainted dollars,
// tokens, iterations, dollars).
func (m *poolModel) admits(c map[string]int64) (bool, supervise.Code, string) {
	switch {
	case m.tainted && c["usd"] > 0:
		return false, supervise.CodeBudgetExhausted, "usd-tainted"
	case c["tokens"] > m.free("tokens"):
		return false, supervise.CodeBudgetExhausted, "tokens"
	case c["iterations"] > m.free("iterations"):
		return false, supervise.CodeBudgetExhausted, "iterations"
	case c["usd"] > m.free("usd"):
		return false, supervise.CodeBudgetExhausted, "usd"
	}
	return true, "", ""
}

func (m *poolModel) check(t *testing.T, step string, r ledger.Readout) {
	t.Helper()
	if err := conserved(r); err != nil {
		t.Fatalf("%s: behaviour 36: %v", step, err)
	}
	for _, ch := range []string{"tokens", "usd", "iterations"} {
		b := r.Channels[ch]
		got := [3]int64{b.Free, b.Reserved, b.Committed}
		want := [3]int64{m.free(ch), m.reserved[ch], m.committed[ch]}
		if got != want {
			t.Fatalf("%s: %s free/reserved/committed = %v, model says %v", step, ch, got, want)
		}
	}
	if r.USDTainted != m.tainted {
		t.Fatalf("%s: USDTainted = %v, model says %v", step, r.USDTainted, m.tainted)
	}
	if got := r.Channels["tokens"].Known; got != m.tokensKnown {
		t.Fatalf("%s: tokens Known = %v, model says %v (behaviour 39)", step, got, m.tokensKnown)
	}
}

// TestOutsidePoolRandomSequenceConserves (behaviours 36, 38, 39): a
// seeded random sequence of spawns with per-spawn budgets, settlements
// with known and unknown tokens and dollars, and cancellations through
// the run dir, driven by a caller brain; after every step the readout
// conserves on tokens, usd and iterations and matches the test's own
// model; every refusal leaves the pool byte-for-byte untouched.
func TestOutsidePoolRandomSequenceConserves(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("OUTSIDE_POOL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = v
	}
	for i := range uint64(4) {
		seed := seed + i
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d (rerun with OUTSIDE_POOL_SEED=%d)", seed, seed)
			runPoolSequence(t, seed)
		})
	}
}

func runPoolSequence(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	exec := newGated()
	exec.onCancel = ledger.Spend{Tokens: osI64(3), Iterations: osI64(0), MicroUSD: osI64(7)}
	const totTok, totIt, totUSD = 20_000, 40, 2_000_000
	m := &poolModel{total: map[string]int64{"tokens": totTok, "iterations": totIt, "usd": totUSD},
		reserved: map[string]int64{}, committed: map[string]int64{}, tokensKnown: true}
	per := ledger.Budget{Tokens: osI64(1_000), Iterations: osI64(2), MicroUSD: osI64(100_000)}
	type live struct {
		id      supervise.NodeID
		ceiling map[string]int64
	}
	var lives []live
	stats := map[string]int{}
	runDir := t.TempDir()
	var failed error
	brain := funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		m.check(t, "start", c.Readout())
		for step := range 60 {
			switch op := rng.IntN(10); {
			case op < 5 || len(lives) == 0: // spawn
				sb := &supervise.SpawnBudget{}
				ceiling := map[string]int64{"tokens": *per.Tokens, "iterations": *per.Iterations, "usd": *per.MicroUSD}
				if rng.IntN(2) == 0 {
					v := int64(1 + rng.IntN(6_000))
					sb.Tokens, ceiling["tokens"] = &v, v
				}
				if rng.IntN(3) == 0 {
					v := int64(1 + rng.IntN(5))
					sb.Iterations, ceiling["iterations"] = &v, v
				}
				if rng.IntN(3) == 0 {
					cents := int64(1 + rng.IntN(60))
					usd := float64(cents) / 100
					sb.USD, ceiling["usd"] = &usd, cents*10_000
				}
				before := c.Readout()
				ok, code, cause := m.admits(ceiling)
				res, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: fmt.Sprintf("step %d", step), Budget: sb})
				name := fmt.Sprintf("step %d spawn %v", step, ceiling)
				if ok {
					if err != nil {
						failed = fmt.Errorf("%s: refused %v, model admits it", name, err)
						return supervise.BrainReport{}, failed
					}
					for ch, v := range ceiling {
						m.reserved[ch] += v
					}
					lives = append(lives, live{res.WorkerID, ceiling})
					stats["admitted"]++
				} else {
					stats["refused "+cause]++
					var ref *supervise.Refusal
					if !errors.As(err, &ref) || ref.Code != code || ref.Cause != cause {
						failed = fmt.Errorf("%s: got %v (%#v), want refusal %s cause %s", name, err, ref, code, cause)
						return supervise.BrainReport{}, failed
					}
					if d := cmp.Diff(before, c.Readout()); d != "" {
						failed = fmt.Errorf("%s: behaviour 38: a refusal touched the pool (-before +after):\n%s", name, d)
						return supervise.BrainReport{}, failed
					}
				}
				m.check(t, name, c.Readout())
			case op < 9: // settle one live worker
				k := rng.IntN(len(lives))
				w := lives[k]
				lives = append(lives[:k], lives[k+1:]...)
				sp := ledger.Spend{Iterations: osI64(int64(rng.IntN(int(w.ceiling["iterations"]) + 1)))}
				tok := int64(rng.IntN(int(w.ceiling["tokens"]) + 1))
				usd := int64(rng.IntN(int(w.ceiling["usd"]) + 1))
				chargeTok, chargeUSD := tok, usd
				if rng.IntN(5) == 0 {
					chargeTok = w.ceiling["tokens"] // unknown: charged at the ceiling
				} else {
					sp.Tokens = &tok
				}
				unknownUSD := step > 45 && rng.IntN(3) == 0 // late: a taint refuses every later dollar request
				if unknownUSD {
					chargeUSD = w.ceiling["usd"]
				} else {
					sp.MicroUSD = &usd
				}
				_, started := exec.gate(w.id)
				<-started
				exec.release(w.id, osRelease{spent: sp, text: "DONE"})
				ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{"settled"}, TimeoutMS: 30_000})
				if err != nil || ev.Event == nil || ev.Event.WorkerID != w.id {
					failed = fmt.Errorf("step %d: await %s: %+v %v", step, w.id, ev, err)
					return supervise.BrainReport{}, failed
				}
				for ch, v := range w.ceiling {
					m.reserved[ch] -= v
				}
				m.committed["tokens"] += chargeTok
				m.committed["usd"] += chargeUSD
				m.committed["iterations"] += *sp.Iterations
				if sp.Tokens == nil {
					m.tokensKnown = false
				}
				if unknownUSD {
					m.tainted = true
				}
				stats["settled"]++
				m.check(t, fmt.Sprintf("step %d settle %s tokens=%v usd=%v", step, w.id, sp.Tokens != nil, !unknownUSD), c.Readout())
			default: // cancel one live worker through the run dir
				k := rng.IntN(len(lives))
				w := lives[k]
				lives = append(lives[:k], lives[k+1:]...)
				_, started := exec.gate(w.id)
				<-started
				if _, err := supervise.CancelWorker(ctx, c.RunDir(), string(w.id), fmt.Sprintf("op-%d", step), supervise.CancelOptions{}); err != nil {
					failed = err
					return supervise.BrainReport{}, err
				}
				ev, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{"settled"}, TimeoutMS: 30_000})
				if err != nil || ev.Event == nil || ev.Event.WorkerID != w.id {
					failed = fmt.Errorf("step %d: await cancelled %s: %+v %v", step, w.id, ev, err)
					return supervise.BrainReport{}, failed
				}
				for ch, v := range w.ceiling {
					m.reserved[ch] -= v
				}
				m.committed["tokens"] += *exec.onCancel.Tokens
				m.committed["usd"] += *exec.onCancel.MicroUSD
				m.committed["iterations"] += *exec.onCancel.Iterations
				stats["cancelled"]++
				m.check(t, fmt.Sprintf("step %d cancel %s", step, w.id), c.Readout())
			}
		}
		// Settle the rest so the run ends with nothing live.
		for _, w := range lives {
			_, started := exec.gate(w.id)
			<-started
			exec.release(w.id, osRelease{spent: ledger.Spend{Tokens: osI64(0), Iterations: osI64(0), MicroUSD: osI64(0)}, text: "no"})
			if _, err := c.Await(ctx, supervise.AwaitArgs{Kinds: []string{"settled"}, TimeoutMS: 30_000}); err != nil {
				return supervise.BrainReport{}, err
			}
			for ch, v := range w.ceiling {
				m.reserved[ch] -= v
			}
		}
		lives = nil
		m.check(t, "drained", c.Readout())
		return supervise.BrainReport{}, nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := supervise.Supervise(ctx, osManager(t), "random pool", supervise.Options{
		Budget: ledger.Budget{Tokens: osI64(totTok), Iterations: osI64(totIt), MicroUSD: osI64(totUSD)}, PerWorker: per,
		Profiles:    map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)},
		Deliverable: passCheck, Executor: exec, Brain: brain, RunDir: runDir, RunID: "pool",
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("steps: %v", stats)
	if stats["admitted"] == 0 || stats["settled"] == 0 {
		t.Fatalf("the sequence exercised too little: %v", stats)
	}
	if res.Spent.Tokens != m.committed["tokens"] || res.Spent.MicroUSD != m.committed["usd"] || res.Spent.Iterations != m.committed["iterations"] {
		t.Fatalf("spentTotal %+v, model committed %v", res.Spent, m.committed)
	}
	if res.Spent.TokensKnown != m.tokensKnown || res.Spent.USDKnown != !m.tainted {
		t.Fatalf("known flags %+v, model tokensKnown=%v tainted=%v", res.Spent, m.tokensKnown, m.tainted)
	}
	if res.Spent.TokensKnown != (len(gapsOn(res.SpendGaps, "tokens")) == 0) {
		t.Fatalf("behaviour 43: tokensKnown=%v but token gaps %+v", res.Spent.TokensKnown, res.SpendGaps)
	}
}

// gapsOn lists the gaps naming channel.
func gapsOn(gaps []supervise.SpendGap, channel string) []supervise.SpendGap {
	var out []supervise.SpendGap
	for _, g := range gaps {
		for _, c := range g.Channels {
			if c == channel {
				out = append(out, g)
			}
		}
	}
	return out
}

// TestOutsideUSDUnbudgetedAndTaint (behaviours 38, 39): a root without
// maxUsd refuses a dollar request usd-unbudgeted and untouched; under a
// dollar cap an unknown-dollar settlement taints the channel so the
// next dollar reservation is refused; unknown tokens only clear
// tokensKnown and admission goes on.
func TestOutsideUSDUnbudgetedAndTaint(t *testing.T) {
	t.Run("usd-unbudgeted", func(t *testing.T) {
		exec := newGated()
		var got error
		var before, after ledger.Readout
		brain := funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			before = c.Readout()
			usd := 0.01
			_, got = c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t", Budget: &supervise.SpawnBudget{USD: &usd}})
			after = c.Readout()
			return supervise.BrainReport{}, nil
		})
		_, err := supervise.Supervise(t.Context(), osManager(t), "usd", supervise.Options{
			Budget: ledger.Budget{Tokens: osI64(1000), Iterations: osI64(5)}, PerWorker: ledger.Budget{Tokens: osI64(100), Iterations: osI64(1)},
			Profiles:    map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)},
			Deliverable: passCheck, Executor: exec, Brain: brain, RunID: "usd",
		})
		if err != nil {
			t.Fatal(err)
		}
		var ref *supervise.Refusal
		if !errors.As(got, &ref) || ref.Code != supervise.CodeUSDUnbudgeted {
			t.Fatalf("spawn with maxUsd under an unbudgeted root: %v, want usd-unbudgeted", got)
		}
		if d := cmp.Diff(before, after); d != "" {
			t.Fatalf("usd-unbudgeted touched the pool:\n%s", d)
		}
	})
	t.Run("taint", func(t *testing.T) {
		exec := newGated()
		var steps []string
		brain := funcBrain(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			spawnSettle := func(sp ledger.Spend) error {
				r, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t"})
				if err != nil {
					return err
				}
				exec.release(r.WorkerID, osRelease{spent: sp, text: "DONE"})
				_, err = c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 30_000})
				return err
			}
			// Unknown tokens: tokensKnown false, admission continues.
			if err := spawnSettle(ledger.Spend{Iterations: osI64(1), MicroUSD: osI64(10)}); err != nil {
				return supervise.BrainReport{}, err
			}
			r := c.Readout()
			steps = append(steps, fmt.Sprintf("tokensKnown=%v tainted=%v", r.Channels["tokens"].Known, r.USDTainted))
			// Unknown dollars under the cap: tainted.
			if err := spawnSettle(ledger.Spend{Tokens: osI64(5), Iterations: osI64(1)}); err != nil {
				return supervise.BrainReport{}, err
			}
			r = c.Readout()
			steps = append(steps, fmt.Sprintf("usdKnown=%v tainted=%v", r.Channels["usd"].Known, r.USDTainted))
			before := c.Readout()
			_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "worker", Task: "t"})
			var ref *supervise.Refusal
			if errors.As(err, &ref) {
				steps = append(steps, fmt.Sprintf("refused %s/%s", ref.Code, ref.Cause))
			} else {
				steps = append(steps, fmt.Sprintf("admitted %v", err))
			}
			if d := cmp.Diff(before, c.Readout()); d != "" {
				steps = append(steps, "pool touched: "+d)
			}
			if err := conserved(c.Readout()); err != nil {
				steps = append(steps, err.Error())
			}
			return supervise.BrainReport{}, nil
		})
		res, err := supervise.Supervise(t.Context(), osManager(t), "taint", supervise.Options{
			Budget:      ledger.Budget{Tokens: osI64(10_000), Iterations: osI64(10), MicroUSD: osI64(1_000_000)},
			PerWorker:   ledger.Budget{Tokens: osI64(100), Iterations: osI64(1), MicroUSD: osI64(1_000)},
			Profiles:    map[string]*profile.Profile{"worker": osProfile(t, osWorkerProfile)},
			Deliverable: passCheck, Executor: exec, Brain: brain, RunID: "taint",
		})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"tokensKnown=false tainted=false", "usdKnown=false tainted=true", "refused budget-exhausted/usd-tainted"}
		if d := cmp.Diff(want, steps); d != "" {
			t.Fatalf("behaviour 39 (-want +got):\n%s", d)
		}
		// Behaviour 43: known flags false iff gaps on that channel.
		if res.Spent.TokensKnown || res.Spent.USDKnown {
			t.Fatalf("spentTotal claims known: %+v", res.Spent)
		}
		if len(gapsOn(res.SpendGaps, "tokens")) != 1 || len(gapsOn(res.SpendGaps, "usd")) != 1 {
			t.Fatalf("spendGaps %+v: want one unreported tokens gap and one unreported usd gap", res.SpendGaps)
		}
		for _, g := range res.SpendGaps {
			if g.Kind != supervise.GapUnreported {
				t.Fatalf("gap %+v: want unreported", g)
			}
		}
	})
}
