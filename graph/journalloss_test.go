package graph_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// kindRefused is a real SQLite store that refuses the first append of
// a record of kind.
type kindRefused struct {
	store.Store
	kind    string
	refused atomic.Bool
}

func (s *kindRefused) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if len(events) > 0 && events[0].Type == s.kind && s.refused.CompareAndSwap(false, true) {
		return nil, errors.New("the store did not answer")
	}
	return s.Store.AppendEvents(ctx, f, events)
}

// §3.7 over supervise's durability rule: a graph run whose journal
// refused a settlement, or an edge traversal's record (Coordinator.Note),
// still returns its GraphResult — winner and edge ledger — with the
// *supervise.JournalLossError naming the lost record beside it, never
// the result dropped nor a silent success.
func TestGraphReturnsResultBesideJournalLoss(t *testing.T) {
	for _, kind := range []string{supervise.KindSettled, supervise.KindEdge} {
		t.Run(kind, func(t *testing.T) {
			ctx := t.Context()
			g, o, err := resumeGraph()
			if err != nil {
				t.Fatal(err)
			}
			exec, err := newResumeExecutor(reviewPasses)
			if err != nil {
				t.Fatal(err)
			}
			st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			o.Supervise.Executor, o.Supervise.SpawnStore, o.Supervise.Resume = exec, &kindRefused{Store: st, kind: kind}, false
			res, err := graph.RunGraph(ctx, g, o)
			var loss *supervise.JournalLossError
			if !errors.As(err, &loss) || loss.Count != 1 || loss.Lost[0].Kind != kind {
				t.Fatalf("err %v, want a *supervise.JournalLossError naming one %s record", err, kind)
			}
			if res.Result.Winner == nil || res.Result.Winner.Node != "g:s1" || len(res.Ledger) != 3 {
				t.Errorf("result winner %+v ledger %d rows; want the coder g:s1 and 3 rows", res.Result.Winner, len(res.Ledger))
			}
		})
	}
}
