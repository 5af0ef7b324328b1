package fleet

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/agentrt/agentrt/store"
)

// Event is one durable event of a fleet run: an event of one of its
// attempts (the kernel runs that record a fleet run's events).
type Event struct {
	// Attempt is the attempt's kernel run; Event.Cursor is a cursor of
	// that run's events.
	Attempt string
	// Generation is the attempt's generation.
	Generation int64
	store.Event
}

// FollowOptions configures Follow.
type FollowOptions struct {
	// Follow keeps reading until the fleet run ends; without it Follow
	// yields the events recorded so far and stops.
	Follow bool
	// PollInterval is how often a follower looks for new events; 0 is
	// 200ms.
	PollInterval time.Duration
	// PageSize bounds each read of the store; 0 is 500.
	PageSize int
	// ReadTimeout bounds each read of the store; 0 is 30s. A read that
	// takes longer (a database that stopped answering without closing
	// the connection) ends the sequence with a *StalledError.
	ReadTimeout time.Duration
	// After, when set, resumes after the event it names (Event.FleetCursor):
	// the rest of its attempt's events, then the later attempts'. A
	// cursor naming no attempt of the run ends the sequence with a
	// *CursorError.
	After *Cursor
}

// Follow yields the events of a fleet run's attempts in order, attempt
// after attempt, from any process that shares the run store. With
// opts.Follow it waits for the run to be claimed, follows each attempt
// as it appends, moves on to the next attempt when another worker takes
// the run over, and stops once the run ended and every attempt's events
// were yielded. A run of another kind is ErrNotFleetRun; the store's
// errors are yielded and end the sequence. ctx bounds the wait.
func Follow(ctx context.Context, s store.Store, runID string, opts FollowOptions) iter.Seq2[Event, error] {
	every := opts.PollInterval
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	page := opts.PageSize
	if page <= 0 {
		page = 500
	}
	bound := opts.ReadTimeout
	if bound <= 0 {
		bound = 30 * time.Second
	}
	return func(yield func(Event, error) bool) {
		var (
			next   int    // index of the attempt being read
			cursor string // after this event of attempt next
			last   string // fleet cursor of the last event yielded
		)
		if opts.After != nil {
			last = opts.After.String()
		}
		// s is read through a store whose every read is bounded.
		s := boundedReads{Store: s, bound: bound, stalled: func(err error) error {
			return &StalledError{RunID: runID, Timeout: bound, Cursor: last, Err: err}
		}}
		after := opts.After
		for {
			r, err := s.GetRun(ctx, runID)
			if err != nil {
				yield(Event{}, fmt.Errorf("fleet: following %s: %w", runID, err))
				return
			}
			fr, err := DecodeRun(r)
			if err != nil {
				yield(Event{}, err)
				return
			}
			if after != nil {
				// Start at the cursor's attempt, after its event; an
				// attempt, once listed, stays listed.
				i := slices.IndexFunc(fr.Attempts, func(a Attempt) bool { return a.Generation == after.Generation })
				if i < 0 {
					yield(Event{}, &CursorError{Cursor: after.String(), Reason: fmt.Sprintf("run %s has no attempt of generation %d", runID, after.Generation)})
					return
				}
				next, cursor, after = i, after.Event, nil
			}
			ended := fr.Status.Terminal()
			// Read every attempt listed in this snapshot; all but the last
			// are over (a takeover ends the one before), so each is read to
			// its end before moving on.
			for next < len(fr.Attempts) {
				a := fr.Attempts[next]
				for {
					evs, err := s.Events(ctx, a.RunID, cursor, page)
					if errors.Is(err, store.ErrNotFound) {
						// The attempt never started (or not yet).
						break
					}
					if err != nil {
						yield(Event{}, fmt.Errorf("fleet: following %s: attempt %s: %w", runID, a.RunID, err))
						return
					}
					for _, e := range evs {
						ev := Event{Attempt: a.RunID, Generation: a.Generation, Event: e}
						if !yield(ev, nil) {
							return
						}
						cursor, last = e.Cursor, ev.FleetCursor().String()
					}
					if len(evs) < page {
						break
					}
				}
				last := next == len(fr.Attempts)-1
				if last && !ended {
					// The current attempt: look again after the poll.
					break
				}
				if last && ended {
					// The run ended after this snapshot's read of the attempt
					// began; read it once more below before stopping.
					if done, err := attemptDone(ctx, s, a.RunID); err != nil {
						yield(Event{}, fmt.Errorf("fleet: following %s: %w", runID, err))
						return
					} else if !done {
						break
					}
					tail, err := s.Events(ctx, a.RunID, cursor, 1)
					if err == nil && len(tail) > 0 {
						continue
					}
				}
				next, cursor = next+1, ""
			}
			if ended && next >= len(fr.Attempts) || !opts.Follow {
				return
			}
			select {
			case <-ctx.Done():
				yield(Event{}, fmt.Errorf("fleet: following %s: %w", runID, context.Cause(ctx)))
				return
			case <-time.After(every):
			}
		}
	}
}

// boundedReads is a store whose GetRun and Events each answer within
// bound; one that does not is stalled's error (ctx's own end stays
// ctx's error).
type boundedReads struct {
	store.Store
	bound   time.Duration
	stalled func(error) error
}

func (b boundedReads) read(ctx context.Context, f func(context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, b.bound)
	defer cancel()
	err := f(rctx)
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return b.stalled(err)
	}
	return err
}

// GetRun implements store.Store, bounded.
func (b boundedReads) GetRun(ctx context.Context, id string) (r store.Run, err error) {
	err = b.read(ctx, func(ctx context.Context) error { r, err = b.Store.GetRun(ctx, id); return err })
	return r, err
}

// Events implements store.Store, bounded.
func (b boundedReads) Events(ctx context.Context, runID, after string, limit int) (evs []store.Event, err error) {
	err = b.read(ctx, func(ctx context.Context) error { evs, err = b.Store.Events(ctx, runID, after, limit); return err })
	return evs, err
}

// attemptDone reports whether an attempt's kernel run appends nothing
// more: it ended, or it never started.
func attemptDone(ctx context.Context, s store.Store, attempt string) (bool, error) {
	r, err := s.GetRun(ctx, attempt)
	if errors.Is(err, store.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return r.Status.Terminal(), nil
}
