package kernel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
)

// A run on PostgreSQL whose store's pooled connections were all cut
// while they sat idle (pg_terminate_backend of every backend of the
// pool: an administrator, a failover) goes on and completes: its next
// writes (the iteration's events, lease renewals, the end) are made on
// fresh connections, none fails with a dead one, and the run keeps its
// lease. Only this store's backends are terminated (its own
// application_name). (RES-03; PG14.)
func TestRunSurvivesStalePooledConnections(t *testing.T) {
	const conns = 4
	var b [6]byte
	_, _ = rand.Read(b[:])
	app := "agentrt_pg14k_" + hex.EncodeToString(b[:])
	u, err := url.Parse(pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, u.String(), postgres.Options{MaxConns: conns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	admin, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	backends := func() int {
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	const runID = "stale-conns"
	planning, planned := make(chan struct{}), make(chan struct{})
	var once sync.Once
	type result struct {
		res *kernel.RoundsResult[string, string]
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := kernel.Rounds(ctx, kernel.RoundsOptions[string, string]{
			Task: "t", RunID: runID, LeaseTTL: 8 * time.Second,
			Driver: kernel.Driver[string, string]{
				Plan: func(ctx context.Context, _ string, h []kernel.Iteration[string, string]) ([]string, error) {
					if len(h) > 0 {
						return nil, nil
					}
					once.Do(func() { close(planning) })
					select {
					case <-planned:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return []string{"a"}, nil
				},
				Decide: func(context.Context, []kernel.Iteration[string, string]) (kernel.Decision, error) {
					return kernel.DecisionDone, nil
				},
			},
			Agents:   []kernel.Agent[string]{{Name: "only", Profile: mustProfile(t, noteWriter)}},
			Parse:    parseNote,
			Provider: scripted.InProcess(echo),
			Store:    st,
		})
		done <- result{res, err}
	}()
	select {
	case <-planning:
	case r := <-done:
		t.Fatalf("the run ended before planning: %v", r.err)
	case <-ctx.Done():
		t.Fatal("the run never planned")
	}
	// Every connection of the pool open and idle, then cut.
	for backends() < conns {
		if ctx.Err() != nil {
			t.Fatalf("the pool opened %d of its %d connections", backends(), conns)
		}
		var wg sync.WaitGroup
		for range 2 * conns {
			wg.Go(func() { _, _ = st.GetRun(ctx, runID) })
		}
		wg.Wait()
	}
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed != conns {
		t.Fatalf("terminated %d backends, want the pool's %d", killed, conns)
	}
	close(planned)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("the run failed after its pool's connections were cut: %v", r.err)
		}
		if r.res.Winner == nil {
			t.Fatalf("the run completed with no winner: %+v", r.res)
		}
	case <-ctx.Done():
		t.Fatal("the run did not end")
	}
	rr, err := kernel.ReadRun(ctx, st, runID)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Status != store.StatusCompleted {
		t.Fatalf("the run reads %s, record %+v; want it completed", rr.Status, rr.Exact)
	}
}
