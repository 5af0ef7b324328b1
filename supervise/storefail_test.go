package supervise_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/storefault"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/supervise"
)

// cutBeforeAppend is a real store that is made to stop answering (by
// cut: a black hole, a lock held elsewhere) just before the first event
// append whose bodies contain word — the moment a spawn's journal record
// is written.
type cutBeforeAppend struct {
	store.Store
	word  string
	cut   func()
	once  sync.Once
	fired atomic.Bool
}

func (s *cutBeforeAppend) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	for _, e := range events {
		if strings.Contains(string(canonjson.Marshal(e.Body)), s.word) {
			s.once.Do(func() { s.fired.Store(true); s.cut() })
		}
	}
	return s.Store.AppendEvents(ctx, f, events)
}

// RES-03 with the spawn journal in SQL (PostgreSQL black-holed, SQLite
// locked elsewhere): when the journal's store stops answering as the
// second spawn is journaled, Supervise — whose caller set no deadline —
// returns in bounded time, and the worker whose spawn record never
// became durable never ran. Once the store answers, it holds no spawn
// record of that worker either.
func TestSpawnWhenJournalStoreStopsAnswering(t *testing.T) {
	const lease = 2 * time.Second
	// An append is bounded by max(lease, kernel.DefaultCleanupTimeout);
	// the rest is the run's own turns and slack for a loaded machine.
	const bound = 90 * time.Second
	stores := storefault.Stores(storefault.BlackHole, storefault.Locked)
	for _, sk := range stores {
		t.Run(string(sk.Fault), func(t *testing.T) {
			st, fail, restore := sk.Open(t)
			cutting := &cutBeforeAppend{Store: st, word: "write beta", cut: fail}
			exec := newCounting(t, workerProvider(t))
			o := baseOptions(t, exec, sequentialManager())
			o.SpawnStore, o.SpawnLeaseTTL = cutting, lease
			got, took := superviseWhileStoreFails(t, o, bound, restore)
			if took > bound {
				t.Errorf("Supervise returned after %v; want within %v", took, bound)
			}
			if !cutting.fired.Load() {
				t.Fatalf("beta's spawn was never journaled, so the store never stopped answering: %v", got.err)
			}
			if exec.count("alpha") != 1 {
				t.Errorf("alpha ran %d times; want once, before the store stopped answering", exec.count("alpha"))
			}
			if n := exec.count("beta"); n != 0 {
				t.Errorf("beta ran %d times although its spawn record never became durable", n)
			}
			t.Logf("Supervise returned after %v: status %s, reason %s, err %v", took.Round(time.Millisecond), got.res.Status, got.res.Reason, got.err)

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			events, err := st.Events(ctx, o.RunID, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			alpha := false
			for _, e := range events {
				body := string(canonjson.Marshal(e.Body))
				if strings.Contains(body, "write beta") {
					t.Errorf("the journal holds a record of beta's spawn (%s) that Supervise was told failed", body)
				}
				alpha = alpha || strings.Contains(body, "write alpha")
			}
			if !alpha {
				t.Error("the journal lost alpha's spawn record, which was durable before the store stopped answering")
			}
		})
	}
}

// Opening a SQL spawn journal on a store that does not answer (a black
// hole) fails in bounded time even for a caller that set no deadline:
// the open is bounded as each append is.
func TestOpenStoreSpawnLogWhenStoreHangs(t *testing.T) {
	const lease = 2 * time.Second
	const bound = 5*time.Second + 20*time.Second // kernel.DefaultCleanupTimeout, and slack
	dsn, proxy := pgtest.ProxiedSchema(t)
	st, err := postgres.Open(t.Context(), dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	proxy.BlackHole()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		l, err := supervise.OpenStoreSpawnLog(context.Background(), st, "run-hung", supervise.StoreSpawnLogOptions{LeaseTTL: lease})
		if err == nil {
			l.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the spawn journal opened on a store that does not answer")
		}
		if took := time.Since(start); took > bound {
			t.Errorf("the open failed after %v; want within %v", took, bound)
		}
	case <-time.After(bound + time.Minute):
		t.Fatalf("the open did not return %v after its store stopped answering", bound+time.Minute)
	}
	proxy.Restore()
}

// storeFailOutcome is what a Supervise whose journal store stopped
// answering returned.
type storeFailOutcome struct {
	res supervise.SupervisedResult
	err error
}

// superviseWhileStoreFails runs the sequential manager's run under o,
// whose store stops answering at some append, and returns what it
// returned and how long it took. A run that has not returned a minute
// past bound fails the test; restore (which makes the store answer
// again) runs either way before the result is read.
func superviseWhileStoreFails(t *testing.T, o supervise.Options, bound time.Duration, restore func()) (storeFailOutcome, time.Duration) {
	t.Helper()
	done := make(chan storeFailOutcome, 1)
	start := time.Now()
	go func() {
		res, err := supervise.Supervise(context.Background(), managerProfile(t, verbs2...), "ship", o)
		done <- storeFailOutcome{res, err}
	}()
	var got storeFailOutcome
	select {
	case got = <-done:
	case <-time.After(bound + time.Minute):
		restore()
		t.Fatalf("Supervise did not return %v after its journal store stopped answering", bound+time.Minute)
	}
	took := time.Since(start)
	restore()
	return got, took
}
