package supervise_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// cutAtKind is a real store made to stop answering (cut: PostgreSQL
// behind a black hole or resetting its connections, SQLite locked by
// another connection) just before the first event append whose first
// event is of kind.
type cutAtKind struct {
	store.Store
	kind  string
	cut   func()
	once  sync.Once
	fired atomic.Bool
}

func (s *cutAtKind) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if len(events) > 0 && events[0].Type == s.kind {
		s.once.Do(func() { s.fired.Store(true); s.cut() })
	}
	return s.Store.AppendEvents(ctx, f, events)
}

// RES-03, behaviours 40 and 46, with the spawn journal in SQL: the store
// stops answering just as alpha's settlement is journaled, and answers
// again once Supervise returned. Supervise returns in bounded time (an
// append is bounded by max(lease, kernel.DefaultCleanupTimeout) = 5 s,
// and a lease that lapses while renewals fail ends the run at once),
// never as a silent success: either it lost the journal (no result) or
// it returns what it observed beside an error saying the outcome or the
// settlement was not journaled. The store then holds alpha's spawn and
// no settlement; a resume from it (once the first process's lease
// lapsed) keeps alpha in doubt — not run again, charged its ceiling, its
// spend unknown (a never-settled gap) — and ends with no winner.
func TestSettlementWhenJournalStoreStopsAnswering(t *testing.T) {
	const lease = 2 * time.Second
	const bound = 60 * time.Second
	for _, sk := range storefault.Stores() {
		t.Run(string(sk.Fault), func(t *testing.T) {
			st, fail, restore := sk.Open(t)
			cutting := &cutAtKind{Store: st, kind: supervise.KindSettled, cut: fail}
			exec := newCounting(t, workerProvider(t))
			o := baseOptions(t, exec, sequentialManager())
			o.SpawnStore, o.SpawnLeaseTTL = cutting, lease
			got, took := superviseWhileStoreFails(t, o, bound, restore)
			t.Logf("returned after %v: status %q, winner %v, spent %+v, err %v", took.Round(time.Millisecond), got.res.Status, got.res.Winner != nil, got.res.Spent, got.err)
			if !cutting.fired.Load() {
				t.Fatalf("alpha's settlement was never journaled, so the store never stopped answering: %v", got.err)
			}
			if took > bound {
				t.Errorf("Supervise returned after %v; want within %v", took, bound)
			}
			switch {
			case got.err == nil:
				t.Fatalf("Supervise returned %s with no error although alpha's settlement never reached its journal", got.res.Status)
			case errors.Is(got.err, supervise.ErrSpawnLogLost):
				if got.res.Winner != nil {
					t.Errorf("a run that lost its journal returned a winner %s", got.res.Winner.Node)
				}
			case !errors.Is(got.err, supervise.ErrOutcomeNotJournaled) && !errors.Is(got.err, supervise.ErrJournalIncomplete):
				t.Errorf("err %v; want the journal lost, or the outcome or settlement named not journaled", got.err)
			}
			if exec.count("alpha") != 1 || exec.count("beta") != 0 {
				t.Errorf("alpha ran %d times, beta %d; want alpha once and beta never (its spawn cannot be journaled)", exec.count("alpha"), exec.count("beta"))
			}

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			recs, _, err := supervise.ReadStoreSpawnLog(ctx, st, o.RunID, "")
			if err != nil {
				t.Fatal(err)
			}
			spawned := false
			for _, r := range recs {
				switch {
				case r.Kind == supervise.KindSpawned && r.Node == "run1:s1":
					spawned = true
				case r.Kind == supervise.KindSettled, r.Kind == supervise.KindFinished:
					t.Errorf("the journal holds a %s record of %s that Supervise was told failed", r.Kind, r.Node)
				}
			}
			if !spawned {
				t.Fatal("the journal lost alpha's spawn record, durable before the store stopped answering")
			}

			// The first process could not release its lease when the
			// store reset: the resume is refused until the lease lapses.
			var res supervise.SupervisedResult
			for {
				o2 := baseOptions(t, exec, sequentialManagerFrom(2))
				o2.SpawnStore, o2.SpawnLeaseTTL, o2.Resume = st, lease, true
				res, err = supervise.Supervise(ctx, managerProfile(t, verbs2...), "ship", o2)
				if !errors.Is(err, supervise.ErrSpawnLogHeld) || ctx.Err() != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(200 * time.Millisecond):
				}
			}
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			if exec.count("alpha") != 1 {
				t.Errorf("the resume ran alpha again (%d runs in all): its execution is in doubt, not known lost", exec.count("alpha"))
			}
			if res.Status == supervise.StatusWinner {
				t.Errorf("the resume returned the winner %s, whose settlement no journal holds", res.Winner.Node)
			}
			if len(res.Tree) == 0 || res.Tree[0].ID != "run1:s1" || !res.Tree[0].InDoubt {
				t.Fatalf("resumed tree %+v; want alpha (run1:s1) in doubt", res.Tree)
			}
			gap := false
			for _, g := range res.SpendGaps {
				gap = gap || (g.ID == "run1:s1" && g.Kind == supervise.GapNeverSettled)
			}
			if res.Spent.TokensKnown || res.Spent.USDKnown || res.Spent.Tokens < 1000 || !gap {
				t.Errorf("resumed spend %+v, gaps %+v; want alpha charged its ceiling (1000 tokens) as a never-settled gap, unknown", res.Spent, res.SpendGaps)
			}
		})
	}
}
