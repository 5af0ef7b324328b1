package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock func() time.Time) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestReopenKeepsEverythingAndMigratesOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "agentrt.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvents(ctx, store.Fence{RunID: "r", Generation: 1}, []store.NewEvent{{ID: "e1", Type: "t", Time: time.Now()}}); err == nil {
		t.Fatal("appended an event with no body")
	}
	s.Close()
	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.GetRun(ctx, "r"); err != nil || r.Status != store.StatusRunning {
		t.Fatalf("after reopen: %+v, %v", r, err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(sqlite.HomeEnv, "/tmp/agentrt-home")
	if p, err := sqlite.DefaultPath(); err != nil || p != "/tmp/agentrt-home/agentrt.db" {
		t.Errorf("DefaultPath = %q, %v", p, err)
	}
}
