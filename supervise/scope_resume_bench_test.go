package supervise_test

import (
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkScopeResumeSpawn: one continuity-resume spawn of a label and
// its settlement, in a scope that already holds n settled workers of
// other labels. Its cost should not grow with n.
func BenchmarkScopeResumeSpawn(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			f := newFixture(b, ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
				supervise.ScopeOptions{PerWorker: worker})
			spent := supervise.Result{State: supervise.StateDone, Spent: fullSpend(1)}
			settle := func(req supervise.SpawnRequest) {
				r, err := f.scope.Spawn(req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.scope.Settle(r.Node, spent); err != nil {
					b.Fatal(err)
				}
			}
			settle(supervise.SpawnRequest{Profile: "coder", Label: "x", Task: "t"})
			for i := range n {
				settle(supervise.SpawnRequest{Profile: "coder", Label: fmt.Sprint("w", i), Task: "t"})
			}
			req := supervise.SpawnRequest{Profile: "coder", Label: "x", Task: "t", Continuity: supervise.ContinuityResume}
			b.ReportAllocs()
			for b.Loop() {
				settle(req)
			}
		})
	}
}
