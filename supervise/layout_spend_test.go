package supervise

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/ledger"
)

// §3.6 state.json, truthful spend: the dollars of a run with no dollar
// ceiling are written as a number only when every worker reported its
// cost; when some worker reported none, spent.microUsd is absent
// (unknown), never "$0".
func TestStateSpendDollarsUnknownUnlessReported(t *testing.T) {
	zero, seven := int64(0), int64(7)
	tests := []struct {
		name    string
		workers []*int64 // each settled worker's reported micro-dollars
		want    *int64
	}{
		{"no worker reported a cost", []*int64{nil, nil}, nil},
		{"one worker did not report", []*int64{&seven, nil}, nil},
		{"every worker reported", []*int64{&zero, &seven}, &seven},
		{"every worker reported zero", []*int64{&zero}, &zero},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tokens, iterations := int64(1000), int64(10)
			pool, err := ledger.NewPool(ledger.Budget{Tokens: &tokens, Iterations: &iterations}, ledger.PoolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, usd := range tt.workers {
				tk, err := pool.Reserve(ledger.Budget{Tokens: new(int64(100)), Iterations: new(int64(1))})
				if err != nil {
					t.Fatal(err)
				}
				if err := pool.Settle(tk, ledger.Spend{Tokens: new(int64(10)), Iterations: new(int64(1)), MicroUSD: usd}); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			y, err := openLayout(dir, "run1", nil, pool.Readout, time.Now, slog.New(slog.DiscardHandler), false)
			if err != nil {
				t.Fatal(err)
			}
			if err := y.writeState(); err != nil {
				t.Fatal(err)
			}
			if err := y.close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(dir, StateFile))
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Spent map[string]json.RawMessage `json:"spent"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			got, present := doc.Spent["microUsd"]
			if tt.want == nil && present {
				t.Fatalf("state.json spent.microUsd = %s, want it absent (unknown): %s", got, raw)
			}
			st, err := ReadRunState(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == nil && st.Spent.MicroUSD != nil:
				t.Errorf("spent dollars %d, want unknown", *st.Spent.MicroUSD)
			case tt.want != nil && (st.Spent.MicroUSD == nil || *st.Spent.MicroUSD != *tt.want):
				t.Errorf("spent dollars %v, want %d", st.Spent.MicroUSD, *tt.want)
			}
			if st.Spent.Tokens == nil || *st.Spent.Tokens != 10*int64(len(tt.workers)) {
				t.Errorf("spent tokens %v, want %d", st.Spent.Tokens, 10*len(tt.workers))
			}
		})
	}
}
