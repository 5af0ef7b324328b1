package pgdb

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
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
	return MigrateIn(ctx, pool, "", fsys, table, lock, now)
}

// readMigrations returns the files migrations/*.sql of fsys in name
// order, each versioned by its file name without .sql.
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
// steps that table does not record yet, and records each, holding the
// advisory lock lock as Migrate does. It is Migrate for schemas built at
// run time (a table prefix chosen by the caller).
func MigrateSteps(ctx context.Context, pool *pgxpool.Pool, steps []Migration, table string, lock int64, now time.Time) error {
	return MigrateStepsIn(ctx, pool, "", steps, table, lock, now)
}

// MigrateIn is Migrate into schema (a quoted identifier, see
// QuoteIdent): the schema is created if missing and the migration
// transaction runs with it alone as its search_path, so the steps'
// unqualified names (and table) land in it. An empty schema is Migrate.
func MigrateIn(ctx context.Context, pool *pgxpool.Pool, schema string, fsys fs.FS, table string, lock int64, now time.Time) error {
	steps, err := readMigrations(fsys)
	if err != nil {
		return err
	}
	return MigrateStepsIn(ctx, pool, schema, steps, table, lock, now)
}

// MigrateStepsIn is MigrateSteps into schema, as MigrateIn.
func MigrateStepsIn(ctx context.Context, pool *pgxpool.Pool, schema string, steps []Migration, table string, lock int64, now time.Time) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lock); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if schema != "" {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+schema); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if _, err := tx.Exec(ctx, `SET LOCAL search_path TO `+schema); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
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

// IdleInTransactionTimeout is how long a session of a pool made by
// Config may sit idle inside a transaction before PostgreSQL ends it and
// rolls the transaction back. agentrt's transactions never wait between
// statements, so only a process that is paused (SIGSTOP, a frozen VM)
// or wedged sits there — and while it does, the rows it locked block
// every other process: a paused fleet worker in the middle of a lease
// renewal would keep its run from ever being taken over. The bound is
// below the stores' usual call timeouts (delegation's 10 s), so those
// calls wait out a paused holder rather than fail. A connection string
// that sets idle_in_transaction_session_timeout itself keeps its value.
const IdleInTransactionTimeout = 8 * time.Second

// DefaultConnectTimeout bounds opening one connection (the dial and the
// startup handshake) of a pool made by Config when the connection string
// sets no connect_timeout: a database that stopped answering fails the
// caller's first query within it instead of holding it until the
// caller's own deadline, if it has one.
const DefaultConnectTimeout = 10 * time.Second

// Config parses connString (a postgres:// URL or key=value string) into
// a pool configuration capped at maxConns connections when it is
// positive, with sessions bounded by IdleInTransactionTimeout and
// connecting bounded by DefaultConnectTimeout.
func Config(connString string, maxConns int32) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	const param = "idle_in_transaction_session_timeout"
	if _, set := cfg.ConnConfig.RuntimeParams[param]; !set {
		cfg.ConnConfig.RuntimeParams[param] = fmt.Sprint(IdleInTransactionTimeout.Milliseconds())
	}
	cfg.ShouldPing = ShouldPing
	return cfg, nil
}

// pingAfterIdle is how long a pooled connection may sit idle before
// ShouldPing pings it whatever its socket shows (pgx's own default).
const pingAfterIdle = time.Second

// ShouldPing is the pgxpool.Config.ShouldPing of a pool made by Config:
// a connection taken from the pool is pinged first, and replaced when
// the ping fails, if it sat idle longer than a second (as pgx does by
// default) or if its socket holds something unasked for — the server's
// FATAL message and end of stream when PostgreSQL terminated its backend
// (pg_terminate_backend, a failover, a restart) while it sat in the pool.
// Without that check such a connection would carry the caller's request
// to a server that never reads it, and the call would fail (a write with
// an outcome it cannot know) although a fresh connection would serve it.
// Checking a socket is one non-blocking peek, not a round trip; where it
// cannot be peeked at (a platform without MSG_PEEK, a dialer wrapping
// the socket) only the idle time counts.
func ShouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	return p.IdleDuration > pingAfterIdle || !connQuiet(p.Conn.PgConn().Conn())
}

// connQuiet is whether nothing is waiting to be read on c, an idle
// connection, as far as can be told: true when it cannot be.
func connQuiet(c net.Conn) bool {
	for c != nil {
		switch u := c.(type) {
		case syscall.Conn:
			return socketQuiet(u)
		case interface{ NetConn() net.Conn }: // *tls.Conn
			c = u.NetConn()
		default:
			return true
		}
	}
	return true
}

// Open connects a pool to the database named by connString (see
// Config), capped at maxConns connections when it is positive, and
// applies the migrations of fsys as Migrate does.
func Open(ctx context.Context, connString string, maxConns int32, fsys fs.FS, table string, lock int64, now time.Time) (*pgxpool.Pool, error) {
	cfg, err := Config(connString, maxConns)
	if err != nil {
		return nil, err
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

// QuoteIdent returns name as a quoted PostgreSQL identifier when it is a
// plain one: a letter or underscore, then letters, digits or
// underscores, at most 63 bytes (what PostgreSQL keeps of a name).
// Anything else is refused, so a name never needs escaping.
func QuoteIdent(name string) (string, error) {
	if name == "" || len(name) > 63 {
		return "", fmt.Errorf("identifier %q must be 1 to 63 characters", name)
	}
	for i, r := range name {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'
		if !letter && !(i > 0 && r >= '0' && r <= '9') {
			return "", fmt.Errorf("identifier %q must be letters, digits and underscores, not starting with a digit", name)
		}
	}
	return `"` + name + `"`, nil
}
