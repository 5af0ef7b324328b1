package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentrt/agentrt/internal/pgtest"
)

// The proxy makes a real pgx pool stop answering (black hole: a call
// waits for its deadline), fail at once (reset), and answer again
// (restore), as the store-failure tests rely on.
func TestProxyModes(t *testing.T) {
	dsn, proxy := pgtest.ProxiedSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ping := func(d time.Duration) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		start := time.Now()
		var one int
		err := pool.QueryRow(ctx, "SELECT 1").Scan(&one)
		return time.Since(start), err
	}
	if _, err := ping(30 * time.Second); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	proxy.BlackHole()
	if took, err := ping(300 * time.Millisecond); err == nil || took < 300*time.Millisecond {
		t.Fatalf("black hole: answered %v after %v; want no answer until the deadline", err, took)
	}
	proxy.Restore()
	if _, err := ping(30 * time.Second); err != nil {
		t.Fatalf("after restore: %v", err)
	}

	proxy.Reset()
	if took, err := ping(30 * time.Second); err == nil || took > 20*time.Second {
		t.Fatalf("reset: answered %v after %v; want a prompt failure", err, took)
	}
	proxy.Restore()
	if _, err := ping(30 * time.Second); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}
