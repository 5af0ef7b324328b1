package storefault

import (
	"context"
	"errors"

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
