package supervise_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// blackHoleStore is a real store that, once frozen, answers no write:
// each fenced update or append waits for its caller's context, as a
// PostgreSQL server behind a black-holed network does.
type blackHoleStore struct {
	store.Store
	frozen atomic.Bool
	calls  atomic.Int64 // writes asked of it while frozen
}

func (s *blackHoleStore) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if s.frozen.Load() {
		s.calls.Add(1)
		<-ctx.Done()
		return store.Run{}, ctx.Err()
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

func (s *blackHoleStore) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	if s.frozen.Load() {
		s.calls.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

// Task D2 point 3: a store spawn journal whose lease lapsed while its
// store stopped answering is lost; its Close must not ask the store to
// release the lease — a fenced write of a lapsed lease is refused
// anyway, so the call could only wait out its timeout (5 s,
// kernel.DefaultCleanupTimeout) before the process may exit.
func TestLostStoreSpawnLogClosesWithoutAStoreCall(t *testing.T) {
	st := &blackHoleStore{Store: memory.New(nil)}
	l, err := supervise.OpenStoreSpawnLog(context.Background(), st, "run1", supervise.StoreSpawnLogOptions{LeaseTTL: kernel.MinLeaseTTL})
	if err != nil {
		t.Fatal(err)
	}
	st.frozen.Store(true)
	select {
	case <-l.Lost():
	case <-time.After(time.Minute):
		t.Fatal("the journal was not lost a minute after its store stopped answering")
	}
	var fence *store.FenceError
	if err := l.Held(); !errors.As(err, &fence) || fence.Reason != store.FenceLapsed {
		t.Fatalf("Held() = %v, want a *store.FenceError with reason lapsed", err)
	}
	before := st.calls.Load()
	if err := l.Close(); err != nil {
		t.Errorf("Close of a lost journal: %v", err)
	}
	if n := st.calls.Load() - before; n != 0 {
		t.Errorf("Close of a lost journal made %d store writes", n)
	}
}
