package supervise_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/supervise"
)

// pgKiller is a real PostgreSQL store whose connections carry one
// application_name of their own, so the test can terminate exactly its
// backends (pg_terminate_backend from a second connection), never those
// of anything else sharing the database.
type pgKiller struct {
	st      *postgres.Store
	pool    *pgxpool.Pool
	admin   *pgx.Conn
	adminMu sync.Mutex
	app     string
	// word, once set, makes the next transaction whose statements carry
	// it lose the acknowledgement of its COMMIT: the server commits, the
	// test reads the reply away and terminates the store's backends, so
	// the client sees the connection die (FATAL 57P01, then EOF) where
	// the reply was. fired counts such commits.
	word    atomic.Pointer[string]
	fired   atomic.Int64
	kills   atomic.Int64
	killErr atomic.Pointer[error]
}

// openPGKiller opens a store in a fresh schema of the test database
// through a pool whose connections the test can cut.
func openPGKiller(t *testing.T) *pgKiller {
	t.Helper()
	connString := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b [6]byte
	_, _ = rand.Read(b[:])
	k := &pgKiller{app: "agentrt_sl13_" + hex.EncodeToString(b[:])}
	cfg, err := pgdb.Config(connString, 4)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = k.app
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &ackLosingConn{Conn: c, k: k}, nil
	}
	if k.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.pool.Close)
	if k.st, err = postgres.OpenPool(ctx, k.pool, postgres.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.st.Close() })
	if k.admin, err = pgx.Connect(ctx, pgtest.URL(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.admin.Close(context.Background()) })
	return k
}

// kill terminates every backend of the store's pool, waiting (up to
// 5 s each) for them to exit, and returns how many it terminated.
func (k *pgKiller) kill() (int, error) {
	k.adminMu.Lock()
	defer k.adminMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var n int
	err := k.admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`, k.app).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("terminating the store's backends: %w", err)
	}
	k.kills.Add(1)
	return n, nil
}

// ackLosingConn is one connection of a pgKiller's pool.
type ackLosingConn struct {
	net.Conn
	k       *pgKiller
	sawWord bool
	lose    bool
}

func (c *ackLosingConn) Write(p []byte) (int, error) {
	if w := c.k.word.Load(); w != nil {
		if bytes.Contains(p, []byte(*w)) {
			c.sawWord = true
		}
		if bytes.Contains(p, []byte("commit\x00")) {
			if c.sawWord && c.k.word.CompareAndSwap(w, nil) {
				c.lose = true
			}
			c.sawWord = false
		}
	}
	return c.Conn.Write(p)
}

func (c *ackLosingConn) Read(p []byte) (int, error) {
	if c.lose {
		c.lose = false
		// The COMMIT's reply: the server committed. It is read away,
		// then the backend is terminated, so what the client reads
		// where the acknowledgement was is the connection's death.
		buf := make([]byte, 64<<10)
		if _, err := c.Conn.Read(buf); err != nil {
			return 0, err
		}
		c.k.fired.Add(1)
		if _, err := c.k.kill(); err != nil {
			c.k.killErr.Store(&err)
		}
	}
	return c.Conn.Read(p)
}

// §3.6 Durability with the spawn journal in PostgreSQL (RES-03,
// behaviour 46): the database kills the run's connection while the
// spawn record of "write extra" is committing, after the server
// committed it and before the client read the acknowledgement. The
// append's outcome is unknown to the process (the record landed), so
// its node must stay in doubt with its id spent, as for any unknown
// outcome: were it taken for not written, the next spawn would be
// journaled under the same node id, and the journal would hold two
// spawns of one node. The run ends bounded, the pool reconnects, and a
// resume from the same store returns the same result without executing
// a settled worker again.
func TestPostgresJournalConnectionDiesAtSpawnCommit(t *testing.T) {
	k := openPGKiller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	var extraErr atomic.Pointer[string]
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range []string{"write alpha", "write extra", "write beta"} {
			if task == "write extra" {
				w := "write extra"
				k.word.Store(&w)
			}
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				if task == "write extra" {
					s := err.Error()
					extraErr.Store(&s)
					continue // the verb failed: its record's outcome is unknown
				}
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	run := func(s store.Store) (supervise.SupervisedResult, *countingExecutor, error) {
		exec := newCounting(t, workerProvider(t))
		o, err := processOptions(exec, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o.Brain, o.SpawnStore, o.SpawnLeaseTTL = brain, s, storeKillLease
		res, err := supervise.Supervise(ctx, manager, "t", o)
		return res, exec, err
	}
	start := time.Now()
	first, _, err := run(k.st)
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	t.Logf("first run: %s in %s, winner %+v, extra's spawn: %v", first.Status, time.Since(start).Round(time.Millisecond), first.Winner, derefString(extraErr.Load()))
	// The test's precondition: the connection did die at that commit.
	if e := k.killErr.Load(); e != nil {
		t.Fatal(*e)
	}
	if k.fired.Load() != 1 || k.kills.Load() != 1 {
		t.Fatalf("the spawn record's commit lost its acknowledgement %d times (kills %d), want once", k.fired.Load(), k.kills.Load())
	}
	recs, err := readWholeStoreJournal(ctx, k.st, "run1")
	if err != nil {
		t.Fatal(err)
	}
	spawned := map[supervise.NodeID][]string{}
	var extra supervise.NodeID
	for _, r := range recs {
		if r.Kind == supervise.KindSpawned {
			spawned[r.Node] = append(spawned[r.Node], r.Task)
			if r.Task == "write extra" {
				extra = r.Node
			}
		}
	}
	if extra == "" {
		t.Fatalf("the spawn record whose acknowledgement was lost is not in the journal: the test did not cut where it meant to")
	}
	for id, tasks := range spawned {
		if len(tasks) > 1 {
			t.Errorf("the journal holds %d spawns of node %s: %q", len(tasks), id, tasks)
		}
	}
	for _, w := range first.Tree {
		if w.ID == extra && !w.InDoubt {
			t.Errorf("the spawn whose record landed unacknowledged reads %s, not in doubt (reason %q)", w.State, w.InDoubtReason)
		}
	}
	if msg := derefString(extraErr.Load()); msg == "" {
		t.Errorf("the spawn whose acknowledgement was lost did not fail its verb")
	}
	again, exec, err := run(k.st)
	if err != nil {
		t.Fatalf("resume of the ended run: %v", err)
	}
	if exec.count("alpha")+exec.count("beta") != 0 {
		t.Errorf("the resume executed alpha %d, beta %d times", exec.count("alpha"), exec.count("beta"))
	}
	if again.Status != first.Status || (first.Winner == nil) != (again.Winner == nil) ||
		(first.Winner != nil && (again.Winner.Node != first.Winner.Node || again.Winner.OutRef != first.Winner.OutRef)) {
		t.Errorf("resumed %s %+v, first %s %+v", again.Status, again.Winner, first.Status, first.Winner)
	}
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return strings.TrimSpace(*s)
}
