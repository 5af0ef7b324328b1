package sidecar

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// DefaultMaxRecords is how many keyed creates, and apart how many exact
// environments' incarnations, a server's Store keeps records of
// (Options.MaxRecords).
const DefaultMaxRecords = 100_000

// countSweepEvery is how often the count bound is enforced when the age
// sweep runs less often (or not at all).
const countSweepEvery = time.Minute

// liveness is what the provider says of an environment a record names.
type liveness int

const (
	// envUnknown: the provider could not tell (an error, no way to look
	// environments up): the record is kept, as for a live one.
	envUnknown liveness = iota
	envLive
	envGone
)

// ExpireBeyond deletes, oldest first, the records of the keyed creates
// beyond Options.MaxRecords and, apart, the incarnation records (with
// their spawn records) of the exact environments beyond it, so that a
// flood of keyed creates cannot grow the Store without bound. It never
// deletes the records of an environment the provider still holds or
// cannot tell about, nor of a create that may still be running (younger
// than CreateTimeout): the Store then holds more than the bound until
// they are gone. It returns how many operations and incarnations it
// deleted. A Store that cannot count its records
// (store.IdempotencyCounter) is bounded by age only. The server runs it
// with every retention sweep, at least every minute.
func (s *Server) ExpireBeyond(ctx context.Context) (int, error) {
	c, ok := s.opts.Store.(store.IdempotencyCounter)
	if !ok || s.opts.MaxRecords < 0 {
		return 0, nil
	}
	creates, err := s.expireBeyond(ctx, c, kindCreate.intent, s.createLiveness, func(ctx context.Context, recs []store.Idempotency) error {
		keys := make([]string, len(recs))
		for i, r := range recs {
			keys[i] = r.Key
		}
		return deleteGroups(ctx, s.opts.Store, kindCreate, keys)
	})
	if err != nil {
		return creates, err
	}
	incarnations, err := s.expireBeyond(ctx, c, incarnationScope, s.incarnationLiveness, func(ctx context.Context, recs []store.Idempotency) error {
		for _, r := range recs {
			if _, err := s.opts.Store.DeleteIdempotency(ctx, []store.IdempotencyKey{{Scope: incarnationScope, Key: r.Key}}); err != nil {
				return err
			}
			// Its spawn records go with it; a record that names no
			// incarnation has none to find.
			var rec incarnationRecord
			if err := canonjson.FromValue(r.Result, &rec); err == nil && rec.Incarnation != "" {
				if err := s.expireSpawns(ctx, rec.Incarnation); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return creates + incarnations, err
}

// expireBeyond deletes (with del) the oldest records of scope beyond
// MaxRecords whose environment live says is gone, in at most
// maxSweepBatches pages; a page of records that all must stay ends it.
func (s *Server) expireBeyond(ctx context.Context, c store.IdempotencyCounter, scope string,
	live func(context.Context, string) liveness, del func(context.Context, []store.Idempotency) error) (int, error) {
	n, err := c.CountIdempotency(ctx, store.IdempotencyQuery{Scope: scope})
	if err != nil {
		return 0, fmt.Errorf("counting %s records: %w", scope, err)
	}
	excess := int(n - int64(s.opts.MaxRecords))
	deleted := 0
	// A create or incarnation claimed within CreateTimeout may belong to
	// a create still running.
	cutoff := time.Now().Add(-s.opts.CreateTimeout)
	for batch := 0; deleted < excess && batch < maxSweepBatches; batch++ {
		recs, err := s.opts.Store.ListIdempotency(ctx, store.IdempotencyQuery{Scope: scope, Before: cutoff, Limit: store.MaxIdempotencyBatch})
		if err != nil || len(recs) == 0 {
			return deleted, err
		}
		var doomed []store.Idempotency
		for _, r := range recs {
			if deleted+len(doomed) >= excess {
				break
			}
			if live(ctx, r.Key) == envGone {
				doomed = append(doomed, r)
			}
		}
		if len(doomed) == 0 {
			s.opts.Logger.Warn("records beyond the bound all belong to live environments; kept", "scope", scope, "records", n, "bound", s.opts.MaxRecords)
			return deleted, nil
		}
		if err := del(ctx, doomed); err != nil {
			return deleted, fmt.Errorf("expiring %s records beyond the bound: %w", scope, err)
		}
		deleted += len(doomed)
	}
	return deleted, nil
}

// createLiveness is what the provider says of the environment keyed
// create key made: gone when no attempt made one (it failed or is in
// doubt) or every one it made is gone.
func (s *Server) createLiveness(ctx context.Context, key string) liveness {
	// The attempts' outcomes are keyed key#n; the prefix may also select
	// another key's (key#x#n): its environments count too, which only
	// keeps more.
	outs, err := s.opts.Store.ListIdempotency(ctx, store.IdempotencyQuery{Scope: kindCreate.outcome, KeyPrefix: key + "#", Limit: store.MaxIdempotencyBatch})
	if err != nil || len(outs) == store.MaxIdempotencyBatch {
		return envUnknown
	}
	state := envGone
	for _, o := range outs {
		var rec outcomeRecord
		if err := canonjson.FromValue(o.Result, &rec); err != nil {
			return envUnknown
		}
		if rec.Environment == nil {
			continue
		}
		switch s.envLiveness(ctx, rec.Environment.ID) {
		case envLive:
			return envLive
		case envUnknown:
			state = envUnknown
		}
	}
	return state
}

// envLiveness asks the provider whether environment id exists.
func (s *Server) envLiveness(ctx context.Context, id string) liveness {
	s.mu.Lock()
	env := s.envs[id]
	s.mu.Unlock()
	if env != nil {
		return envLive
	}
	g, ok := s.p.(contract.EnvironmentGetter)
	if !ok {
		return envUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	switch env, err := g.Get(ctx, id); {
	case err != nil:
		return envUnknown
	case env != nil:
		return envLive
	}
	return envGone
}

// incarnationLiveness asks the exact-process facet whether the exact
// environment an incarnation record names exists.
func (s *Server) incarnationLiveness(ctx context.Context, key string) liveness {
	id, ok := incarnationID(key)
	if !ok {
		return envGone // no environment of ours: nothing to keep it for
	}
	h, ok := s.p.(contract.ExactProcessHost)
	if !ok || h.ExactProcess() == nil {
		return envUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	switch env, err := h.ExactProcess().Get(ctx, id); {
	case err != nil:
		return envUnknown
	case env != nil:
		return envLive
	}
	return envGone
}

// incarnationID is the environment id incarnation key names
// (incarnationKey's inverse).
func incarnationID(key string) (string, bool) {
	v, err := canonjson.Decode([]byte(key))
	if err != nil || v.Kind() != canonjson.Array || len(v.Items()) != 1 || v.Items()[0].Kind() != canonjson.String {
		return "", false
	}
	id := v.Items()[0].Str()
	return id, incarnationKey(id) == key
}
