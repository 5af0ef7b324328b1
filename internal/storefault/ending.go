package storefault

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/canonjson"
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
	f := &endsFor{Store: s, d: d}
	return f, f.refused.Load
}

// HangingEndsFor returns s whose fenced updates that would end a run
// hang — they wait, changing nothing, until their context ends or d has
// passed since the first of them, whichever comes first — and whose
// other calls are s's own: a store that stops answering (a black hole)
// for a while just as a run ends. An update that waited out its context
// fails with the context's error; one that waited out d goes on to s.
// It reports, through hung, how many ends it held.
func HangingEndsFor(s store.Store, d time.Duration) (st store.Store, hung func() int64) {
	f := &endsFor{Store: s, d: d, hang: true}
	return f, f.refused.Load
}

type endsFor struct {
	store.Store
	d       time.Duration
	hang    bool
	mu      sync.Mutex
	until   time.Time
	refused atomic.Int64
}

// window returns when the store answers ends again, starting the window
// at the first end.
func (s *endsFor) window() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.until.IsZero() {
		s.until = time.Now().Add(s.d)
	}
	return s.until
}

func (s *endsFor) refuse(fn func(*store.Run) error) func(*store.Run) error {
	return func(r *store.Run) error {
		if err := fn(r); err != nil {
			return err
		}
		if !s.hang && r.Status.Terminal() && time.Now().Before(s.window()) {
			s.refused.Add(1)
			return ErrEndRefused
		}
		return nil
	}
}

// held waits, for a hanging store, while an update of run id by fn would
// end it within the window; it returns ctx's error when ctx ended first.
func (s *endsFor) held(ctx context.Context, id string, fn func(*store.Run) error) error {
	if !s.hang {
		return nil
	}
	cur, err := s.Store.GetRun(ctx, id)
	if err != nil {
		return nil // the update itself says what is wrong
	}
	if err := fn(&cur); err != nil || !cur.Status.Terminal() {
		return nil
	}
	until := s.window()
	if !time.Now().Before(until) {
		return nil
	}
	s.refused.Add(1)
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *endsFor) UpdateRun(ctx context.Context, id string, fn func(*store.Run) error) (store.Run, error) {
	if err := s.held(ctx, id, fn); err != nil {
		return store.Run{}, err
	}
	return s.Store.UpdateRun(ctx, id, s.refuse(fn))
}

func (s *endsFor) UpdateFenced(ctx context.Context, f store.Fence, fn func(*store.Run) error) (store.Run, error) {
	if err := s.held(ctx, f.RunID, fn); err != nil {
		return store.Run{}, err
	}
	return s.Store.UpdateFenced(ctx, f, s.refuse(fn))
}

// ErrLedgerRefused is the error of a ledger append FailingClosingLedgerFor
// refuses.
var ErrLedgerRefused = errors.New("storefault: the store refused the ledger append")

// FailingClosingLedgerFor returns s whose ledger appends fail with
// ErrLedgerRefused, appending nothing, from the first append of an entry
// that closes a run (its "status" member a terminal store.Status, as the
// kernel's closing entries state) until d after it; every other call is
// s's own: a store that stops taking writes for a while just as a run
// records what it spent. It reports, through refused, how many appends
// it refused.
func FailingClosingLedgerFor(s store.Store, d time.Duration) (st store.Store, refused func() int64) {
	f := &closingLedgerFor{Store: s, d: d}
	return f, f.refused.Load
}

type closingLedgerFor struct {
	store.Store
	d       time.Duration
	mu      sync.Mutex
	until   time.Time
	refused atomic.Int64
}

func (s *closingLedgerFor) AppendLedger(ctx context.Context, f store.Fence, bodies []canonjson.Value, at time.Time) ([]store.LedgerEntry, error) {
	s.mu.Lock()
	if s.until.IsZero() {
		for _, b := range bodies {
			if v, ok := b.Get("status"); ok && v.Kind() == canonjson.String && store.Status(v.Str()).Terminal() {
				s.until = time.Now().Add(s.d)
			}
		}
	}
	refuse := !s.until.IsZero() && time.Now().Before(s.until)
	s.mu.Unlock()
	if refuse {
		s.refused.Add(1)
		return nil, ErrLedgerRefused
	}
	return s.Store.AppendLedger(ctx, f, bodies, at)
}
