package pgdb

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migration is one schema step: Version is what the migrations table
// records once SQL (one or more statements) has run.
type Migration struct {
	Version string
	SQL     string
}

// Migrate applies, in one transaction and in name order, the files
// migrations/*.sql of fsys that table does not record yet, and records
// each (version = the file name without .sql). It holds the advisory lock
// lock for the transaction, so processes starting together migrate once.
func Migrate(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS, table string, lock int64, now time.Time) error {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	steps := make([]Migration, 0, len(names))
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		steps = append(steps, Migration{Version: strings.TrimSuffix(filepath.Base(name), ".sql"), SQL: string(body)})
	}
	return MigrateSteps(ctx, pool, steps, table, lock, now)
}

// MigrateSteps applies, in one transaction and in the order given, the
// steps that table does not record yet, and records each, holding the
// advisory lock lock as Migrate does. It is Migrate for schemas built at
// run time (a table prefix chosen by the caller).
func MigrateSteps(ctx context.Context, pool *pgxpool.Pool, steps []Migration, table string, lock int64, now time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lock); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (version text PRIMARY KEY, applied_at bigint NOT NULL)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		for _, step := range steps {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE version = $1`, step.Version).Scan(&n); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if n > 0 {
				continue
			}
			if _, err := tx.Exec(ctx, step.SQL); err != nil {
				return fmt.Errorf("migration %s: %w", step.Version, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+table+` (version, applied_at) VALUES ($1, $2)`, step.Version, now.UnixNano()); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		}
		return nil
	})
}

// Open connects a pool to the database named by connString (a
// postgres:// URL or key=value string), capped at maxConns connections
// when it is positive, and applies the migrations of fsys as Migrate does.
func Open(ctx context.Context, connString string, maxConns int32, fsys fs.FS, table string, lock int64, now time.Time) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := Migrate(ctx, pool, fsys, table, lock, now); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}
