package postgres_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	runpostgres "github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/postgres"
	"github.com/agentrt/agentrt/workspace/storetest"
)

func open(t testing.TB, conn string, clock func() time.Time) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), conn, postgres.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// WST-14: the PostgreSQL adapter passes the contract cases, each in a
// fresh schema. The erasure check looks at every row of both tables: no
// query can return erased content (see the package doc on VACUUM).
func TestContract(t *testing.T) {
	pgtest.URL(t)
	conns := map[workspace.Store]string{}
	var mu sync.Mutex
	storetest.Run(t, storetest.Adapter{
		Open: func(t *testing.T, clock func() time.Time) workspace.Store {
			conn := pgtest.Schema(t)
			s := open(t, conn, clock)
			mu.Lock()
			conns[s] = conn
			mu.Unlock()
			return s
		},
		RawContains: func(t *testing.T, s workspace.Store, needle []byte) bool {
			mu.Lock()
			conn := conns[s]
			mu.Unlock()
			c, err := pgx.Connect(context.Background(), conn)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(context.Background())
			var found bool
			err = c.QueryRow(context.Background(), `SELECT
				EXISTS (SELECT 1 FROM workspace_documents WHERE position($1::bytea IN body) > 0)
				OR EXISTS (SELECT 1 FROM workspace_tombstones WHERE position($1::bytea IN convert_to(path || deleted_by, 'UTF8')) > 0)`,
				needle).Scan(&found)
			if err != nil {
				t.Fatal(err)
			}
			return found
		},
	})
}

// Issue 5: 32 writers × 500 compare-and-set increments in one process
// (its writers share a pool of connections).
func TestContention(t *testing.T) {
	storetest.CheckContention(t, open(t, pgtest.Schema(t), nil), 32, 500)
}

const connEnv = "AGENTRT_TEST_WORKSPACE_PG_CONN"

// Issue 5: the same contention across two OS processes sharing the
// database: this test process and the test binary re-run as a second one.
func TestContentionAcrossProcesses(t *testing.T) {
	conn := os.Getenv(connEnv)
	if conn == "" {
		conn = pgtest.Schema(t)
	}
	storetest.ContendAcrossProcesses(t, storetest.ProcessOptions{
		Open:    func(t *testing.T) workspace.Store { return open(t, conn, nil) },
		Env:     []string{connEnv + "=" + conn},
		Writers: 32, Attempts: 500,
	})
}

// The workspace and the run store share one database and schema: their
// tables and migrations tables are distinct.
func TestSharesTheRunStoreDatabase(t *testing.T) {
	ctx := context.Background()
	conn := pgtest.Schema(t)
	for range 2 {
		runs, err := runpostgres.Open(ctx, conn, runpostgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ws := open(t, conn, nil)
		runs.Close()
		ws.Close()
	}
	runs, err := runpostgres.Open(ctx, conn, runpostgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer runs.Close()
	ws := open(t, conn, nil)
	if _, err := runs.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Put(ctx, "t", "/files/a", []byte("a"), workspace.ExpectAbsent(), "alice"); err != nil {
		t.Fatal(err)
	}
}
