package supervise_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// ledgerSum is the sum of one channel of a supervised run's store ledger
// entries: of their charged member (always numbers), and of their spent
// member, nil when any entry's is unknown (null) or only a floor.
func ledgerSum(t *testing.T, entries []store.LedgerEntry, channel string) (charged int64, spent *int64) {
	t.Helper()
	var total int64
	known := true
	for _, e := range entries {
		c, ok := e.Body.Get("charged")
		if !ok {
			t.Fatalf("ledger entry %d has no charged member: %s", e.Sequence, canonjson.Marshal(e.Body))
		}
		n, ok := c.Get(channel)
		if !ok || n.Kind() != canonjson.Number {
			t.Fatalf("ledger entry %d charged %s: %s", e.Sequence, channel, canonjson.Marshal(c))
		}
		charged += int64(n.Float())
		s, _ := e.Body.Get("spent")
		v, _ := s.Get(channel)
		if v.Kind() == canonjson.Number {
			total += int64(v.Float())
		} else {
			known = false
		}
	}
	if !known {
		return charged, nil
	}
	return charged, &total
}

// A supervised run's store ledger reconciles with its result: one entry
// per worker and one for the manager's own inference, their sum the
// run's spentTotal on tokens, dollars and iterations, on SQLite and
// PostgreSQL.
func TestSupervisedRunLedgerReconciles(t *testing.T) {
	for _, tc := range questionStores {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.open(t)
			exec := &supervise.KernelExecutor{Provider: workerProvider(t), Store: st}
			o := baseOptions(t, exec, twoWorkerManager())
			o.RunDir, o.Store = t.TempDir(), st
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "ship a note", o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tree) != 2 || !res.Spent.TokensKnown || !res.Spent.USDKnown || res.Breakdown.DriverInference.Tokens == 0 {
				t.Fatalf("run: %d workers, spent %+v, driver %+v; want two workers and a metered manager", len(res.Tree), res.Spent, res.Breakdown.DriverInference)
			}
			run, err := st.GetRun(context.Background(), "run1")
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != store.StatusCompleted {
				t.Errorf("the record's run is %s, want completed", run.Status)
			}
			entries, err := st.Ledger(context.Background(), "run1")
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 3 {
				t.Fatalf("the run's ledger holds %d entries, want 3 (two workers and the manager)", len(entries))
			}
			for _, ch := range []struct {
				name string
				want int64
			}{{"tokens", res.Spent.Tokens}, {"microUsd", res.Spent.MicroUSD}, {"iterations", res.Spent.Iterations}} {
				charged, spent := ledgerSum(t, entries, ch.name)
				if charged != ch.want || spent == nil || *spent != ch.want {
					t.Errorf("%s: ledger charged %d spent %v, want both the result's %d", ch.name, charged, spent, ch.want)
				}
			}
			if k, _ := entries[2].Body.Get("kind"); k.Str() != "supervise-manager" {
				t.Errorf("the last entry is %s, want the manager's", canonjson.Marshal(entries[2].Body))
			}
		})
	}
}

// LedgerSpend sums a supervised run's ledger entries into one spend in
// the kernel's amount form: a number when every entry measured the
// channel, {"atLeast": n} when some only a floor, null when some not.
func TestLedgerSpendSumsInTheKernelsForm(t *testing.T) {
	entry := func(tokens, usd canonjson.Value) store.LedgerEntry {
		zero := canonjson.NumberValue(0)
		return store.LedgerEntry{Body: canonjson.ObjectValue([]canonjson.Member{
			{Name: "charged", Value: canonjson.ObjectValue([]canonjson.Member{{Name: "iterations", Value: zero}, {Name: "microUsd", Value: zero}, {Name: "tokens", Value: zero}})},
			{Name: "kind", Value: canonjson.StringValue(supervise.LedgerWorker)},
			{Name: "node", Value: canonjson.StringValue("n")},
			{Name: "spent", Value: canonjson.ObjectValue([]canonjson.Member{{Name: "iterations", Value: canonjson.NumberValue(1)}, {Name: "microUsd", Value: usd}, {Name: "tokens", Value: tokens}})},
		})}
	}
	floor := canonjson.ObjectValue([]canonjson.Member{{Name: "atLeast", Value: canonjson.NumberValue(5)}})
	got := supervise.LedgerSpend([]store.LedgerEntry{
		entry(canonjson.NumberValue(10), canonjson.NumberValue(3)),
		entry(floor, canonjson.NullValue()),
	})
	want := `{"iterations":2,"microUsd":null,"tokens":{"atLeast":15}}`
	if s := string(canonjson.Marshal(got)); s != want {
		t.Errorf("LedgerSpend = %s, want %s", s, want)
	}
}
