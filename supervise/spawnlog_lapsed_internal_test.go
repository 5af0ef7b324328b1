package supervise

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// failingCalls is a store whose fenced writes, appends and blob claims
// fail with err while fail is set: a call that timed out (its outcome
// unknown) or a connection that died.
type failingCalls struct {
	store.Store
	fail bool
	err  error
}

func (s *failingCalls) AppendEvents(ctx context.Context, f store.Fence, evs []store.NewEvent) ([]store.Event, error) {
	if s.fail {
		return nil, s.err
	}
	return s.Store.AppendEvents(ctx, f, evs)
}

func (s *failingCalls) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if s.fail {
		return store.Run{}, s.err
	}
	return s.Store.UpdateFenced(ctx, f, fn)
}

func (s *failingCalls) ClaimIdempotency(ctx context.Context, rec store.Idempotency) (store.Idempotency, bool, error) {
	if s.fail {
		return store.Idempotency{}, false, s.err
	}
	return s.Store.ClaimIdempotency(ctx, rec)
}

// A process paused (SIGSTOP, a frozen VM) in the middle of a journal
// call past its lease is continued: the call's own timer and the
// renewal's tick fire at once, and the call fails (its deadline passed)
// before the renewal has found the lease gone. The failure must say the
// process lost the run — past its lease another process may have taken
// it over, as the renewal would conclude a moment later — not only that
// the write's outcome is unknown: Supervise then returns
// ErrSpawnLogLost and delivers nothing, and its caller tells the user
// the run is another's. The stop-40 CI failure of
// TestPausedAnywhereSupervisorLosesTheRun/postgres (exit 1, "journal
// append: the write's outcome is unknown: context deadline exceeded").
// §9, behaviour 46; RES-03.
func TestStoreSpawnLogCallFailingPastTheLeaseLosesTheRun(t *testing.T) {
	timedOut := fmt.Errorf("%w: %w", store.ErrUnknownOutcome, context.DeadlineExceeded)
	calls := []struct {
		name string
		call func(*StoreSpawnLog) error
	}{
		{"append", func(l *StoreSpawnLog) error {
			return l.Append(context.Background(), Record{Kind: KindRunStarted, RunID: "r"})
		}},
		{"confirm", func(l *StoreSpawnLog) error { return l.Confirm(context.Background()) }},
		{"run record", func(l *StoreSpawnLog) error {
			return l.putRecord(context.Background(), canonjson.StringValue("x"))
		}},
		{"blob", func(l *StoreSpawnLog) error {
			return l.PutBlob(context.Background(), "sha256:00", canonjson.StringValue("x"))
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			st := &failingCalls{Store: memory.New(time.Now), err: timedOut}
			// A long lease: no renewal ticks during the test.
			l, err := OpenStoreSpawnLog(context.Background(), st, "r", StoreSpawnLogOptions{LeaseTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			st.fail = true
			// Held, but failing for another reason: the outcome is unknown
			// and the run is still this process's.
			if err := tc.call(l); !errors.Is(err, store.ErrUnknownOutcome) || errors.Is(err, ErrSpawnLogLost) || l.Held() != nil {
				t.Fatalf("failed within the lease: %v (held: %v), want the unknown outcome alone", err, l.Held())
			}
			// The pause: the lease as last written ran out meanwhile.
			l.leaseEnd.Store(int64(-time.Second))
			err = tc.call(l)
			if !errors.Is(err, ErrSpawnLogLost) || !errors.Is(err, store.ErrFenced) || !errors.Is(err, store.ErrUnknownOutcome) {
				t.Fatalf("failed past the lease: %v, want it to match ErrSpawnLogLost, store.ErrFenced and the call's own failure", err)
			}
			if l.Held() == nil {
				t.Fatal("Held() = nil after a call failed past the lease")
			}
			select {
			case <-l.Lost():
			default:
				t.Fatal("Lost() not closed after a call failed past the lease")
			}
		})
	}
}
