package supervise_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// slowEvents is a store whose event reads each take delay: a large
// journal read page by page from a distant database.
type slowEvents struct {
	store.Store
	delay   time.Duration
	reading chan struct{} // closed at the first read
	once    sync.Once
}

func (s *slowEvents) Events(ctx context.Context, runID, after string, limit int) ([]store.Event, error) {
	s.once.Do(func() { close(s.reading) })
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.Store.Events(ctx, runID, after, limit)
}

// §3.6 Durability with the spawn journal in the store (RES-03): taking
// a journal over reads it back before the run goes on, and that read
// may outlast the lease. The lease is renewed while the journal loads,
// so no other process takes the run over from under the one loading it
// (on the old code a third process took it over 1.2 s into a 1.8 s
// load, and the loader's first append was fenced).
func TestStoreSpawnLogRenewsWhileItLoads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := memory.New(nil)
	const ttl = time.Second
	first, err := supervise.OpenStoreSpawnLog(ctx, st, spawnLogRun, supervise.StoreSpawnLogOptions{Owner: "first", LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Append(ctx, contractRecords[0]); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	// Two pages (the records, then the empty page that ends the read)
	// at 900 ms each: 1.8 s of loading under a 1 s lease.
	slow := &slowEvents{Store: st, delay: 900 * time.Millisecond, reading: make(chan struct{})}
	type opened struct {
		l   *supervise.StoreSpawnLog
		err error
	}
	loaded := make(chan opened, 1)
	go func() {
		l, err := supervise.OpenStoreSpawnLog(ctx, slow, spawnLogRun, supervise.StoreSpawnLogOptions{Owner: "loader", LeaseTTL: ttl})
		loaded <- opened{l, err}
	}()
	select {
	case <-slow.reading: // claimed; loading now
	case <-ctx.Done():
		t.Fatal("the loader never read the journal")
	}
	time.Sleep(ttl + 200*time.Millisecond) // past the claim's lease, mid-load
	if other, err := supervise.OpenStoreSpawnLog(ctx, st, spawnLogRun, supervise.StoreSpawnLogOptions{Owner: "other", LeaseTTL: ttl}); !errors.Is(err, supervise.ErrSpawnLogHeld) {
		if err == nil {
			other.Close()
		}
		t.Errorf("another process opening the journal while it loads: %v, want ErrSpawnLogHeld", err)
	}
	o := <-loaded
	if o.err != nil {
		t.Fatal(o.err)
	}
	defer o.l.Close()
	prior, err := o.l.Records(ctx)
	if err != nil || len(prior) != 1 {
		t.Fatalf("loaded %d records (%v), want 1", len(prior), err)
	}
	if err := o.l.Append(ctx, contractRecords[1]); err != nil {
		t.Fatalf("the loader's first append: %v", err)
	}
}
