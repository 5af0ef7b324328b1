package supervise_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/supervise"
)

// A supervisor paused (SIGSTOP) in the middle of a transaction on its
// store journal's run keeps that run's row locked while it is paused;
// PostgreSQL ends such a session after pgdb.IdleInTransactionTimeout.
// Another process resuming the run with a short lease (agentrt
// supervise --resume --journal-in-store --lease 2s) must wait that out
// and take the run over, not fail with a deadline before the paused
// holder's lock is released.
func TestOpenStoreSpawnLogWaitsOutAPausedHolder(t *testing.T) {
	conn := pgtest.Schema(t)
	ctx := t.Context()
	st, err := postgres.Open(ctx, conn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lapsed, err := canonjson.ToValue(map[string]int64{supervise.SpawnLogLeaseMember: time.Now().Add(-time.Second).UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(ctx, store.Run{ID: "paused", Kind: supervise.SpawnLogRunKind, Status: store.StatusRunning,
		Owner: "paused-holder", Doc: lapsed}); err != nil {
		t.Fatal(err)
	}

	// The paused holder: a session as the store's, in a transaction
	// holding the journal's run row, doing nothing more.
	cfg, err := pgdb.Config(conn, 1)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT id FROM runs WHERE id = 'paused' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	l, err := supervise.OpenStoreSpawnLog(ctx, st, "paused", supervise.StoreSpawnLogOptions{LeaseTTL: 2 * time.Second})
	if err != nil {
		t.Fatalf("taking over the run a paused holder locked: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
	}
	defer l.Close()
	t.Logf("taken over %v after the holder paused", time.Since(start).Round(time.Millisecond))
	if g := l.Fence().Generation; g != 2 {
		t.Errorf("the take-over holds generation %d, want 2", g)
	}
}
