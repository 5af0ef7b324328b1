package supervise_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// Spec §6 (spend is non-negative safe integers; a larger one is treated
// as unknown rather than trusted): a turn's known dollars become
// micro-dollars only when they fit ledger.MaxQuantity. A receipt past it
// (a router's usage.cost of 1e10 or 1e300 dollars) is no known spend —
// never a negative amount from an out-of-range float conversion, never a
// known total the pool itself refuses.
func TestSpendOfDollarsBeyondMaxQuantityAreUnknown(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		usd  float64
		want *int64
	}{
		{"a cent", 0.01, i(10_000)},
		{"free", 0, i(0)},
		{"a fraction of a micro-dollar rounds up", 0.0000001, i(1)},
		{"nine billion dollars, within the safe quantity", 9e9, i(9_000_000_000_000_000)},
		{"past the safe quantity", 1e10, nil},
		{"past int64", 1e13, nil},
		{"a huge exponent", 1e300, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := supervise.SpendOf(ledger.Usage{CostUSD: ledger.ExactAmount(c.usd)}).MicroUSD
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("SpendOf($%g).MicroUSD (-want +got):\n%s", c.usd, d)
			}
		})
	}
}

// Spec §6: a settlement the pool refuses as invalid (a quantity past
// ledger.MaxQuantity, or negative) is charged at the worker's ceiling and
// its channel made unknown; the scope's totals must say the same — the
// refused quantity is not kept as a known spend beside a pool that
// discarded it.
func TestSettleBeyondMaxQuantityIsUnknownInTotals(t *testing.T) {
	big := ledger.MaxQuantity + 1
	for _, c := range []struct {
		name  string
		spent ledger.Spend
		known func(supervise.SpentTotal) bool
	}{
		{"tokens", ledger.Spend{Tokens: &big, Iterations: i64(1), MicroUSD: i64(0)}, func(s supervise.SpentTotal) bool { return s.TokensKnown }},
		{"dollars", ledger.Spend{Tokens: i64(1), Iterations: i64(1), MicroUSD: &big}, func(s supervise.SpentTotal) bool { return s.USDKnown }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, rootBudget(), supervise.ScopeOptions{PerWorker: worker})
			r := f.spawn(t, supervise.SpawnRequest{Profile: "coder", Label: "w", Task: "t"})
			st, err := f.scope.Settle(r.Node, supervise.Result{State: supervise.StateDone, Spent: c.spent})
			if !errors.Is(err, ledger.ErrInvalid) {
				t.Errorf("Settle: err %v, want ledger.ErrInvalid", err)
			}
			tot := f.scope.Totals()
			if c.known(tot.Spent) {
				t.Errorf("totals say the %s channel is known (%+v; settlement %+v); the pool charged the ceiling", c.name, tot.Spent, st.Spent)
			}
			if tot.Spent.Tokens > ledger.MaxQuantity || tot.Spent.MicroUSD > ledger.MaxQuantity {
				t.Errorf("totals count the refused quantity: %+v", tot.Spent)
			}
		})
	}
}
