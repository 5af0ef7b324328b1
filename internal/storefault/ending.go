package storefault

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/store"
)

// ErrEndRefused is the error of a terminal write FailingEnds refuses.
var ErrEndRefused = errors.New("storefault: the store refused the run's terminal write")

// FailingEnds returns s whose every update that would end a run
// (UpdateRun or UpdateFenced leaving the run in a terminal status) fails
// with ErrEndRefused and changes nothing, while every other call is s's
// own: a store that records a run's whole life but its end.
func FailingEnds(s store.Store) store.Store { return &failingEnds{Store: s} }

type failingEnds struct{ store.Store }

func refuseEnd(fn func(*store.Run) error) func(*store.Run) error {
	return func(r *store.Run) error {
		if err := fn(r); err != nil {
			return err
		}
		if r.Status.Terminal() {
			return ErrEndRefused
		}
		return nil
	}
}

func (s *failingEnds) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	return s.Store.UpdateRun(ctx, id, refuseEnd(fn))
}

func (s *failingEnds) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	return s.Store.UpdateFenced(ctx, f, refuseEnd(fn))
}

// FailingEndsFor returns s whose updates that would end a run fail with
// ErrEndRefused, as FailingEnds's do, from the first such update until d
// after it; from then on every call is s's own: a store that stops
// answering for a while just as a run ends, then answers again. It
// reports, through refused, how many ends it refused.
func FailingEndsFor(s store.Store, d time.Duration) (st store.Store, refused func() int64) {
	f := &failingEndsFor{Store: s, d: d}
	return f, f.refused.Load
}

type failingEndsFor struct {
	store.Store
	d       time.Duration
	mu      sync.Mutex
	until   time.Time
	refused atomic.Int64
}

// refusing reports whether an end is refused now, starting the window at
// the first one.
func (s *failingEndsFor) refusing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until.IsZero() {
		s.until = time.Now().Add(s.d)
	}
	return time.Now().Before(s.until)
}

func (s *failingEndsFor) refuse(fn func(*store.Run) error) func(*store.Run) error {
	return func(r *store.Run) error {
		if err := fn(r); err != nil {
			return err
		}
		if r.Status.Terminal() && s.refusing() {
			s.refused.Add(1)
			return ErrEndRefused
		}
		return nil
	}
}

func (s *failingEndsFor) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	return s.Store.UpdateRun(ctx, id, s.refuse(fn))
}

func (s *failingEndsFor) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	return s.Store.UpdateFenced(ctx, f, s.refuse(fn))
}
