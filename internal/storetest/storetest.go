package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// Each runs fn as the subtests "sqlite" and "postgres", each with an
// opener of a fresh database of its own: every call of open opens a new
// handle on it, closed when the test that opened it ends.
func Each(t *testing.T, fn func(t *testing.T, open func(t *testing.T) store.Store)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLite returns an opener of a fresh SQLite file in t's temporary
// directory: every call opens a second handle on the same file.
func SQLite(t testing.TB) func(t *testing.T) store.Store {
	path := filepath.Join(t.TempDir(), "agentrt.db")
	return func(t *testing.T) store.Store {
		t.Helper()
		s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// Postgres returns an opener of a fresh PostgreSQL schema (pgtest.Schema,
// dropped when t ends): every call opens a new pool on it.
func Postgres(t testing.TB) func(t *testing.T) store.Store {
	conn := pgtest.Schema(t)
	return func(t *testing.T) store.Store {
		t.Helper()
		s, err := postgres.Open(context.Background(), conn, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
