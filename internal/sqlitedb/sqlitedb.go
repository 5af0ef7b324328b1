package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"modernc.org/sqlite" // the pure-Go SQLite driver
)

// DefaultBusyTimeout is how long a writer waits for another process's
// write lock when the caller sets no timeout.
const DefaultBusyTimeout = 10 * time.Second

// Open opens the SQLite file at path (creating it and its directory,
// mode 0700, if needed) as a writer pool of one connection, whose
// transactions take the write lock up front, and a reader pool of four.
// Every connection uses WAL, synchronous FULL (a commit survives power
// loss), the busy timeout (0 means DefaultBusyTimeout) and the extra
// pragmas, written as "name(value)".
//
// Open returns once the file is in WAL mode. Switching a new file to WAL
// takes an exclusive lock, and SQLite answers SQLITE_BUSY without waiting
// when connections of several processes (or pools) race for it, so Open
// retries that switch until the busy timeout or ctx ends; afterwards
// SQLite's own busy handling applies.
func Open(ctx context.Context, path string, busy time.Duration, pragmas ...string) (w, r *sql.DB, err error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	dsn := func(txlock string) string {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		for _, p := range pragmas {
			q.Add("_pragma", p)
		}
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
		q.Set("_txlock", txlock)
		return "file:" + path + "?" + q.Encode()
	}
	if w, err = sql.Open("sqlite", dsn("immediate")); err != nil {
		return nil, nil, err
	}
	// One writer connection: SQLite serializes writers anyway, and this
	// queues this process's writers in Go instead of retrying busy.
	w.SetMaxOpenConns(1)
	if r, err = sql.Open("sqlite", dsn("deferred")); err != nil {
		w.Close()
		return nil, nil, err
	}
	r.SetMaxOpenConns(4)
	if err := awaitWAL(ctx, w, busy); err != nil {
		w.Close()
		r.Close()
		return nil, nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return w, r, nil
}

// awaitWAL opens w's connection (which sets the pragmas), retrying
// SQLITE_BUSY with a growing pause until busy has passed, and checks that
// the file is in WAL mode.
func awaitWAL(ctx context.Context, w *sql.DB, busy time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, busy)
	defer cancel()
	pause := time.Millisecond
	for {
		var mode string
		err := w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
		if err == nil {
			if !strings.EqualFold(mode, "wal") {
				return fmt.Errorf("journal mode is %q, want wal", mode)
			}
			return nil
		}
		if !isBusy(err) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (still busy after %v)", err, busy)
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5
}

// Migration is one schema step: Version is what the migrations table
// records once SQL (one or more statements) has run.
type Migration struct {
	Version string
	SQL     string
}

// Migrate applies, in one transaction and in name order, the files
// migrations/*.sql of fsys that table does not record yet, and records
// each (version = the file name without .sql).
func Migrate(ctx context.Context, w *sql.DB, fsys fs.FS, table string, now time.Time) error {
	steps, err := readMigrations(fsys)
	if err != nil {
		return err
	}
	return MigrateSteps(ctx, w, steps, table, now)
}

// readMigrations returns the files migrations/*.sql of fsys in name
// order, each as a Migration whose version is the file name without .sql.
func readMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	steps := make([]Migration, 0, len(names))
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		steps = append(steps, Migration{Version: strings.TrimSuffix(filepath.Base(name), ".sql"), SQL: string(body)})
	}
	return steps, nil
}

// MigrateSteps applies, in one transaction and in the order given, the
// steps whose version table does not record yet, and records each. It is
// Migrate for schemas built at run time (a table prefix chosen by the
// caller).
func MigrateSteps(ctx context.Context, w *sql.DB, steps []Migration, table string, now time.Time) error {
	if applied(ctx, w, steps, table) {
		// Nothing to do: opening a migrated file takes no write lock,
		// so it does not wait on a process holding one (one paused
		// mid-write blocks writers, not a reader that opens).
		return nil
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (version TEXT PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, step := range steps {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE version = ?`, step.Version).Scan(&n); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if n > 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, step.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", step.Version, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+table+` (version, applied_at) VALUES (?, ?)`, step.Version, now.UnixNano()); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	return tx.Commit()
}

// applied reports, without a transaction (so without the write lock),
// whether table records every one of steps. Any error — the table
// missing, the file busy — says no, and the caller migrates under the
// lock as usual.
func applied(ctx context.Context, w *sql.DB, steps []Migration, table string) bool {
	if len(steps) == 0 {
		return false
	}
	rows, err := w.QueryContext(ctx, `SELECT version FROM `+table)
	if err != nil {
		return false
	}
	defer rows.Close()
	have := make(map[string]bool, len(steps))
	for rows.Next() {
		var v string
		if rows.Scan(&v) != nil {
			return false
		}
		have[v] = true
	}
	if rows.Err() != nil {
		return false
	}
	for _, step := range steps {
		if !have[step.Version] {
			return false
		}
	}
	return true
}
