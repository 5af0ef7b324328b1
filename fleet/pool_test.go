package fleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
)

// Issue 14 Deliver 3: the fleet takes a caller's *pgxpool.Pool
// (Options.Pool) and a schema for the run store (StoreSchema): the run
// store's tables and River's land in the schemas named, a run submitted
// and worked through that pool completes, and closing the fleet leaves
// the caller's pool open.
func TestOpenWithCallersPool(t *testing.T) {
	base := pgtest.URL(t)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	storeSchema := "agentrt_pool_" + hex.EncodeToString(b[:])
	riverSchema := storeSchema + "_river"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, s := range []string{storeSchema, riverSchema} {
			_, _ = pool.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{s}.Sanitize()+` CASCADE`)
		}
		pool.Close()
	})
	f, err := fleet.Open(ctx, fleet.Options{Pool: pool, StoreSchema: storeSchema, RiverSchema: riverSchema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sub, err := f.Submit(ctx, fleet.Submission{Spec: spec(t, "write the note")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.NewWorker(ctx, fleet.WorkerOptions{Providers: map[string]contract.Provider{"scripted": provider(t, quickScript)}, PollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	runs := waitEnded(t, f, []string{sub.RunID}, 2*time.Minute)
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("worker: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the worker did not stop within a minute")
	}
	if r := runs[sub.RunID]; r.Status != store.StatusCompleted {
		t.Fatalf("run %s: %s %+v", sub.RunID, r.Status, r.Outcome)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The pool is still the caller's, open, and the tables are where the
	// options put them.
	for _, c := range []struct {
		schema, table string
	}{{storeSchema, "runs"}, {storeSchema, "events"}, {riverSchema, "river_job"}} {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2`, c.schema, c.table).Scan(&n)
		if err != nil {
			t.Fatalf("the caller's pool after the fleet closed: %v", err)
		}
		if n != 1 {
			t.Errorf("table %s.%s: missing", c.schema, c.table)
		}
	}
	var runsIn int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{storeSchema, "runs"}.Sanitize()+` WHERE id = $1`, sub.RunID).Scan(&runsIn); err != nil || runsIn != 1 {
		t.Errorf("the run in %s.runs: %d, %v", storeSchema, runsIn, err)
	}
}

// Options names one database: a URL or a pool, never both nor neither.
func TestOpenNeedsAURLOrAPool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, "postgres://nobody@127.0.0.1:1/none") // never connected
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	for name, o := range map[string]fleet.Options{
		"neither": {},
		"both":    {DatabaseURL: "postgres://nobody@127.0.0.1:1/none", Pool: pool},
	} {
		if _, err := fleet.Open(ctx, o); !errors.Is(err, fleet.ErrInvalid) {
			t.Errorf("%s: %v, want fleet.ErrInvalid", name, err)
		}
	}
}
