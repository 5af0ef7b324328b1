package sidecar

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/store"
)

// DefaultRecordRetention is how long a server keeps the records of a
// keyed create or an exact spawn (Options.RecordRetention).
const DefaultRecordRetention = 7 * 24 * time.Hour

// maxSweepBatches bounds the delete batches one retention sweep makes
// per scope, so a sweep is a bounded amount of work; the next sweep
// goes on where it stopped.
const maxSweepBatches = 64

// sweepEvery is how often the retention sweep runs for retention r: a
// quarter of it, within one second and one hour.
func sweepEvery(r time.Duration) time.Duration {
	return min(max(r/4, time.Second), time.Hour)
}

// ExpireRecords deletes the durable records (Options.Store) of the keyed
// creates and exact spawns whose key was first used more than
// RecordRetention ago, oldest first, each operation with all its
// attempts at once, in bounded batches; a re-send of such a key runs as
// a new operation. It returns how many operations it deleted. The
// server runs it every quarter of RecordRetention (at most hourly, and
// every minute when a MaxRecords bound sweeps more often); without a
// store or retention it deletes nothing.
func (s *Server) ExpireRecords(ctx context.Context) (int, error) {
	if s.opts.Store == nil || s.opts.RecordRetention <= 0 {
		return 0, nil
	}
	cutoff := time.Now().Add(-s.opts.RecordRetention)
	total := 0
	for _, kind := range []durableKind{kindCreate, kindSpawn} {
		for range maxSweepBatches {
			n, err := expireGroups(ctx, s.opts.Store, kind, store.IdempotencyQuery{Before: cutoff})
			total += n
			if err != nil {
				return total, err
			}
			if n == 0 {
				break
			}
		}
		// An attempt or outcome older than the cutoff whose intent is
		// gone (its operation was expired while the attempt ran) is
		// deleted on its own: outcomes first, so no attempt is left
		// that another could mistake for one without an outcome.
		for _, scope := range []string{kind.outcome, kind.attempt} {
			if err := expireScope(ctx, s.opts.Store, scope, cutoff); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

// expireScope deletes scope's records created before cutoff, in at most
// maxSweepBatches batches.
func expireScope(ctx context.Context, st store.Store, scope string, cutoff time.Time) error {
	for range maxSweepBatches {
		recs, err := st.ListIdempotency(ctx, store.IdempotencyQuery{Scope: scope, Before: cutoff, Limit: store.MaxIdempotencyBatch})
		if err != nil || len(recs) == 0 {
			return err
		}
		keys := make([]store.IdempotencyKey, len(recs))
		for i, r := range recs {
			keys[i] = store.IdempotencyKey{Scope: r.Scope, Key: r.Key}
		}
		if _, err := st.DeleteIdempotency(ctx, keys); err != nil {
			return fmt.Errorf("expiring %s records: %w", scope, err)
		}
	}
	return nil
}

// sweepRecords runs ExpireRecords every sweepEvery, and ExpireBeyond at
// least every countSweepEvery, until the server closes; a failed sweep
// is logged and tried again at the next tick.
func (s *Server) sweepRecords() {
	every := countSweepEvery
	if s.opts.RecordRetention > 0 {
		every = min(every, sweepEvery(s.opts.RecordRetention))
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(s.base, s.opts.CallTimeout)
		n, err := s.ExpireRecords(ctx)
		cancel()
		switch {
		case err != nil && s.base.Err() == nil:
			s.opts.Logger.Warn("expiring old create and spawn records", "err", err, "expired", n)
		case n > 0:
			s.opts.Logger.Info("expired old create and spawn records", "operations", n)
		}
		// The count bound's sweep has a deadline of its own: it may ask
		// the provider about each environment it would expire.
		ctx, cancel = context.WithTimeout(s.base, 4*s.opts.CallTimeout)
		n, err = s.ExpireBeyond(ctx)
		cancel()
		switch {
		case err != nil && s.base.Err() == nil:
			s.opts.Logger.Warn("expiring create records beyond the bound", "err", err, "expired", n)
		case n > 0:
			s.opts.Logger.Info("expired create records beyond the bound", "records", n, "bound", s.opts.MaxRecords)
		}
		select {
		case <-s.base.Done():
			return
		case <-t.C:
		}
	}
}
