package kernel_test

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// renewalsRefused refuses every lease renewal once refusing is set, as a
// store that stopped answering the heartbeat's connection does, while
// the run's event appends still go through.
type renewalsRefused struct {
	store.Store
	refusing atomic.Bool
}

func (s *renewalsRefused) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if s.refusing.Load() {
		return store.Run{}, errors.New("injected: the store does not answer the renewal")
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

// heldLossLog holds the heartbeat inside its report of the lost lease
// (the "lease lost" log record) until released: the window in which the
// loss is known to one goroutine and not yet to another.
type heldLossLog struct {
	slog.Handler
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// Enabled is true at every level: the record must reach Handle.
func (h *heldLossLog) Enabled(context.Context, slog.Level) bool { return true }

func (h *heldLossLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "lease lost" {
		h.once.Do(func() { close(h.entered) })
		select {
		case <-h.release:
		case <-time.After(10 * time.Second):
		}
	}
	return h.Handler.Handle(ctx, r)
}

// leaveWatched yields the scripted turn's events; after the first one is
// recorded it has the store refuse renewals, and yields the next only
// once the heartbeat is reporting the lapsed lease. When its consumer
// stops reading, it notes context.Cause of its context at that moment —
// what providers/remote's leave rule reads to decide whether to cancel
// the turn on the server.
type leaveWatched struct {
	contract.Provider
	st      *renewalsRefused
	log     *heldLossLog
	mu      sync.Mutex
	left    bool
	leftErr error
}

func (p *leaveWatched) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &leaveWatchedEnv{Environment: env, p: p}, nil
}

type leaveWatchedEnv struct {
	contract.Environment
	p *leaveWatched
}

func (e *leaveWatchedEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	inner := e.Environment.Stream(ctx, in)
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		n := 0
		for ev, err := range inner {
			if n == 1 {
				select {
				case <-e.p.log.entered:
				case <-time.After(30 * time.Second):
				}
			}
			n++
			if !yield(ev, err) {
				e.p.mu.Lock()
				e.p.left, e.p.leftErr = true, context.Cause(ctx)
				e.p.mu.Unlock()
				close(e.p.log.release)
				return
			}
			if n == 1 {
				e.p.st.refusing.Store(true)
			}
		}
	}
}

// A run's consumer must never stop reading a turn, because its lease was
// lost, before the turn's context carries that loss (RES-01, RES-06,
// behaviour 46): a provider reading a plain stop as its caller leaving
// deliberately cancels the turn, which the run's next holder may have
// re-attached to. The heartbeat finds the lease lapsed and, before it
// has cut the run, the consumer's next write finds the loss the
// heartbeat noted: the consumer stops at once. Before the fix the loss
// was noted, then logged, then cut, and a fenced fleet worker cancelled
// its successor's turn about once in four (internal/cli
// TestFleetWorkerPausedPastItsLeaseIsFenced).
func TestConsumerStopsOnlyAfterTheLostLeaseCutTheTurn(t *testing.T) {
	log := &heldLossLog{Handler: slog.DiscardHandler, entered: make(chan struct{}), release: make(chan struct{})}
	st := &renewalsRefused{Store: memory.New(nil)}
	p := &leaveWatched{Provider: scripted.New(mustScript(t, `{"turns":[{"steps":[{"text":"one"},{"text":" two"},{"text":" three"}]}]}`), scripted.Options{}), st: st, log: log}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := kernel.Execute(ctx, kernel.Request{
		Profile: mustProfile(t, noteWriter), Task: "t", Provider: p, Store: st, Check: nonEmpty,
		RunID: "loss-order", LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond,
		Logger: slog.New(log),
	})
	re, ok := errors.AsType[*kernel.RunError](err)
	if !ok || re.Status != store.StatusInterrupted || re.Reason != kernel.ReasonLeaseLost {
		t.Fatalf("err %v; want the run interrupted, its lease lost", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.left {
		t.Fatal("the consumer read the whole turn; want it to stop at the lost lease")
	}
	if !errors.Is(p.leftErr, contract.ErrLeaseLost) {
		t.Errorf("the consumer stopped reading while the turn's context cause was %v; want one matching contract.ErrLeaseLost, so that a provider leaves the turn to the run's next holder", p.leftErr)
	}
}
