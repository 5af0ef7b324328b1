package supervise_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 conservation, §6 reconcile, under random nested trees: leads at
// any depth, grants with and without dollars or a token ceiling,
// children that overspend, leave channels unreported, go in doubt, or
// are still live when their lead settles or the scope closes. After
// every step the run's pool and every carved pool conserve; once the
// scope is closed, the run's pool charged exactly the totals, and the
// totals are unknown on a channel exactly when a gap names it.
func TestCarveCheckConservationProperty(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			carveProperty(t, seed)
		})
	}
}

func carveProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	s, pool := carveCheckScope(t, supervise.ScopeOptions{})
	var live []supervise.NodeID
	pick := func() (supervise.NodeID, int) {
		i := rng.IntN(len(live))
		return live[i], i
	}
	qty := func(nilPct int, lo, hi int64) *int64 {
		if rng.IntN(100) < nilPct {
			return nil
		}
		return i64(lo + rng.Int64N(hi-lo+1))
	}
	spend := func(b ledger.Budget) ledger.Spend {
		ch := func(c *int64) *int64 {
			switch r := rng.IntN(100); {
			case r < 15:
				return nil // unreported
			case r < 25 && c != nil:
				return i64(*c + 1 + rng.Int64N(*c+1)) // overspent
			case c != nil:
				return i64(rng.Int64N(*c + 1))
			default:
				return i64(rng.Int64N(50))
			}
		}
		return ledger.Spend{Tokens: ch(b.Tokens), Iterations: ch(b.Iterations), MicroUSD: ch(b.MicroUSD)}
	}
	var log []string
	defer func() {
		if t.Failed() {
			for _, l := range log {
				t.Log(l)
			}
		}
	}()
	for step := range 60 {
		where := fmt.Sprintf("seed %d step %d", seed, step)
		switch op := rng.IntN(10); {
		case op < 4 || len(live) == 0:
			parent := s.Root()
			if len(live) > 0 && rng.IntN(3) > 0 {
				parent, _ = pick()
			}
			b := ledger.Budget{Tokens: qty(8, 50, 3000), Iterations: qty(5, 1, 4), MicroUSD: qty(40, 0, 300_000)}
			r, err := s.Spawn(supervise.SpawnRequest{Parent: parent, Profile: "p", Budget: b})
			if err != nil {
				var ref *supervise.Refusal
				if !errors.As(err, &ref) || (ref.Code != supervise.CodeBudgetExhausted && ref.Code != supervise.CodeUSDUnbudgeted) {
					t.Fatalf("%s: spawn under %s refused unexpectedly: %v", where, parent, err)
				}
				log = append(log, fmt.Sprintf("%s: spawn under %s %s refused %s", where, parent, fmtBudget(b), ref.Code))
				break
			}
			live = append(live, r.Node)
			log = append(log, fmt.Sprintf("%s: spawn %s %s", where, r.Node, fmtBudget(b)))
		case op < 5:
			id, _ := pick()
			sp := ledger.Spend{Tokens: i64(rng.Int64N(400)), Iterations: i64(0), MicroUSD: i64(rng.Int64N(20_000))}
			s.ObserveNode(id, sp)
			log = append(log, fmt.Sprintf("%s: observe %s t=%d usd=%d", where, id, *sp.Tokens, *sp.MicroUSD))
		case op < 9:
			id, i := pick()
			n, _ := s.Node(id)
			sp := spend(n.Reserved)
			state := []supervise.State{supervise.StateDone, supervise.StateFailed, supervise.StateCancelled}[rng.IntN(3)]
			if _, err := s.Settle(id, supervise.Result{State: state, Spent: sp}); err != nil {
				t.Fatalf("%s: settle %s: %v", where, id, err)
			}
			live = append(live[:i], live[i+1:]...)
			log = append(log, fmt.Sprintf("%s: settle %s spent %s", where, id, fmtBudget(ledger.Budget{Tokens: sp.Tokens, Iterations: sp.Iterations, MicroUSD: sp.MicroUSD})))
		default:
			id, i := pick()
			if err := s.MarkInDoubt(id); err != nil {
				t.Fatalf("%s: in doubt %s: %v", where, id, err)
			}
			live = append(live[:i], live[i+1:]...)
			log = append(log, fmt.Sprintf("%s: in doubt %s", where, id))
		}
		checkAllConserved(t, s, pool, where)
	}
	s.Close()
	checkAllConserved(t, s, pool, fmt.Sprintf("seed %d closed", seed))
	checkRunMatchesTotals(t, s, pool, fmt.Sprintf("seed %d closed", seed))
}
