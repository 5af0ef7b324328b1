package conversation_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver
	_ "modernc.org/sqlite"             // the sqlite database/sql driver

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/journal/conversation/conversationtest"
)

// openCallerDB opens a database/sql handle the way an application would,
// owned by the test, closed at its end.
func openCallerDB(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func sqliteDSN(path string) string {
	return "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)"
}

func openSQLOn(t *testing.T, db *sql.DB, d conversation.Dialect, opts conversation.SQLOptions) *conversation.SQL {
	t.Helper()
	s, err := conversation.OpenSQL(context.Background(), db, d, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A journal in the caller's own database (OpenSQL) passes the contract
// every adapter passes (RES-04), on SQLite and on PostgreSQL, with a
// table prefix of the caller's choosing; reopening it on the same
// database finds what was recorded.
func TestOpenSQLContract(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		conversationtest.Run(t, func(t *testing.T, lim conversation.Limits) conversationtest.Subject {
			db := openCallerDB(t, "sqlite", sqliteDSN(filepath.Join(t.TempDir(), "app.db")))
			opts := conversation.SQLOptions{Limits: lim, Prefix: "app_conv"}
			s := openSQLOn(t, db, conversation.DialectSQLite, opts)
			return conversationtest.Subject{Journal: s, Reopen: func(t *testing.T) conversation.Journal {
				s.Close()
				s = openSQLOn(t, db, conversation.DialectSQLite, opts)
				return s
			}}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		pgtest.URL(t)
		conversationtest.Run(t, func(t *testing.T, lim conversation.Limits) conversationtest.Subject {
			db := openCallerDB(t, "pgx", pgtest.Schema(t))
			opts := conversation.SQLOptions{Limits: lim, Prefix: "app_conv"}
			s := openSQLOn(t, db, conversation.DialectPostgres, opts)
			return conversationtest.Subject{Journal: s, Reopen: func(t *testing.T) conversation.Journal {
				s.Close()
				s = openSQLOn(t, db, conversation.DialectPostgres, opts)
				return s
			}}
		})
	})
}

// The caller's database is the caller's: closing the journal leaves it
// open (and the journal refuses with ErrClosed); its tables carry the
// prefix; a second OpenSQL migrates nothing again (Migrate idempotent).
// Refusals are typed: no database, an unknown dialect, a prefix that is
// not an identifier.
func TestOpenSQLOwnership(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		dialect conversation.Dialect
		db      func(t *testing.T) *sql.DB
		tables  string
	}{
		{"sqlite", conversation.DialectSQLite, func(t *testing.T) *sql.DB {
			return openCallerDB(t, "sqlite", sqliteDSN(filepath.Join(t.TempDir(), "app.db")))
		}, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('mine_runs', 'mine_turns', 'mine_migrations')`},
		{"postgres", conversation.DialectPostgres, func(t *testing.T) *sql.DB {
			return openCallerDB(t, "pgx", pgtest.Schema(t))
		}, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('mine_runs', 'mine_turns', 'mine_migrations')`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.db(t)
			for range 2 {
				s, err := conversation.OpenSQL(ctx, db, tc.dialect, conversation.SQLOptions{Prefix: "mine"})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.BeginRun(ctx, "r1", conversationtest.T0); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if _, err := s.LoadRun(ctx, "r1"); !errors.Is(err, conversation.ErrClosed) {
					t.Errorf("a closed journal loads: %v", err)
				}
			}
			if err := db.PingContext(ctx); err != nil {
				t.Fatalf("closing the journal closed the caller's database: %v", err)
			}
			var n int
			if err := db.QueryRowContext(ctx, tc.tables).Scan(&n); err != nil || n != 3 {
				t.Errorf("%d prefixed tables (%v), want 3", n, err)
			}
			if _, err := conversation.OpenSQL(ctx, db, tc.dialect, conversation.SQLOptions{Prefix: "1bad;"}); !errors.Is(err, conversation.ErrInvalidPrefix) {
				t.Errorf("a bad prefix: %v", err)
			}
		})
	}
	if _, err := conversation.OpenSQL(ctx, nil, conversation.DialectSQLite, conversation.SQLOptions{}); err == nil {
		t.Error("no database was accepted")
	}
	db := openCallerDB(t, "sqlite", sqliteDSN(filepath.Join(t.TempDir(), "x.db")))
	if _, err := conversation.OpenSQL(ctx, db, "mysql", conversation.SQLOptions{}); !errors.Is(err, conversation.ErrInvalidDialect) {
		t.Errorf("an unknown dialect: %v", err)
	}
}
