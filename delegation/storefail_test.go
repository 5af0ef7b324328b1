package delegation_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/store"
)

// Modes of a faultyStore.
const (
	answer = iota
	refuseCalls
	hang
)

// faultyStore is a store that, once told, stops answering: every call
// fails at once (refuseCalls) or hangs until its deadline (hang).
type faultyStore struct {
	store.Store
	mode atomic.Int32
}

var errInjected = errors.New("injected: connection reset by peer")

func (s *faultyStore) fault(ctx context.Context) error {
	switch s.mode.Load() {
	case refuseCalls:
		return errInjected
	case hang:
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (s *faultyStore) CreateRun(ctx context.Context, r store.Run) (store.Run, error) {
	if err := s.fault(ctx); err != nil {
		return store.Run{}, err
	}
	return s.Store.CreateRun(ctx, r)
}

func (s *faultyStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if err := s.fault(ctx); err != nil {
		return store.Run{}, err
	}
	return s.Store.GetRun(ctx, id)
}

func (s *faultyStore) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	if err := s.fault(ctx); err != nil {
		return store.Run{}, err
	}
	return s.Store.UpdateRun(ctx, id, fn)
}

func (s *faultyStore) ListRuns(ctx context.Context, o store.ListOptions) ([]store.Run, error) {
	if err := s.fault(ctx); err != nil {
		return nil, err
	}
	return s.Store.ListRuns(ctx, o)
}

func (s *faultyStore) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	if err := s.fault(ctx); err != nil {
		return store.Idempotency{}, false, err
	}
	return s.Store.ClaimIdempotency(ctx, rec)
}

func (s *faultyStore) DeleteRun(ctx context.Context, id string) error {
	if err := s.fault(ctx); err != nil {
		return err
	}
	return s.Store.DeleteRun(ctx, id)
}

// TestFirstStoreFailureRefusesSubmissions: §9 "first store failure →
// refuse new submissions and fail flush" — on SQLite and PostgreSQL, a
// store that stops answering (its calls fail, or hang past the queue's
// store timeout) while a delegation runs makes the queue refuse new
// delegations (store-failed, a refusal that says to restart), and Close
// report the failure (a *StoreFailedError); nothing panics, and a queue
// opened on the store once it answers again finds every record: the
// completed one as it was, the running one taken over and resumed.
func TestFirstStoreFailureRefusesSubmissions(t *testing.T) {
	for _, sk := range stores() {
		for _, mode := range []struct {
			name string
			mode int32
		}{{"failing", refuseCalls}, {"hanging", hang}} {
			t.Run(sk.name+"/"+mode.name, func(t *testing.T) {
				ctx := deadline(t)
				base := sk.open(t)
				fs := &faultyStore{Store: base}
				f := newFixture(t, fs)
				cfg := f.config(t)
				cfg.StoreTimeout = 500 * time.Millisecond
				cfg.ClaimTTL = 900 * time.Millisecond
				cfg.Brain = holdingBrain
				q, err := delegation.Open(cfg)
				if err != nil {
					t.Fatal(err)
				}
				held := must(q.Submit(ctx, delegation.Request{Intent: "write alpha and hold"}))(t)
				waitFor(t, ctx, "the delegation to run", func() bool { return must(q.Get(ctx, held.TaskID))(t).State == delegation.StateRunning })
				if q.Failure() != nil {
					t.Fatalf("a failure before the store failed: %v", q.Failure())
				}

				fs.mode.Store(mode.mode)
				// The holder's next renewal meets the store's failure.
				waitFor(t, ctx, "the queue to notice the store's failure", func() bool { return q.Failure() != nil })
				var sf *delegation.StoreFailedError
				if !errors.As(q.Failure(), &sf) || sf.Op == "" {
					t.Fatalf("failure %T %v, want a *StoreFailedError", q.Failure(), q.Failure())
				}

				// The store answers again, but this queue takes nothing
				// new: it must be restarted.
				fs.mode.Store(answer)
				_, err = q.Submit(ctx, delegation.Request{Intent: "write beta"})
				var r *delegation.Refusal
				if !errors.As(err, &r) || r.Code != delegation.CodeStoreFailed || !strings.Contains(r.Reason, "restart") {
					t.Fatalf("submit after the failure: %v, want a store-failed refusal saying to restart", err)
				}

				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				err = q.Close(cctx)
				if !errors.As(err, &sf) {
					t.Fatalf("close: %v, want the store failure", err)
				}

				// Nothing was lost: the next queue resumes the delegation.
				f2 := newFixture(t, base)
				f2.runDir = f.runDir
				cfg2 := f2.config(t)
				cfg2.Brain = holdingBrain
				q2 := open(t, cfg2)
				waitFor(t, ctx, "the next queue to take the delegation over", func() bool {
					d := must(q2.Get(ctx, held.TaskID))(t)
					return d.State == delegation.StateRunning && d.Claim != nil && d.Claim.Owner == q2.Owner()
				})
				if d := must(q2.Get(ctx, held.TaskID))(t); d.Attempts < 2 {
					t.Errorf("attempts %d, want the run taken over", d.Attempts)
				}
				if q2.Failure() != nil {
					t.Errorf("the restarted queue reports %v", q2.Failure())
				}
			})
		}
	}
}
