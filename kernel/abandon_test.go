package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// A judged run whose holder stopped (its lease lapsed, no end recorded)
// is closed by its judge: the lapsed lease is taken over (a new
// generation, so the old holder's fence no longer holds) and the run
// recorded interrupted for good, reason abandoned, its usage unknown
// and never delivered. A run still leased, already ended, or judged by
// another is refused with nothing written. On SQLite and PostgreSQL.
func TestCloseAbandonedTakesTheLapsedLeaseOver(t *testing.T) {
	const judge = "supervise run r, node r:s2"
	stores := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			create := func(id, judgedBy string, lease time.Time) store.Fence {
				doc, err := canonjson.ToValue(kernel.Record{Task: "task beta", Provider: "openai", JudgedBy: judgedBy})
				if err != nil {
					t.Fatal(err)
				}
				now := time.Now()
				r, err := st.CreateRun(ctx, store.Run{ID: id, Kind: "supervise-worker", Status: store.StatusRunning,
					CreatedAt: now, UpdatedAt: now, Owner: "gone/1", LeaseUntil: lease, Doc: doc})
				if err != nil {
					t.Fatal(err)
				}
				return r.Fence()
			}
			lapsed := time.Now().Add(-time.Second)
			old := create("lapsed", judge, lapsed)
			create("leased", judge, time.Now().Add(time.Hour))
			create("other", "supervise run q, node q:s1", lapsed)

			closed, err := kernel.CloseAbandoned(ctx, st, "lapsed", judge, "supervise run r settled node r:s2 in doubt")
			if err != nil {
				t.Fatalf("CloseAbandoned: %v", err)
			}
			if closed.Generation != old.Generation+1 || closed.Status != store.StatusInterrupted || !closed.LeaseUntil.IsZero() {
				t.Errorf("closed: generation %d status %s lease %v, want generation %d, interrupted, no lease", closed.Generation, closed.Status, closed.LeaseUntil, old.Generation+1)
			}
			rr, err := kernel.ReadRun(ctx, st, "lapsed")
			if err != nil {
				t.Fatal(err)
			}
			rec := rr.Exact
			if rr.Status != store.StatusInterrupted || rec == nil || rec.Terminal == nil {
				t.Fatalf("read back: %s, record %+v", rr.Status, rec)
			}
			if rec.Terminal.Status != store.StatusInterrupted || rec.Terminal.Reason != kernel.ReasonAbandoned || rec.Terminal.Detail != "supervise run r settled node r:s2 in doubt" {
				t.Errorf("terminal %+v, want interrupted, abandoned, the judge's detail", *rec.Terminal)
			}
			if rec.Usage != nil || rec.Delivered != nil || rec.JudgedBy != judge {
				t.Errorf("usage %v delivered %v judgedBy %q: want usage unknown, delivery the judge's", rec.Usage, rec.Delivered, rec.JudgedBy)
			}
			// The old holder, come back, is fenced out.
			_, err = st.AppendEvents(ctx, old, []store.NewEvent{{ID: "late", Type: "text", Time: time.Now(), Body: canonjson.ObjectValue(nil)}})
			if fe := (*store.FenceError)(nil); !errors.As(err, &fe) {
				t.Errorf("the old holder's late append: %v, want a *store.FenceError", err)
			}
			// Closed once: a second close is refused.
			if _, err := kernel.CloseAbandoned(ctx, st, "lapsed", judge, "again"); !errors.Is(err, kernel.ErrNotAbandoned) {
				t.Errorf("closing it again: %v, want ErrNotAbandoned", err)
			}
			for _, id := range []string{"leased", "other"} {
				before, _ := st.GetRun(ctx, id)
				_, err := kernel.CloseAbandoned(ctx, st, id, judge, "no")
				if na := (*kernel.NotAbandonedError)(nil); !errors.As(err, &na) {
					t.Errorf("closing %s: %v, want a *kernel.NotAbandonedError", id, err)
				}
				if after, _ := st.GetRun(ctx, id); after.Revision != before.Revision {
					t.Errorf("a refused close of %s wrote: revision %d → %d", id, before.Revision, after.Revision)
				}
			}
		})
	}
}
