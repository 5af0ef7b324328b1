package kernel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// frozenStore emulates a process paused (SIGSTOP) with a record write in
// flight: once frozen, the next event append and every lease renewal
// block, whatever their contexts; the append comes back, after thaw, with
// the error a database gives a connection it closed meanwhile, before
// the renewals do.
type frozenStore struct {
	store.Store
	appends  atomic.Int64
	frozen   atomic.Bool
	thawed   chan struct{} // closed: the append returns its error
	renewals chan struct{} // closed: renewals go on
}

var errConnClosed = errors.New("injected: terminating connection due to idle-in-transaction timeout")

func (s *frozenStore) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	if s.appends.Add(1) == 3 {
		s.frozen.Store(true)
		<-s.thawed
		return nil, errConnClosed
	}
	return s.Store.AppendEvents(ctx, f, events)
}

func (s *frozenStore) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if s.frozen.Load() {
		<-s.renewals
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

// A process paused past its lease with an event append in flight: the
// append fails once the process continues (its database closed the
// connection), before the heartbeat learns the lease is gone. That
// failure is not the run's: the lease had lapsed, so the run ends
// interrupted (lease lost), not failed (store-failed), and the provider
// sees its caller leave the turn with a cause matching
// contract.ErrLeaseLost — a remote provider then leaves the turn to the
// run's next holder instead of cancelling it (fleet takeover, behaviour
// 46 for a kernel run).
func TestWriteFailingAfterThePausedLeaseLapsedIsALostLease(t *testing.T) {
	st := &frozenStore{Store: memory.New(nil), thawed: make(chan struct{}), renewals: make(chan struct{})}
	p := &watchedProvider{Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"one"},{"text":" two"},{"text":" three"},{"delayMs":60000}]}]}`), scripted.Options{})}
	go func() {
		for !st.frozen.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(kernel.MinLeaseTTL + 300*time.Millisecond) // past the lease
		close(st.thawed)
		time.Sleep(200 * time.Millisecond) // the heartbeat wakes after
		close(st.renewals)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := kernel.Execute(ctx, kernel.Request{
		Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: nonEmpty,
		RunID: "paused-write", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond,
	})
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Status != store.StatusInterrupted || re.Reason != kernel.ReasonLeaseLost {
		t.Fatalf("err %v; want the run interrupted, its lease lost", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.causes) != 1 || !errors.Is(p.causes[0], contract.ErrLeaseLost) {
		t.Errorf("the provider's stream was left with causes %v; want one matching contract.ErrLeaseLost", p.causes)
	}
}
