package ledger_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/ledger"
)

func i64(v int64) *int64 { return &v }

func conserved(t *testing.T, r ledger.Readout) {
	t.Helper()
	for ch, b := range r.Channels {
		if b.Total != b.Free+b.Reserved+b.Committed {
			t.Fatalf("%s does not conserve: %+v", ch, b)
		}
	}
}

// Issue 4 "Budget property test": 32 goroutines reserving and settling at
// random never overspend and always conserve.
func TestPoolConservesUnderConcurrency(t *testing.T) {
	for seed := range uint64(20) {
		pool, err := ledger.NewPool(ledger.Budget{Tokens: i64(100_000), Iterations: i64(500), MicroUSD: i64(5_000_000),
			Resources: map[string]int64{"gpu-seconds": 3_000}}, ledger.PoolOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted, refused := 0, 0
		for w := range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				for range 200 {
					req := ledger.Budget{Tokens: i64(rng.Int64N(3_000)), Iterations: i64(rng.Int64N(10)),
						MicroUSD: i64(rng.Int64N(100_000)), Resources: map[string]int64{"gpu-seconds": rng.Int64N(50)}}
					ticket, err := pool.Reserve(req)
					if err != nil {
						if !errors.Is(err, ledger.ErrExhausted) {
							t.Errorf("Reserve: %v", err)
						}
						mu.Lock()
						refused++
						mu.Unlock()
						continue
					}
					mu.Lock()
					admitted++
					mu.Unlock()
					conserved(t, pool.Readout())
					spend := ledger.Spend{
						Tokens:     i64(rng.Int64N(*req.Tokens + 1)),
						Iterations: i64(rng.Int64N(*req.Iterations + 1)),
						MicroUSD:   i64(rng.Int64N(*req.MicroUSD + 1)),
						Resources:  map[string]*int64{"gpu-seconds": i64(rng.Int64N(req.Resources["gpu-seconds"] + 1))},
					}
					if err := pool.Settle(ticket, spend); err != nil {
						t.Errorf("Settle: %v", err)
					}
					if err := pool.Settle(ticket, spend); !errors.Is(err, ledger.ErrTicket) {
						t.Errorf("second Settle = %v, want ErrTicket", err)
					}
				}
			}()
		}
		wg.Wait()
		r := pool.Readout()
		conserved(t, r)
		for ch, b := range r.Channels {
			if b.Capped && (b.Free < 0 || b.Committed > b.Total) {
				t.Errorf("seed %d: %s overspent: %+v", seed, ch, b)
			}
			if b.Reserved != 0 {
				t.Errorf("seed %d: %s still reserved: %+v", seed, ch, b)
			}
		}
		if r.OpenTickets != 0 || len(r.Violations) != 0 || admitted == 0 || refused == 0 {
			t.Errorf("seed %d: open %d, violations %d, admitted %d, refused %d", seed, r.OpenTickets, len(r.Violations), admitted, refused)
		}
	}
}

func TestReserveRefusesWhatDoesNotFit(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(100), Iterations: i64(2)}, ledger.PoolOptions{})
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(60), Iterations: i64(1)}); err != nil {
		t.Fatal(err)
	}
	_, err := pool.Reserve(ledger.Budget{Tokens: i64(60), Iterations: i64(1)})
	var ee *ledger.ExhaustedError
	if !errors.As(err, &ee) || ee.Channel != ledger.ChannelTokens || ee.Free != 40 {
		t.Fatalf("err = %v", err)
	}
	// A refused reservation moves nothing: atomic across channels.
	if b := pool.Readout().Channels[ledger.ChannelIterations]; b.Reserved != 1 {
		t.Errorf("iterations after refusal: %+v", b)
	}
	if _, err := pool.Reserve(ledger.Budget{MicroUSD: i64(1)}); !errors.Is(err, ledger.ErrUSDUnbudgeted) {
		t.Errorf("usd from a pool without a usd ceiling: %v", err)
	}
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(-1)}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("negative request: %v", err)
	}
}

func TestUnknownSpendIsChargedAndStaysUnknown(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000_000)}, ledger.PoolOptions{})
	tk, err := pool.Reserve(ledger.Budget{Tokens: i64(300), Iterations: i64(1), MicroUSD: i64(200_000)})
	if err != nil {
		t.Fatal(err)
	}
	// The worker ran one iteration, its tokens and dollars were not reported.
	if err := pool.Settle(tk, ledger.Spend{Iterations: i64(1)}); err != nil {
		t.Fatal(err)
	}
	r := pool.Readout()
	conserved(t, r)
	tokens := r.Channels[ledger.ChannelTokens]
	if tokens.Known || tokens.Committed != 300 || tokens.Free != 700 {
		t.Errorf("unknown tokens must be charged in full and marked unknown: %+v", tokens)
	}
	if !r.USDTainted {
		t.Error("unknown dollars under a dollar ceiling must taint the dollar channel")
	}
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(1)}); !errors.Is(err, ledger.ErrUSDTainted) {
		t.Errorf("reservation after taint: %v", err)
	}
}

func TestOverspendIsCommittedAndReported(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10)}, ledger.PoolOptions{})
	tk, _ := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)})
	if err := pool.Settle(tk, ledger.Spend{Tokens: i64(150), Iterations: i64(1)}); err != nil {
		t.Fatal(err)
	}
	r := pool.Readout()
	conserved(t, r)
	if b := r.Channels[ledger.ChannelTokens]; b.Committed != 150 || b.Free != 850 {
		t.Errorf("tokens %+v", b)
	}
	if len(r.Violations) != 1 || r.Violations[0].Overspent != 50 {
		t.Errorf("violations %+v", r.Violations)
	}
}

func TestObserveAndNamedResources(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(100), Iterations: i64(10), Resources: map[string]int64{"box-minutes": 60}}, ledger.PoolOptions{})
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(1), Iterations: i64(1)}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("a reservation must declare every enforced channel: %v", err)
	}
	pool.Observe(ledger.Spend{Tokens: i64(150), Iterations: i64(0)})
	r := pool.Readout()
	conserved(t, r)
	if b := r.Channels[ledger.ChannelTokens]; b.Free != -50 || b.Committed != 150 {
		t.Errorf("observed spend %+v", b)
	}
}

// Restart never mints capacity: open reservations are charged in full.
func TestRestoreChargesOpenReservations(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10)}, ledger.PoolOptions{})
	done, _ := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)})
	_ = pool.Settle(done, ledger.Spend{Tokens: i64(40), Iterations: i64(1)})
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(300), Iterations: i64(2)}); err != nil {
		t.Fatal(err)
	}
	snap := pool.Snapshot()
	restored, err := ledger.Restore(snap, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := restored.Readout()
	conserved(t, r)
	tokens := r.Channels[ledger.ChannelTokens]
	if tokens.Free != 660 || tokens.Committed != 340 || tokens.Reserved != 0 || tokens.Known {
		t.Errorf("restored tokens %+v", tokens)
	}
	if r.OpenTickets != 0 {
		t.Error("restored pool kept the dead ticket")
	}
	bad := snap
	bad.Channels = map[string]ledger.Balance{ledger.ChannelTokens: {Total: 10, Free: 11}}
	if _, err := ledger.Restore(bad, ledger.PoolOptions{}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("a non-conserving snapshot was restored: %v", err)
	}
}

func TestDeadlineIsAbsolute(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(10), Iterations: i64(10)}, ledger.PoolOptions{Deadline: now.Add(time.Minute), Now: clock})
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(1)}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(1)}); !errors.Is(err, ledger.ErrDeadline) {
		t.Errorf("after the deadline: %v", err)
	}
	restored, _ := ledger.Restore(pool.Snapshot(), ledger.PoolOptions{Now: clock})
	if _, err := restored.Reserve(ledger.Budget{Tokens: i64(1)}); !errors.Is(err, ledger.ErrDeadline) {
		t.Errorf("the deadline slid on restore: %v", err)
	}
}

// A reservation the journal already holds is re-admitted on resume
// after the deadline passed (Readmit): the deadline refuses new work, not
// the replay of work it admitted. Every other rule still holds.
func TestReadmitPastTheDeadline(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now.Add(time.Hour) }
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(10), Iterations: i64(10)}, ledger.PoolOptions{Deadline: now.Add(time.Minute), Now: clock})
	tk, err := pool.Readmit(ledger.Budget{Tokens: i64(4), Iterations: i64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if b := pool.Readout().Channels[ledger.ChannelTokens]; b.Reserved != 4 || b.Free != 6 {
		t.Errorf("readmitted tokens %+v, want 4 reserved, 6 free", b)
	}
	if _, err := pool.Readmit(ledger.Budget{Tokens: i64(7)}); !errors.Is(err, ledger.ErrExhausted) {
		t.Errorf("a readmission past the balance: %v, want ErrExhausted", err)
	}
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(1)}); !errors.Is(err, ledger.ErrDeadline) {
		t.Errorf("a new reservation after the deadline: %v", err)
	}
	if err := pool.Settle(tk, ledger.Spend{Tokens: i64(3), Iterations: i64(1)}); err != nil {
		t.Fatal(err)
	}
}

// Readout.Conserved is the pool's invariant: it holds across reserve,
// settle (known, unknown, overspent) and observe, and names a channel
// that breaks it.
func TestReadoutConserved(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(100), Iterations: i64(10), MicroUSD: i64(1000)}, ledger.PoolOptions{})
	check := func(step string) {
		t.Helper()
		if err := pool.Readout().Conserved(); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	a, _ := pool.Reserve(ledger.Budget{Tokens: i64(30), Iterations: i64(1), MicroUSD: i64(100)})
	b, _ := pool.Reserve(ledger.Budget{Tokens: i64(30), Iterations: i64(1), MicroUSD: i64(100)})
	check("reserved")
	_ = pool.Settle(a, ledger.Spend{Tokens: i64(40), Iterations: i64(1), MicroUSD: i64(5)})
	check("overspent")
	_ = pool.Settle(b, ledger.Spend{Iterations: i64(1)})
	check("unknown")
	pool.Observe(ledger.Spend{Tokens: i64(7), Iterations: i64(1)})
	check("observed")
	r := pool.Readout()
	bad := r.Channels[ledger.ChannelTokens]
	bad.Free++
	r.Channels[ledger.ChannelTokens] = bad
	if err := r.Conserved(); !errors.Is(err, ledger.ErrNotConserved) || !strings.Contains(err.Error(), ledger.ChannelTokens) {
		t.Errorf("a broken readout: %v", err)
	}
}

// Behaviour 37: settling the same ticket twice is refused and changes no
// balance; a ticket settled with invalid spend is still closed.
func TestSettleTwiceRefusedBehaviour37(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10)}, ledger.PoolOptions{})
	tk, err := pool.Reserve(ledger.Budget{Tokens: i64(300), Iterations: i64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Settle(tk, ledger.Spend{Tokens: i64(120), Iterations: i64(1)}); err != nil {
		t.Fatal(err)
	}
	before := pool.Readout()
	if err := pool.Settle(tk, ledger.Spend{Tokens: i64(1), Iterations: i64(1)}); !errors.Is(err, ledger.ErrTicket) {
		t.Fatalf("second settle: %v; want ErrTicket", err)
	}
	after := pool.Readout()
	if after.Channels[ledger.ChannelTokens] != before.Channels[ledger.ChannelTokens] || after.Channels[ledger.ChannelIterations] != before.Channels[ledger.ChannelIterations] {
		t.Errorf("balances changed by a refused settle: %+v → %+v", before.Channels, after.Channels)
	}
	// Invalid spend: refused, and the ticket is closed anyway.
	bad, err := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Settle(bad, ledger.Spend{Tokens: i64(-5), Iterations: i64(1)}); !errors.Is(err, ledger.ErrInvalid) {
		t.Fatalf("negative spend: %v; want ErrInvalid", err)
	}
	r := pool.Readout()
	conserved(t, r)
	if r.OpenTickets != 0 || len(pool.OpenTickets()) != 0 {
		t.Errorf("%d tickets still open after the invalid settle", r.OpenTickets)
	}
	if err := pool.Settle(bad, ledger.Spend{Tokens: i64(1), Iterations: i64(1)}); !errors.Is(err, ledger.ErrTicket) {
		t.Errorf("settling the closed ticket again: %v; want ErrTicket", err)
	}
}

// Behaviour 39: unknown dollars under a dollar-capped root taint the
// dollar channel — every later reservation is refused — while unknown
// tokens only mark the token channel unknown and admission continues.
func TestUnknownSpendTaintBehaviour39(t *testing.T) {
	t.Run("unknown tokens", func(t *testing.T) {
		pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000_000)}, ledger.PoolOptions{})
		tk, _ := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1), MicroUSD: i64(1000)})
		if err := pool.Settle(tk, ledger.Spend{Iterations: i64(1), MicroUSD: i64(500)}); err != nil {
			t.Fatal(err)
		}
		r := pool.Readout()
		if r.Channels[ledger.ChannelTokens].Known || r.USDTainted {
			t.Fatalf("tokens known %v, dollars tainted %v; want tokens unknown, dollars clean", r.Channels[ledger.ChannelTokens].Known, r.USDTainted)
		}
		if _, err := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1), MicroUSD: i64(1000)}); err != nil {
			t.Errorf("admission after unknown tokens: %v; want it to continue", err)
		}
	})
	t.Run("unknown dollars", func(t *testing.T) {
		pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000_000)}, ledger.PoolOptions{})
		tk, _ := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1), MicroUSD: i64(1000)})
		if err := pool.Settle(tk, ledger.Spend{Tokens: i64(50), Iterations: i64(1)}); err != nil {
			t.Fatal(err)
		}
		if !pool.Readout().USDTainted {
			t.Fatal("unknown dollars under a dollar ceiling did not taint the channel")
		}
		for _, b := range []ledger.Budget{{Tokens: i64(1), Iterations: i64(1), MicroUSD: i64(1)}, {Tokens: i64(1), Iterations: i64(1)}} {
			if _, err := pool.Reserve(b); !errors.Is(err, ledger.ErrUSDTainted) {
				t.Errorf("reserve %+v after the taint: %v; want ErrUSDTainted", b, err)
			}
		}
	})
}

// Truthful spend: on a pool without a dollar ceiling, dollars nobody
// reported are unknown, never a known $0; the dollar balance is a known
// total only when every settlement and observation reported dollars. An
// uncapped pool is never tainted by it (nothing to enforce).
func TestUncappedDollarsKnownOnlyWhenReported(t *testing.T) {
	tests := []struct {
		name      string
		settle    []ledger.Spend
		observe   []ledger.Spend
		wantKnown bool
		wantUSD   int64
	}{
		{name: "nothing spent", wantKnown: true},
		{name: "every worker reported", settle: []ledger.Spend{
			{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(0)},
			{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(7)},
		}, wantKnown: true, wantUSD: 7},
		{name: "no worker reported a cost", settle: []ledger.Spend{
			{Tokens: i64(10), Iterations: i64(1)},
		}},
		{name: "one of two reported", settle: []ledger.Spend{
			{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(5)},
			{Tokens: i64(10), Iterations: i64(1)},
		}, wantUSD: 5},
		{name: "the driver's own call reported no cost", observe: []ledger.Spend{{Tokens: i64(3), Iterations: i64(0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool, err := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10)}, ledger.PoolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, sp := range tt.settle {
				tk, err := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)})
				if err != nil {
					t.Fatal(err)
				}
				if err := pool.Settle(tk, sp); err != nil {
					t.Fatal(err)
				}
			}
			for _, sp := range tt.observe {
				pool.Observe(sp)
			}
			r := pool.Readout()
			usd := r.Channels[ledger.ChannelUSD]
			if usd.Known != tt.wantKnown || usd.Committed != tt.wantUSD {
				t.Errorf("dollars %+v, want known=%v committed=%d", usd, tt.wantKnown, tt.wantUSD)
			}
			if r.USDTainted {
				t.Error("an uncapped pool must not be tainted")
			}
			if _, err := pool.Reserve(ledger.Budget{Tokens: i64(1), Iterations: i64(1)}); err != nil {
				t.Errorf("unknown uncapped dollars must not block reservations: %v", err)
			}
		})
	}
}

// Spec §6: observe never refuses and taint is reconcile's rule: a driver
// call that reported no dollars under a dollar ceiling makes the dollar
// total unknown (a ceiling) but does not refuse later reservations.
func TestObserveUnknownDollarsUnderCapDoesNotTaint(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000)}, ledger.PoolOptions{})
	pool.Observe(ledger.Spend{Tokens: i64(5), Iterations: i64(0)})
	r := pool.Readout()
	conserved(t, r)
	if usd := r.Channels[ledger.ChannelUSD]; usd.Known || r.USDTainted {
		t.Errorf("dollars %+v tainted %v, want unknown and untainted", usd, r.USDTainted)
	}
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(1), Iterations: i64(1), MicroUSD: i64(1)}); err != nil {
		t.Errorf("reservation after an observed unknown: %v", err)
	}
}

// Spec §6: spend is validated as non-negative safe integers. Quantities
// past 2^53-1 are refused in ceilings and reservations and never trusted
// as spend: however absurd a reported usage, the arithmetic cannot wrap
// and mint capacity, and the channel becomes unknown instead.
func TestQuantitiesBeyondSafeIntegersNeverMintCapacity(t *testing.T) {
	huge := int64(1<<62 + 1000)
	if _, err := ledger.NewPool(ledger.Budget{Tokens: i64(ledger.MaxQuantity + 1), Iterations: i64(1)}, ledger.PoolOptions{}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("a ceiling past MaxQuantity: %v, want ErrInvalid", err)
	}
	pool, err := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10)}, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(ledger.MaxQuantity + 1)}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("a reservation past MaxQuantity: %v, want ErrInvalid", err)
	}
	// Observed spend: two absurd reports would wrap committed to
	// negative and free to a huge positive balance.
	pool.Observe(ledger.Spend{Tokens: &huge, Iterations: i64(0)})
	pool.Observe(ledger.Spend{Tokens: &huge, Iterations: i64(0)})
	// Settled spend likewise.
	tk, err := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)})
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Settle(tk, ledger.Spend{Tokens: &huge, Iterations: i64(1)}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("settling an absurd spend: %v, want ErrInvalid", err)
	}
	r := pool.Readout()
	conserved(t, r)
	tokens := r.Channels[ledger.ChannelTokens]
	if tokens.Known || tokens.Free > 1000 || tokens.Committed < 0 {
		t.Errorf("tokens after absurd spend: %+v; want unknown, free ≤ the total, committed ≥ 0", tokens)
	}
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(901), Iterations: i64(1)}); !errors.Is(err, ledger.ErrExhausted) {
		t.Errorf("reserving more than the 900 left: %v, want ErrExhausted (capacity minted)", err)
	}
	// Many valid but large observations saturate into unknown, never wrap.
	for range 4096 {
		pool.Observe(ledger.Spend{Tokens: i64(ledger.MaxQuantity), Iterations: i64(0)})
	}
	r = pool.Readout()
	conserved(t, r)
	if tk := r.Channels[ledger.ChannelTokens]; tk.Committed < 0 || tk.Free > 1000 {
		t.Errorf("tokens after 4096 maximal observations: %+v", tk)
	}
}

// Spec §6 reconcile, behaviour 39: a child that declared no maxUsd under
// a dollar-capped root reserved no dollars, yet its dollars are still
// spent against that root: when it reports none, the root's dollar
// balance is no longer a sound bound, so the channel is tainted and
// later reservations are refused, as for a child that declared one (the
// reference's budget.ts: unknownUnderCap is the root's cap and the
// spend's usdKnown, whatever the child declared). Known dollars of such a
// child are observed spend, debited from free.
func TestUndeclaredDollarsUnderCapBehaviour39(t *testing.T) {
	for _, tc := range []struct {
		name        string
		spent       ledger.Spend
		wantTainted bool
		wantFree    int64
	}{
		{"unreported", ledger.Spend{Tokens: i64(50), Iterations: i64(1)}, true, 1_000},
		{"reported", ledger.Spend{Tokens: i64(50), Iterations: i64(1), MicroUSD: i64(300)}, false, 700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000)}, ledger.PoolOptions{})
			tk, err := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)})
			if err != nil {
				t.Fatal(err)
			}
			if err := pool.Settle(tk, tc.spent); err != nil {
				t.Fatal(err)
			}
			r := pool.Readout()
			conserved(t, r)
			if r.USDTainted != tc.wantTainted {
				t.Errorf("tainted %v, want %v", r.USDTainted, tc.wantTainted)
			}
			if usd := r.Channels[ledger.ChannelUSD]; usd.Known == tc.wantTainted || usd.Free != tc.wantFree {
				t.Errorf("dollars %+v, want known %v free %d", usd, !tc.wantTainted, tc.wantFree)
			}
			_, err = pool.Reserve(ledger.Budget{Tokens: i64(1), Iterations: i64(1)})
			if tc.wantTainted != errors.Is(err, ledger.ErrUSDTainted) {
				t.Errorf("a later reservation: %v; want refused (ErrUSDTainted) %v", err, tc.wantTainted)
			}
		})
	}
}

// Spec §6 restore: a child journaled started but never settled that
// declared no maxUsd, under a dollar-capped root, may have spent any
// dollars: the restored pool's dollar channel is tainted (restart never
// mints capacity).
func TestRestoreUndeclaredDollarsUnderCapTaints(t *testing.T) {
	pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10), MicroUSD: i64(1_000)}, ledger.PoolOptions{})
	if _, err := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)}); err != nil {
		t.Fatal(err)
	}
	restored, err := ledger.Restore(pool.Snapshot(), ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := restored.Readout()
	conserved(t, r)
	if !r.USDTainted || r.Channels[ledger.ChannelUSD].Known {
		t.Errorf("tainted %v, dollars %+v; want tainted and unknown", r.USDTainted, r.Channels[ledger.ChannelUSD])
	}
	if _, err := restored.Reserve(ledger.Budget{Tokens: i64(1), Iterations: i64(1)}); !errors.Is(err, ledger.ErrUSDTainted) {
		t.Errorf("a reservation after the restore: %v; want ErrUSDTainted", err)
	}
}

// Spec §6, §7 rules 2 and 10: unreported tokens are charged the
// reservation, or the floor an incomplete receipt shows was spent when
// that is more — a charge is a bound, never below what is known — and
// the channel stays unknown either way; an observed floor is debited.
func TestUnreportedTokensChargedAtLeastTheirFloor(t *testing.T) {
	for _, tc := range []struct {
		name          string
		floor         *int64
		wantCommitted int64
	}{
		{"no floor", nil, 100},
		{"floor below the ceiling", i64(40), 100},
		{"floor above the ceiling", i64(170), 170},
		{"negative floor ignored", i64(-5), 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10)}, ledger.PoolOptions{})
			tk, _ := pool.Reserve(ledger.Budget{Tokens: i64(100), Iterations: i64(1)})
			if err := pool.Settle(tk, ledger.Spend{Iterations: i64(1), TokensFloor: tc.floor}); err != nil {
				t.Fatal(err)
			}
			r := pool.Readout()
			conserved(t, r)
			if b := r.Channels[ledger.ChannelTokens]; b.Committed != tc.wantCommitted || b.Known {
				t.Errorf("tokens %+v, want committed %d and unknown", b, tc.wantCommitted)
			}
		})
	}
	t.Run("observed", func(t *testing.T) {
		pool, _ := ledger.NewPool(ledger.Budget{Tokens: i64(1000), Iterations: i64(10)}, ledger.PoolOptions{})
		pool.Observe(ledger.Spend{Iterations: i64(0), TokensFloor: i64(60)})
		r := pool.Readout()
		conserved(t, r)
		if b := r.Channels[ledger.ChannelTokens]; b.Committed != 60 || b.Free != 940 || b.Known {
			t.Errorf("tokens %+v, want 60 debited and unknown", b)
		}
	})
}

// §6 and P3: a receipt's dollars become micro-dollars rounded up; a
// negative, non-finite or huge amount (past MaxQuantity micro-dollars,
// which int64 conversion would wrap negative) is unknown, never a
// wrapped or invalid known amount.
func TestSpentMicroUSD(t *testing.T) {
	for _, c := range []struct {
		usd  float64
		want int64
		ok   bool
	}{
		{0, 0, true},
		{0.0042, 4200, true},
		{0.0000001, 1, true},
		{9_000_000_000, 9_000_000_000_000_000, true},
		{9007199254.740993, 0, false},
		{1e13, 0, false},
		{1e300, 0, false},
		{math.Inf(1), 0, false},
		{math.NaN(), 0, false},
		{-0.5, 0, false},
	} {
		got, ok := ledger.SpentMicroUSD(c.usd)
		if got != c.want || ok != c.ok {
			t.Errorf("SpentMicroUSD(%v) = %d, %v; want %d, %v", c.usd, got, ok, c.want, c.ok)
		}
	}
}
