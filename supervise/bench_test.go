package supervise_test

import (
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkScopeSpawnSettle: one admitted spawn and its settlement, the
// Scope's share of issue 13's spawn+settle budget (no executor, no
// journal).
func BenchmarkScopeSpawnSettle(b *testing.B) {
	f := newFixture(b, ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
		supervise.ScopeOptions{PerWorker: worker, MaxLiveWorkers: 64, MaxDepth: 4})
	req := supervise.SpawnRequest{Profile: "coder", Label: "w", Task: "t"}
	spent := supervise.Result{State: supervise.StateDone, Spent: fullSpend(40)}
	b.ReportAllocs()
	for b.Loop() {
		r, err := f.scope.Spawn(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.scope.Settle(r.Node, spent); err != nil {
			b.Fatal(err)
		}
	}
	if live, _ := f.scope.Live(); live != 0 {
		b.Fatalf("live %d", live)
	}
}
