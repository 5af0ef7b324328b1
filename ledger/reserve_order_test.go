package ledger_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
)

// TestReserveOrderBehaviour38 pins which refusal wins when several apply,
// in the order spec §6 gives reserve (and the reference's pool checks):
// a tainted dollar channel under a dollar cap, then tokens, iterations
// and dollars must fit free, with a dollar request against a pool that
// caps no dollars refused usd-unbudgeted only once tokens and iterations
// fit. A request of $0 asks nothing of the dollar channel, so an
// uncapped pool admits it.
func TestReserveOrderBehaviour38(t *testing.T) {
	capped := func(t *testing.T) *ledger.Pool {
		p, err := ledger.NewPool(ledger.Budget{Tokens: i64(1_000), Iterations: i64(10), MicroUSD: i64(2_000_000)}, ledger.PoolOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	uncapped := func(t *testing.T) *ledger.Pool {
		p, err := ledger.NewPool(ledger.Budget{Tokens: i64(1_000), Iterations: i64(10)}, ledger.PoolOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	exhausted := func(ch string, req, free int64) error {
		return &ledger.ExhaustedError{Channel: ch, Requested: req, Free: free}
	}
	cases := []struct {
		name string
		pool func(*testing.T) *ledger.Pool
		req  ledger.Budget
		want error // nil: admitted
	}{
		{"tokens and iterations both short: tokens named first", capped,
			ledger.Budget{Tokens: i64(4_000), Iterations: i64(100)}, exhausted(ledger.ChannelTokens, 4_000, 1_000)},
		{"iterations short, tokens fit", capped,
			ledger.Budget{Tokens: i64(10), Iterations: i64(100)}, exhausted(ledger.ChannelIterations, 100, 10)},
		{"every channel short: tokens named first", capped,
			ledger.Budget{Tokens: i64(4_000), Iterations: i64(100), MicroUSD: i64(5_000_000)}, exhausted(ledger.ChannelTokens, 4_000, 1_000)},
		{"dollars short, tokens and iterations fit", capped,
			ledger.Budget{Tokens: i64(10), Iterations: i64(1), MicroUSD: i64(5_000_000)}, exhausted(ledger.ChannelUSD, 5_000_000, 2_000_000)},
		{"too many tokens and dollars of an uncapped pool: the exhausted channel wins", uncapped,
			ledger.Budget{Tokens: i64(4_000), Iterations: i64(1), MicroUSD: i64(1)}, exhausted(ledger.ChannelTokens, 4_000, 1_000)},
		{"too many iterations and dollars of an uncapped pool: the exhausted channel wins", uncapped,
			ledger.Budget{Tokens: i64(1), Iterations: i64(11), MicroUSD: i64(1)}, exhausted(ledger.ChannelIterations, 11, 10)},
		{"dollars of an uncapped pool, the rest fits", uncapped,
			ledger.Budget{Tokens: i64(1), Iterations: i64(1), MicroUSD: i64(1)}, ledger.ErrUSDUnbudgeted},
		{"$0 of an uncapped pool is admitted", uncapped,
			ledger.Budget{Tokens: i64(1), Iterations: i64(1), MicroUSD: i64(0)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pool(t)
			before := p.Readout()
			tk, err := p.Reserve(tc.req)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Reserve(%+v) = %v, want admitted", tc.req, err)
				}
				if err := p.Settle(tk, ledger.Spend{Tokens: i64(1), Iterations: i64(1), MicroUSD: i64(0)}); err != nil {
					t.Fatal(err)
				}
				if err := p.Readout().Conserved(); err != nil {
					t.Fatal(err)
				}
				return
			}
			var wantEx *ledger.ExhaustedError
			if errors.As(tc.want, &wantEx) {
				var ex *ledger.ExhaustedError
				if !errors.As(err, &ex) {
					t.Fatalf("Reserve(%+v) = %v, want %v", tc.req, err, tc.want)
				}
				if diff := cmp.Diff(wantEx, ex); diff != "" {
					t.Errorf("refusal (-want +got):\n%s", diff)
				}
			} else if !errors.Is(err, tc.want) {
				t.Fatalf("Reserve(%+v) = %v, want %v", tc.req, err, tc.want)
			}
			if diff := cmp.Diff(before, p.Readout()); diff != "" {
				t.Errorf("a refusal changed the pool (-before +after):\n%s", diff)
			}
		})
	}
}
