package supervise

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/agentrt/agentrt/ledger"
)

// BenchmarkLayoutObserve measures what each journaled record adds to a
// run with a run dir: a progress line through the journal writer (one
// fsync) and a state.json rewrite by rename (no fsync).
func BenchmarkLayoutObserve(b *testing.B) {
	tokens, iterations := int64(1<<40), int64(1<<40)
	pool, err := ledger.NewPool(ledger.Budget{Tokens: &tokens, Iterations: &iterations}, ledger.PoolOptions{})
	if err != nil {
		b.Fatal(err)
	}
	y, err := openLayout(b.TempDir(), "run1", nil, pool.Readout, time.Now, slog.New(slog.DiscardHandler), false)
	if err != nil {
		b.Fatal(err)
	}
	defer y.close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		node := NodeID(fmt.Sprintf("run1:s%d", i))
		y.observe(&Record{Kind: KindSpawned, Node: node, Label: "w"})
	}
}
