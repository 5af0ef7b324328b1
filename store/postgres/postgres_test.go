package postgres_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

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
