package postgres_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/storetest"
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

// The PostgreSQL run store passes the same contract cases as store/sqlite
// and store/memory, each case in a fresh schema.
func TestContract(t *testing.T) {
	pgtest.URL(t)
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		return open(t, pgtest.Schema(t), clock)
	})
}

// Opening twice (and concurrently) migrates once.
func TestMigratesOnce(t *testing.T) {
	conn := pgtest.Schema(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { open(t, conn, nil) })
	}
	wg.Wait()
	s := open(t, conn, nil)
	if _, err := s.CreateRun(context.Background(), store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
}

const (
	appenderEnv  = "AGENTRT_TEST_PG_APPENDER"
	appenderConn = "AGENTRT_TEST_PG_APPENDER_CONN"
	appendRounds = 40
	appendBatch  = 3
	appendWriter = 4
)

func appendFrom(t *testing.T, s *postgres.Store, who string) {
	body, _ := canonjson.Decode([]byte(`{"type":"message.delta"}`))
	var wg sync.WaitGroup
	for w := range appendWriter {
		wg.Go(func() {
			for i := range appendRounds {
				batch := make([]store.NewEvent, appendBatch)
				for j := range batch {
					batch[j] = store.NewEvent{ID: fmt.Sprintf("%s-w%d-%d-%d", who, w, i, j), Type: "message.delta", Time: time.Now(), Body: body}
				}
				if _, err := s.AppendEvents(context.Background(), store.Fence{RunID: "r", Generation: 1}, batch); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Appends to one run from two OS processes (this test binary re-run as a
// child) get gapless sequences 1…N, and each batch stays contiguous.
func TestAppendsFromTwoProcessesStayGapless(t *testing.T) {
	if os.Getenv(appenderEnv) != "" {
		appendFrom(t, open(t, os.Getenv(appenderConn), nil), "child")
		return
	}
	conn := pgtest.Schema(t)
	s := open(t, conn, nil)
	if _, err := s.CreateRun(context.Background(), store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAppendsFromTwoProcessesStayGapless$", "-test.count=1")
	cmd.Env = append(os.Environ(), appenderEnv+"=1", appenderConn+"="+conn)
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	appendFrom(t, s, "parent")
	if err := <-done; err != nil {
		t.Fatalf("child process: %v\n%s", err, out)
	}
	got, err := s.Events(context.Background(), "r", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * appendWriter * appendRounds * appendBatch; len(got) != want {
		t.Fatalf("%d events, want %d", len(got), want)
	}
	fromChild := 0
	for i, e := range got {
		if e.Sequence != int64(i+1) {
			t.Fatalf("sequence gap at %d: %d", i, e.Sequence)
		}
		if i%appendBatch == 0 {
			prefix := e.ID[:len(e.ID)-1]
			for j := 1; j < appendBatch; j++ {
				if got[i+j].ID != fmt.Sprintf("%s%d", prefix, j) {
					t.Fatalf("batch interleaved at %d: %s then %s", i, e.ID, got[i+j].ID)
				}
			}
		}
		if e.ID[:5] == "child" {
			fromChild++
		}
	}
	if fromChild != len(got)/2 {
		t.Errorf("%d of %d events came from the child process", fromChild, len(got))
	}
}

// freshSchemaName is a unique schema name, dropped with everything in it
// when the test ends.
func freshSchemaName(t *testing.T, conn string) string {
	t.Helper()
	name := fmt.Sprintf("agentrt_store_%d_%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, conn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS "`+name+`" CASCADE`); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// With Options.Schema the store keeps its tables in that schema, on a
// pool the caller owns (issue 14: a database that already has tables
// named runs and events, shared with River): the contract holds, the
// foreign tables are untouched, and Close leaves the caller's pool open.
func TestContractInItsOwnSchemaOnACallerPool(t *testing.T) {
	conn := pgtest.Schema(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// The connection's own schema already holds unrelated tables with
	// the store's names.
	if _, err := pool.Exec(ctx, `CREATE TABLE runs (name text); CREATE TABLE events (what int); INSERT INTO runs VALUES ('theirs')`); err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		schema := freshSchemaName(t, conn)
		s, err := postgres.OpenPool(ctx, pool, postgres.Options{Now: clock, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})

	schema := freshSchemaName(t, conn)
	s, err := postgres.OpenPool(ctx, pool, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(ctx, store.Run{ID: "ours", Kind: "execute", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM "`+schema+`".runs WHERE id = 'ours'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the run is not in schema %s: %d rows, %v", schema, n, err)
	}
	var theirs string
	if err := pool.QueryRow(ctx, `SELECT name FROM runs`).Scan(&theirs); err != nil || theirs != "theirs" {
		t.Fatalf("the foreign runs table changed: %q, %v", theirs, err)
	}
	// Reopening migrates nothing again.
	again, err := postgres.OpenPool(ctx, pool, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := again.GetRun(ctx, "ours"); err != nil || r.ID != "ours" {
		t.Fatalf("reopened store: %+v, %v", r, err)
	}
	s.Close()
	again.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("closing the store closed the caller's pool: %v", err)
	}
}

func TestSchemaNameIsAPlainIdentifier(t *testing.T) {
	for _, name := range []string{"1abc", "a-b", `a"b`, "a b", "x;DROP TABLE runs", strings.Repeat("s", 64), "é"} {
		if _, err := postgres.Open(context.Background(), "postgres://localhost:1/none", postgres.Options{Schema: name}); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("schema %q: %v, want refused", name, err)
		}
	}
	if _, err := postgres.OpenPool(context.Background(), nil, postgres.Options{}); err == nil {
		t.Error("OpenPool(nil) did not fail")
	}
}
