package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgdb"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
)

// stalePool is a store opened by postgres.Open on a pool of conns
// connections that all carry one application_name of their own, so the
// test terminates exactly its backends and never another session.
type stalePool struct {
	st    *postgres.Store
	admin *pgx.Conn
	app   string
	conns int
}

func openStalePool(t *testing.T, conns int, wrapped bool) *stalePool {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := &stalePool{app: "agentrt_pg14_" + hex.EncodeToString(b[:]), conns: conns}
	u, err := url.Parse(pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", p.app)
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if !wrapped {
		p.st, err = postgres.Open(ctx, u.String(), postgres.Options{MaxConns: int32(conns)})
	} else {
		// A dialer that wraps the socket hides it from the pool's
		// check of idle connections (pgdb.ShouldPing), as a platform
		// without MSG_PEEK does: the store alone must cope.
		cfg, cerr := pgdb.Config(u.String(), int32(conns))
		if cerr != nil {
			t.Fatal(cerr)
		}
		dial := cfg.ConnConfig.DialFunc
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			return struct{ net.Conn }{c}, err
		}
		pool, perr := pgxpool.NewWithConfig(ctx, cfg)
		if perr != nil {
			t.Fatal(perr)
		}
		t.Cleanup(pool.Close)
		p.st, err = postgres.OpenPool(ctx, pool, postgres.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.st.Close() })
	if p.admin, err = pgx.Connect(ctx, pgtest.URL(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.admin.Close(context.Background()) })
	return p
}

// backends counts the pool's live backends.
func (p *stalePool) backends(ctx context.Context) (int, error) {
	var n int
	err := p.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, p.app).Scan(&n)
	return n, err
}

// fill makes the pool open all its connections (concurrent reads of run
// id until PostgreSQL shows p.conns backends of the pool), then leaves
// them idle.
func (p *stalePool) fill(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		var wg sync.WaitGroup
		for range 2 * p.conns {
			wg.Go(func() {
				for range 5 {
					_, _ = p.st.GetRun(ctx, id)
				}
			})
		}
		wg.Wait()
		n, err := p.backends(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == p.conns {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the pool opened %d of its %d connections", n, p.conns)
		}
	}
}

// kill terminates every backend of the pool, waiting for each to exit,
// and checks that it found them all.
func (p *stalePool) kill(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var n int
	if err := p.admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`, p.app).Scan(&n); err != nil {
		t.Fatalf("terminating the pool's backends: %v", err)
	}
	if n != p.conns {
		t.Fatalf("terminated %d backends, want the pool's %d", n, p.conns)
	}
}

// After PostgreSQL terminated every backend of the store's pool while
// they sat idle (an administrator's pg_terminate_backend, a failover, a
// proxy restarting), each pooled connection is dead, and a call that
// takes one never reached the server: it is safe to make again on a
// fresh connection. Reads, single-statement writes and transactions
// (conns+1 of each, so every dead connection is met) succeed; none fails
// with the dead connection's error, and none reports an unknown outcome
// for a request the server never received. (RES-03: a lease renewal or
// a spawn append that fails so gives a run up.)
func TestStalePooledConnectionsAreReplaced(t *testing.T) {
	testStalePool(t, false)
}

// Where the pool cannot see that an idle connection was cut (a dialer
// wrapping the socket, a platform without MSG_PEEK), the dead
// connection meets the request. The store makes a read, and the BEGIN
// of a transaction, once more on a fresh connection when the first try
// died with its connection (a read changes nothing, a failed BEGIN
// wrote nothing): reads, lease renewals (UpdateFenced: a read, then
// the write on the connection the read just used) and transactions
// (ledger and event appends) succeed. A single-statement write that
// met a dead connection may have been received: it succeeds or reports
// store.ErrUnknownOutcome, never another error. (RES-03.)
func TestStaleWrappedConnectionsAreRetried(t *testing.T) {
	testStalePool(t, true)
}

func testStalePool(t *testing.T, wrapped bool) {
	const conns = 4
	body, err := canonjson.Decode([]byte(`{"k":"v"}`))
	if err != nil {
		t.Fatal(err)
	}
	kinds := []struct {
		name string
		// mayBeSent: the call is a single statement that may meet a
		// dead connection when the pool cannot check it (wrapped).
		mayBeSent bool
		call      func(ctx context.Context, st *postgres.Store, i int) error
	}{
		{"read", false, func(ctx context.Context, st *postgres.Store, _ int) error {
			_, err := st.GetRun(ctx, "r")
			return err
		}},
		{"write", true, func(ctx context.Context, st *postgres.Store, i int) error {
			_, err := st.CreateRun(ctx, store.Run{ID: fmt.Sprintf("w%d", i), Kind: "execute", Status: store.StatusRunning})
			return err
		}},
		{"claim", true, func(ctx context.Context, st *postgres.Store, i int) error {
			_, _, err := st.ClaimIdempotency(ctx, store.Idempotency{Scope: "s", Key: fmt.Sprintf("k%d", i), RequestDigest: "sha256:" + strings.Repeat("0", 64)})
			return err
		}},
		{"fenced-update", false, func(ctx context.Context, st *postgres.Store, _ int) error {
			_, err := st.UpdateFenced(ctx, store.Fence{RunID: "r", Generation: 1}, func(r *store.Run) error {
				r.LeaseUntil = time.Now().Add(time.Minute)
				return nil
			})
			return err
		}},
		{"transaction", false, func(ctx context.Context, st *postgres.Store, _ int) error {
			_, err := st.AppendLedger(ctx, store.Fence{RunID: "r", Generation: 1}, []canonjson.Value{body}, time.Now())
			return err
		}},
		{"append", false, func(ctx context.Context, st *postgres.Store, i int) error {
			_, err := st.AppendEvents(ctx, store.Fence{RunID: "r", Generation: 1}, []store.NewEvent{{ID: fmt.Sprintf("e%d", i), Type: "t", Time: time.Now(), Body: body}})
			return err
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			p := openStalePool(t, conns, wrapped)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := p.st.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning, LeaseUntil: time.Now().Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			p.fill(t, "r")
			p.kill(t)
			for i := range conns + 1 {
				err := kind.call(ctx, p.st, i)
				if err != nil && wrapped && kind.mayBeSent && errors.Is(err, store.ErrUnknownOutcome) {
					continue
				}
				if err != nil {
					t.Errorf("call %d of %d after the pool's backends were terminated: %v (unknown outcome: %t)",
						i+1, conns+1, err, errors.Is(err, store.ErrUnknownOutcome))
				}
			}
		})
	}
}

// BenchmarkGetRun is one read through the store's pool: what a check of
// each pooled connection on acquire costs a call.
func BenchmarkGetRun(b *testing.B) {
	s := open(b, pgtest.Schema(b), nil)
	ctx := context.Background()
	if _, err := s.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.GetRun(ctx, "r"); err != nil {
			b.Fatal(err)
		}
	}
}
