package storefault

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/sqlitetest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// Fault names one way a store stops answering.
type Fault string

// The faults Stores opens stores behind.
const (
	// BlackHole: PostgreSQL accepts bytes and answers nothing; calls wait
	// for their deadline.
	BlackHole Fault = "postgres/black-hole"
	// Reset: PostgreSQL's connections, and new ones, are reset; calls
	// fail at once.
	Reset Fault = "postgres/reset"
	// Locked: another connection holds the SQLite file's write lock;
	// writes wait out the busy timeout (SQLiteBusyTimeout), then fail.
	Locked Fault = "sqlite/locked"
)

// SQLiteBusyTimeout is the busy timeout of the SQLite stores Stores
// opens: short, so that a locked write fails soon.
const SQLiteBusyTimeout = 400 * time.Millisecond

// lockHeld bounds how long a Locked fault holds the write lock when the
// test never restores it.
const lockHeld = 20 * time.Second

// Store is a real store and a way to make it stop answering (Fail) and
// answer again (Restore). Open registers the store's Close with t.
type Store struct {
	Fault Fault
	Open  func(t testing.TB) (st store.Store, fail, restore func())
}

// Stores returns a Store for each of faults, or for every fault when
// none is named. A PostgreSQL fault needs the test database
// (pgtest.URLEnv) and skips like pgtest.Schema without it.
func Stores(faults ...Fault) []Store {
	if len(faults) == 0 {
		faults = []Fault{BlackHole, Reset, Locked}
	}
	out := make([]Store, 0, len(faults))
	for _, f := range faults {
		switch f {
		case BlackHole, Reset:
			out = append(out, Store{Fault: f, Open: func(t testing.TB) (store.Store, func(), func()) { return openPostgres(t, f == Reset) }})
		case Locked:
			out = append(out, Store{Fault: f, Open: openSQLite})
		default:
			panic("storefault: unknown fault " + string(f))
		}
	}
	return out
}

func openPostgres(t testing.TB, reset bool) (store.Store, func(), func()) {
	t.Helper()
	dsn, proxy := pgtest.ProxiedSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fail := proxy.BlackHole
	if reset {
		fail = proxy.Reset
	}
	return st, fail, proxy.Restore
}

func openSQLite(t testing.TB) (store.Store, func(), func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, path, sqlite.Options{BusyTimeout: SQLiteBusyTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var lock *sqlitetest.Lock
	fail := func() { lock = sqlitetest.Hold(t, path, lockHeld) }
	restore := func() {
		if lock == nil {
			return
		}
		if err := lock.Release(); err != nil {
			t.Error(err)
		}
	}
	return st, fail, restore
}
