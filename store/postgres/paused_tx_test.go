package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
)

// A process paused inside a transaction (SIGSTOP in the middle of a
// lease renewal) keeps the rows it locked from every other process for
// as long as it is paused: PostgreSQL keeps an idle session's
// transaction open. The store's sessions are bounded idle in a
// transaction (pgdb.IdleInTransactionTimeout), so PostgreSQL ends the
// paused holder's session and another process's update of the same run
// goes through within that bound, instead of waiting out its own
// deadline while the run can never be taken over.
func TestPausedTransactionHolderIsEnded(t *testing.T) {
	conn := pgtest.Schema(t)
	s := open(t, conn, time.Now)
	ctx := t.Context()
	if _, err := s.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}

	// The paused holder: a session configured as the store's, in a
	// transaction holding the run's row, that then does nothing.
	cfg, err := pgdb.Config(conn, 1)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var setting string
	if err := pool.QueryRow(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&setting); err != nil || setting != "8s" {
		t.Fatalf("the session's idle_in_transaction_session_timeout is %q (%v), want 8s", setting, err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT id FROM runs WHERE id = 'r' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}

	// The other process: its update waits for the row, then goes through
	// once PostgreSQL ended the idle holder.
	uctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	start := time.Now()
	if _, err := s.UpdateRun(uctx, "r", func(r *store.Run) error {
		r.Owner = "taker"
		return nil
	}); err != nil {
		t.Fatalf("updating the run the paused holder locked: %v (after %v)", err, time.Since(start))
	}
	took := time.Since(start)
	t.Logf("the update went through %v after the holder went idle", took.Round(time.Millisecond))
	if took < pgdb.IdleInTransactionTimeout/2 {
		t.Errorf("the update went through after %v: the holder's lock was not held", took)
	}
	if took > pgdb.IdleInTransactionTimeout+20*time.Second {
		t.Errorf("the update went through only after %v", took)
	}
}

// A connection string that sets the bound itself keeps its value.
func TestIdleInTransactionTimeoutFromConnString(t *testing.T) {
	cfg, err := pgdb.Config("postgres://u@localhost/db?idle_in_transaction_session_timeout=60000", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; got != "60000" {
		t.Errorf("idle_in_transaction_session_timeout %q, want the connection string's 60000", got)
	}
}
