package sqlitetest_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/sqlitetest"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// While the lock is held, a store's writes wait out its busy timeout and
// fail; reads answer; once released, writes go on.
func TestHoldBlocksWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	const busy = 300 * time.Millisecond
	st, err := sqlite.Open(ctx, path, sqlite.Options{BusyTimeout: busy})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateRun(ctx, store.Run{ID: "before", Kind: "test", Status: store.StatusPending}); err != nil {
		t.Fatal(err)
	}

	lock := sqlitetest.Hold(t, path, 10*time.Second)
	start := time.Now()
	_, err = st.CreateRun(ctx, store.Run{ID: "during", Kind: "test", Status: store.StatusPending})
	if took := time.Since(start); err == nil || took < busy {
		t.Fatalf("write under the lock: %v after %v; want a failure after the busy timeout", err, took)
	}
	if _, err := st.GetRun(ctx, "before"); err != nil {
		t.Fatalf("a read under the lock: %v", err)
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(ctx, store.Run{ID: "after", Kind: "test", Status: store.StatusPending}); err != nil {
		t.Fatalf("write after release: %v", err)
	}
	if _, err := st.GetRun(ctx, "during"); err == nil {
		t.Error("the write refused under the lock was stored")
	}
}
