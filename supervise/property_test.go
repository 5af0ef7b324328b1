package supervise_test

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

const (
	propertySeeds = 200
	propertySteps = 500
)

// TestScopeConservesUnderRandomSequencesBehaviour36 is the property test of issue 13
// and behaviour 36 (checklist RTP-02, RG-04): random sequences of spawn,
// transition, settle, cancel, in-doubt, abort and close. After every step
// free + reserved + committed equals the root total on tokens, usd and
// iterations; the tree's spentTotal equals committed + reserved on each
// of them; the live count matches the pool's open tickets and never
// exceeds MaxLiveWorkers; and a refused spawn changed no counter.
func TestScopeConservesUnderRandomSequencesBehaviour36(t *testing.T) {
	refused := map[supervise.Code]int{}
	admitted, steps := 0, 0
	for seed := range uint64(propertySeeds) {
		rng := rand.New(rand.NewPCG(seed, 0x5c09e))
		usdCapped := seed%2 == 0
		root := ledger.Budget{Tokens: i64(20_000), Iterations: i64(200)}
		per := ledger.Budget{Tokens: i64(500), Iterations: i64(3)}
		if usdCapped {
			root.MicroUSD, per.MicroUSD = i64(2_000_000), i64(40_000)
		}
		maxLive := int(rng.IntN(6))
		f := newFixture(t, root, supervise.ScopeOptions{PerWorker: per, MaxLiveWorkers: maxLive, MaxDepth: 3,
			AllowedModels: []string{"small", "large"}})
		models := []string{"", "small", "large", "banned"}
		for step := range propertySteps {
			steps++
			nodes := f.scope.Nodes()
			var live []supervise.NodeInfo
			for _, n := range nodes {
				if n.State.Live() && !n.InDoubt && !n.NeverSettled {
					live = append(live, n)
				}
			}
			pickLive := func() (supervise.NodeInfo, bool) {
				if len(live) == 0 {
					return supervise.NodeInfo{}, false
				}
				return live[rng.IntN(len(live))], true
			}
			switch op := rng.IntN(100); {
			case op < 45: // spawn
				req := supervise.SpawnRequest{Profile: "p", Label: "w" + string(rune('a'+rng.IntN(4))),
					Model: models[rng.IntN(len(models))], Task: "t"}
				if n, ok := pickLive(); ok && rng.IntN(3) == 0 {
					req.Parent = n.ID
				}
				if rng.IntN(3) == 0 {
					req.Key = "k" + string(rune('0'+rng.IntN(6)))
					if rng.IntN(8) == 0 {
						req.Task = "other"
					}
				}
				if rng.IntN(6) == 0 {
					req.Continuity = supervise.ContinuityResume
				}
				if rng.IntN(2) == 0 {
					req.Budget.Tokens = i64(rng.Int64N(3_000))
				}
				if rng.IntN(20) == 0 {
					req.Budget.MicroUSD = i64(rng.Int64N(50_000)) // refused usd-unbudgeted on an uncapped root
				}
				before := snapshot(f)
				reply, err := f.scope.Spawn(req)
				if err != nil {
					code, ok := supervise.CodeOf(err)
					if !ok {
						t.Fatalf("seed %d step %d: untyped refusal %v", seed, step, err)
					}
					refused[code]++
					if after := snapshot(f); !reflect.DeepEqual(before, after) {
						t.Fatalf("seed %d step %d: refusal %v changed the scope", seed, step, err)
					}
				} else {
					admitted++
					if (maxLive > 0) != (reply.FreeSlots != nil) {
						t.Fatalf("seed %d step %d: reply %+v", seed, step, reply)
					}
				}
			case op < 55: // move a live node along
				if n, ok := pickLive(); ok {
					_ = f.scope.Transition(n.ID, allStates[rng.IntN(len(allStates))]) // illegal moves are refused
				}
			case op < 85: // settle with observed, overspent or partly unknown spend
				if n, ok := pickLive(); ok {
					states := []supervise.State{supervise.StateDone, supervise.StateFailed, supervise.StateCancelled}
					sp := ledger.Spend{Tokens: i64(rng.Int64N(*n.Reserved.Tokens + 100)), Iterations: i64(rng.Int64N(*n.Reserved.Iterations + 1)),
						MicroUSD: i64(rng.Int64N(40_000))}
					if rng.IntN(10) == 0 {
						sp.Tokens = nil
					}
					if rng.IntN(40) == 0 {
						sp.MicroUSD = nil
					}
					if _, err := f.scope.Settle(n.ID, supervise.Result{State: states[rng.IntN(3)], Spent: sp}); err != nil {
						var te *supervise.TransitionError
						if !errors.As(err, &te) {
							t.Fatalf("seed %d step %d: settle %v", seed, step, err)
						}
					}
				}
			case op < 93: // cancel
				if n, ok := pickLive(); ok {
					_, _ = f.scope.Cancel(n.ID, ledger.Spend{Tokens: i64(rng.Int64N(50)), Iterations: i64(0)})
				}
			case op < 96: // an execution lost without a receipt
				if n, ok := pickLive(); ok && rng.IntN(4) == 0 {
					if err := f.scope.MarkInDoubt(n.ID); err != nil {
						t.Fatal(err)
					}
				}
			case op < 98:
				if rng.IntN(20) == 0 {
					f.scope.Abort()
				}
			default:
				if step > propertySteps*9/10 {
					f.scope.Close()
				}
			}
			checkConserved(t, f, maxLive, seed, step)
		}
		f.scope.Close()
		checkConserved(t, f, maxLive, seed, propertySteps)
		if r := f.pool.Readout(); r.OpenTickets != 0 {
			t.Fatalf("seed %d: %d tickets open after close", seed, r.OpenTickets)
		}
	}
	t.Logf("%d steps, %d admitted, refusals %v", steps, admitted, refused)
	if admitted == 0 || len(refused) < 10 {
		t.Errorf("the sequences exercised too little: admitted %d, refusals %v", admitted, refused)
	}
}

func checkConserved(t *testing.T, f fixture, maxLive int, seed uint64, step int) {
	t.Helper()
	r := f.pool.Readout()
	tot := f.scope.Totals()
	for ch, spent := range map[string]int64{ledger.ChannelTokens: tot.Spent.Tokens, ledger.ChannelIterations: tot.Spent.Iterations,
		ledger.ChannelUSD: tot.Spent.MicroUSD} {
		b := r.Channels[ch]
		if b.Total != b.Free+b.Reserved+b.Committed {
			t.Fatalf("seed %d step %d: %s does not conserve: %+v", seed, step, ch, b)
		}
		if spent != b.Committed+b.Reserved {
			t.Fatalf("seed %d step %d: %s spentTotal %d != committed %d + reserved %d", seed, step, ch, spent, b.Committed, b.Reserved)
		}
		if ch != ledger.ChannelIterations && !b.Known && (ch == ledger.ChannelTokens && tot.Spent.TokensKnown || ch == ledger.ChannelUSD && tot.Spent.USDKnown) {
			t.Fatalf("seed %d step %d: the pool lost track of %s but the totals claim it known", seed, step, ch)
		}
	}
	// Every live node holds one ticket, in the pool it drew on: the
	// run's, or its nested manager's carved pool (which conserves too);
	// so does a nested manager that settled while its children still
	// hold theirs in its carved pool.
	open, holding := r.OpenTickets, 0
	for _, n := range f.scope.Nodes() {
		c, ok := f.scope.Carved(n.ID)
		if !ok {
			continue
		}
		if err := c.Conserved(); err != nil {
			t.Fatalf("seed %d step %d: %s's carved pool: %v", seed, step, n.ID, err)
		}
		open += c.OpenTickets
		if c.OpenTickets > 0 && n.Settlement != nil && !n.InDoubt && !n.NeverSettled {
			holding++
		}
	}
	live, _ := f.scope.Live()
	if live+holding != open || (maxLive > 0 && live > maxLive) {
		t.Fatalf("seed %d step %d: live %d and %d settled managers holding, open tickets %d, max %d", seed, step, live, holding, open, maxLive)
	}
}
