package fleet

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
)

// openTestFleet opens a migrated fleet on a fresh PostgreSQL schema,
// River's tables beside the store's, closed when the test ends. It
// returns the fleet and its connection string (the schema is its
// search_path).
func openTestFleet(t testing.TB) (*Fleet, string) {
	t.Helper()
	conn := pgtest.Schema(t)
	f, err := Open(t.Context(), Options{DatabaseURL: conn, RiverSchema: schemaOfConn(t, conn)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return f, conn
}

// schemaOfConn is the schema a pgtest connection string selects.
func schemaOfConn(t testing.TB, conn string) string {
	t.Helper()
	u, err := url.Parse(conn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}

// runTestWorker runs a worker with o on its own fleet connection to conn
// (River's tables in schema), as a worker process of its own would,
// until the test ends or stop is called. stop waits up to a minute for
// the worker to return and reports an error it returned.
func runTestWorker(t testing.TB, conn, schema string, o WorkerOptions) (w *Worker, stop func()) {
	t.Helper()
	f, err := Open(t.Context(), Options{DatabaseURL: conn, RiverSchema: schema})
	if err != nil {
		t.Fatal(err)
	}
	w, err = f.NewWorker(t.Context(), o)
	if err != nil {
		f.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("worker %s: %v", w.ID(), err)
				}
			case <-time.After(time.Minute):
				t.Errorf("worker %s did not stop within a minute", w.ID())
			}
			f.Close()
		})
	}
	t.Cleanup(stop)
	return w, stop
}
