package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	runsqlite "github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/sqlite"
	"github.com/agentrt/agentrt/workspace/storetest"
)

func openAt(t testing.TB, path string, clock func() time.Time) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawContains checkpoints the log into the database file and looks for
// needle in every file SQLite keeps for the database.
func rawContains(t *testing.T, ws workspace.Store, needle []byte) bool {
	s := ws.(*sqlite.Store)
	if err := s.Checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal", "-journal"} {
		b, err := os.ReadFile(s.Path() + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, needle) {
			return true
		}
	}
	return false
}

// WST-14: the SQLite adapter passes the contract cases, including the
// raw-file half of the erasure case (WST-06).
func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Adapter{
		Open: func(t *testing.T, clock func() time.Time) workspace.Store {
			return openAt(t, filepath.Join(t.TempDir(), "agentrt.db"), clock)
		},
		RawContains: rawContains,
	})
}

// Issue 5: 32 writers × 500 compare-and-set increments in one process.
func TestContention(t *testing.T) {
	storetest.CheckContention(t, openAt(t, filepath.Join(t.TempDir(), "agentrt.db"), nil), 32, 500)
}

const dbEnv = "AGENTRT_TEST_WORKSPACE_SQLITE"

// Issue 5: the same contention across two OS processes on one file: this
// test process and the test binary re-run as a second process.
func TestContentionAcrossProcesses(t *testing.T) {
	path := os.Getenv(dbEnv)
	if path == "" {
		path = filepath.Join(t.TempDir(), "agentrt.db")
	}
	storetest.ContendAcrossProcesses(t, storetest.ProcessOptions{
		Open:    func(t *testing.T) workspace.Store { return openAt(t, path, nil) },
		Env:     []string{dbEnv + "=" + path},
		Writers: 32, Attempts: 500,
	})
}

// The workspace shares the run store's database file: separate tables,
// separate migrations tables, both usable, both reopened.
func TestSharesTheRunStoreFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	for round := range 2 {
		runs, err := runsqlite.Open(ctx, path, runsqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ws, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if _, err := runs.CreateRun(ctx, store.Run{ID: "r1", Kind: "execute", Status: store.StatusRunning}); err != nil {
				t.Fatal(err)
			}
			if _, err := ws.Put(ctx, "t", "/files/a", []byte("a"), workspace.ExpectAbsent(), "alice"); err != nil {
				t.Fatal(err)
			}
		} else {
			if r, err := runs.GetRun(ctx, "r1"); err != nil || r.ID != "r1" {
				t.Errorf("run after reopen: %+v %v", r, err)
			}
			if d, err := ws.Get(ctx, "t", "/files/a"); err != nil || string(d.Body) != "a" {
				t.Errorf("document after reopen: %+v %v", d, err)
			}
		}
		runs.Close()
		ws.Close()
	}
	// Opening the workspace first works too (each store migrates its own
	// tables).
	other := filepath.Join(t.TempDir(), "agentrt.db")
	ws := openAt(t, other, nil)
	runs, err := runsqlite.Open(ctx, other, runsqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer runs.Close()
	if _, err := runs.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Put(ctx, "t", "/files/b", nil, workspace.ExpectAbsent(), "bob"); err != nil {
		t.Fatal(err)
	}
}

// A write acknowledged by one Store value is durable and visible to a new
// one on the same file.
func TestReopenKeepsDocumentsAndTombstones(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nested", "agentrt.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Put(ctx, "t", "/files/a", []byte("keep"), workspace.ExpectAbsent(), "alice")
	s.Put(ctx, "t", "/files/b", []byte("drop"), workspace.ExpectAbsent(), "alice")
	if _, err := s.Delete(ctx, "t", "/files/b", workspace.ExpectRevision(1), "alice"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path, nil)
	if d, err := s.Get(ctx, "t", "/files/a"); err != nil || string(d.Body) != "keep" {
		t.Errorf("after reopen: %+v %v", d, err)
	}
	if ts, err := s.Tombstones(ctx, "t", "/"); err != nil || len(ts) != 1 || ts[0].Path != "/files/b" {
		t.Errorf("tombstones after reopen: %+v %v", ts, err)
	}
	if m, err := s.Put(ctx, "t", "/files/b", []byte("again"), workspace.ExpectAbsent(), "alice"); err != nil || m.Revision != 2 {
		t.Errorf("recreate after reopen: %+v %v", m, err)
	}
}
