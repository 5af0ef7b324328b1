package sqlitedb_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/sqlitedb"
)

// Opening an already migrated file while another process holds its
// write lock (paused in the middle of a write) succeeds and reads: only
// a migration that has something to apply takes the write lock. A
// migration that has, waits out the busy timeout and fails as before.
func TestMigratedOpenDoesNotWaitForTheWriteLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	steps := []sqlitedb.Migration{{Version: "0001", SQL: `CREATE TABLE t (x INTEGER) STRICT`}}
	w, r, err := sqlitedb.Open(ctx, path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := sqlitedb.MigrateSteps(ctx, w, steps, "m", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	// The holder: a write transaction that is never committed.
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO t (x) VALUES (1)`); err != nil {
		t.Fatal(err)
	}

	const busy = 300 * time.Millisecond
	w2, r2, err := sqlitedb.Open(ctx, path, busy)
	if err != nil {
		t.Fatalf("opening while the write lock is held: %v", err)
	}
	defer r2.Close()
	defer w2.Close()
	if err := sqlitedb.MigrateSteps(ctx, w2, steps, "m", time.Unix(0, 0)); err != nil {
		t.Fatalf("migrating a migrated file while the write lock is held: %v", err)
	}
	var n int
	if err := r2.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("reading: %d rows, %v; want 0 (the holder's row is not committed)", n, err)
	}
	more := append(steps, sqlitedb.Migration{Version: "0002", SQL: `CREATE TABLE u (y INTEGER) STRICT`})
	start := time.Now()
	if err := sqlitedb.MigrateSteps(ctx, w2, more, "m", time.Unix(0, 0)); err == nil {
		t.Fatal("a migration with a step to apply went through while another held the write lock")
	}
	if took := time.Since(start); took < busy {
		t.Errorf("the refused migration returned after %v, before the busy timeout %v", took, busy)
	}
}
