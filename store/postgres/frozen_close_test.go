package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
)

// A store whose server stopped answering (a TCP path that forwards
// nothing, closing nothing) closes within postgres.PoolCloseWait: a
// connection a cancelled call left broken is closed by pgx in the
// background with a cancel request it waits 15 s for, and Close does
// not wait for that — a process ending because its store froze must
// not be held by it.
func TestCloseWhenServerFrozenIsBounded(t *testing.T) {
	dsn, proxy := pgtest.ProxiedSchema(t)
	st, err := postgres.Open(context.Background(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := st.CreateRun(context.Background(), store.Run{ID: "r", Kind: "k", Status: store.StatusRunning, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	proxy.BlackHole()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	_, err = st.GetRun(ctx, "r")
	cancel()
	if err == nil {
		t.Fatal("a read through the frozen proxy answered")
	}
	closed := make(chan struct{})
	start := time.Now()
	go func() { st.Close(); close(closed) }()
	// The bound's margin is for a loaded machine; the cleanup pgx waits
	// for is 15 s.
	select {
	case <-closed:
		t.Logf("closed in %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(postgres.PoolCloseWait + 5*time.Second):
		t.Fatalf("Close still waits %v after the server froze", time.Since(start).Round(time.Millisecond))
	}
	proxy.Restore()
}
