package supervise_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// Spec §3.6 Settled budgetViolation, §6 reconcile: a node's measured
// spend past its reservation is named on its settlement, channel by
// channel (tokens, iterations, usd, resources by name), and changes
// nothing else — the state settled stands and the spend is charged in
// full. Spend within the reservation, or unmeasured (charged at the
// ceiling), names none.
func TestSettlementNamesBudgetViolation(t *testing.T) {
	reserved := ledger.Budget{Tokens: i64(100), Iterations: i64(1), MicroUSD: i64(5_000)}
	for _, tc := range []struct {
		name  string
		state supervise.State
		spent ledger.Spend
		want  *supervise.BudgetViolation
	}{
		{"within", supervise.StateDone, ledger.Spend{Tokens: i64(100), Iterations: i64(1), MicroUSD: i64(5_000)}, nil},
		{"unmeasured", supervise.StateFailed, ledger.Spend{Iterations: i64(1)}, nil},
		{"tokens and dollars", supervise.StateDone, ledger.Spend{Tokens: i64(250), Iterations: i64(1), MicroUSD: i64(7_500)},
			&supervise.BudgetViolation{Overspent: []supervise.Overspend{
				{Channel: ledger.ChannelTokens, Reserved: 100, Spent: 250}, {Channel: ledger.ChannelUSD, Reserved: 5_000, Spent: 7_500}}}},
		{"a token floor past the ceiling", supervise.StateFailed, ledger.Spend{Iterations: i64(1), MicroUSD: i64(0), TokensFloor: i64(130)},
			&supervise.BudgetViolation{Overspent: []supervise.Overspend{{Channel: ledger.ChannelTokens, Reserved: 100, Spent: 130}}}},
		{"a token floor within", supervise.StateFailed, ledger.Spend{Iterations: i64(1), MicroUSD: i64(0), TokensFloor: i64(60)}, nil},
		{"iterations, failed", supervise.StateFailed, ledger.Spend{Tokens: i64(10), Iterations: i64(3), MicroUSD: i64(0)},
			&supervise.BudgetViolation{Overspent: []supervise.Overspend{{Channel: ledger.ChannelIterations, Reserved: 1, Spent: 3}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, pool := carveCheckScope(t, supervise.ScopeOptions{})
			r := spawnOK(t, s, supervise.SpawnRequest{Profile: "writer", Task: "work", Budget: reserved})
			st, err := s.Settle(r.Node, supervise.Result{State: tc.state, Spent: tc.spent})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, st.BudgetViolation); diff != "" {
				t.Errorf("budgetViolation (-want +got):\n%s", diff)
			}
			if st.State != tc.state {
				t.Errorf("state %s, want %s: an overspend changes no outcome", st.State, tc.state)
			}
			if info, _ := s.Node(r.Node); info.Settlement == nil || !cmp.Equal(info.Settlement.BudgetViolation, tc.want) {
				t.Errorf("the node's settlement does not carry the violation: %+v", info.Settlement)
			}
			for _, v := range []*int64{tc.spent.Tokens, tc.spent.TokensFloor} {
				if v != nil && *v > 100 {
					if got := pool.Readout().Channels[ledger.ChannelTokens].Committed; got != *v {
						t.Errorf("committed tokens %d, want the measured %d in full", got, *v)
					}
				}
			}
		})
	}
}
