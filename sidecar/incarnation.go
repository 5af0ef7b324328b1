package sidecar

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// An exact environment's incarnation names one environment the provider
// made, where its id may not: a provider may hand a used id to a new
// environment (the scripted provider numbers them from a counter that
// restarts with its process). The spawn records of an environment are
// keyed by its incarnation (spawnKey), so a new environment under a used
// id never replays an old environment's spawn: its spawns run fresh.
//
// The store holds one incarnation record per environment id (scope
// incarnationScope, key incarnationKey(id)): its request digest names the
// keyed create that made it (creationDigest) and its result the
// incarnation, a random 128-bit name.

// incarnationScope is the store scope of the incarnation records. It is
// stable: a server reads the records an older one wrote.
const incarnationScope = "sidecar.exact.incarnation"

// incarnationKey is the store key of environment id's incarnation
// record: a one-element canonical JSON array, so that no key is a prefix
// of another.
func incarnationKey(id string) string {
	return string(canonjson.Marshal(canonjson.ArrayValue([]canonjson.Value{canonjson.StringValue(id)})))
}

// spawnKey is the store key of a spawn's records: the environment's
// incarnation and the operation id.
func spawnKey(incarnation, operationID string) string {
	return string(canonjson.Marshal(canonjson.ArrayValue([]canonjson.Value{
		canonjson.StringValue(incarnation), canonjson.StringValue(operationID)})))
}

// spawnPrefix is the key prefix every spawn record of one incarnation
// starts with (and no other record does).
func spawnPrefix(incarnation string) string {
	k := spawnKey(incarnation, "")
	return k[:len(k)-len(`""]`)]
}

// incarnationRecord is the result of an incarnation record.
type incarnationRecord struct {
	Incarnation string `json:"incarnation"`
}

// newIncarnation is a fresh random incarnation name.
func newIncarnation() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// claimIncarnation records a fresh incarnation for id under the request
// digest unless id has one, and returns the recorded record's digest and
// incarnation. The store call is bounded by bound like every durable
// record's (claimKey): a store that stops answering fails the call
// with errStoreFailed instead of holding it.
func claimIncarnation(ctx context.Context, st store.Store, bound time.Duration, id, digest string) (recordDigest, incarnation string, err error) {
	v, err := canonjson.ToValue(incarnationRecord{Incarnation: newIncarnation()})
	if err != nil {
		return "", "", err
	}
	c, err := claimKey(ctx, st, bound, store.Idempotency{Scope: incarnationScope, Key: incarnationKey(id), RequestDigest: digest, Result: v})
	got := c.rec
	if err != nil {
		return "", "", fmt.Errorf("recording the incarnation of exact environment %q: %w", id, err)
	}
	var rec incarnationRecord
	if err := canonjson.FromValue(got.Result, &rec); err != nil || rec.Incarnation == "" {
		return "", "", fmt.Errorf("reading the incarnation of exact environment %q: the record holds no incarnation (%v)", id, err)
	}
	return got.RequestDigest, rec.Incarnation, nil
}

// incarnation is exact environment id's incarnation: the one its create
// recorded, or — for an environment whose create this store never saw
// (made before the store, or by another path) — one recorded now.
func (s *Server) incarnation(ctx context.Context, id string) (string, error) {
	digest, err := contract.DigestOf(struct {
		Adopted string `json:"adoptedExactEnvironment"`
	}{id})
	if err != nil {
		return "", err
	}
	_, inc, err := claimIncarnation(ctx, s.opts.Store, s.opts.CallTimeout, id, digest)
	return inc, err
}

// recordCreation records that the keyed exact create (key, inputDigest)
// answered environment env. The same creation keeps the recorded
// incarnation — the provider replayed the environment it made (EXP-11)
// — unless the environment lists no process while the incarnation has
// spawn records: then the provider made a new environment under the
// same id and key (it lost the first one), and, as for a create under
// another key, a new incarnation replaces the old one and the old one's
// spawn records are expired.
func (s *Server) recordCreation(ctx context.Context, env contract.ExactProcessEnvironment, key, inputDigest string) error {
	digest, err := contract.DigestOf(struct {
		Key    string `json:"exactCreateKey"`
		Digest string `json:"exactCreateDigest"`
	}{key, inputDigest})
	if err != nil {
		return err
	}
	id := env.ID()
	for range 4 {
		recDigest, inc, err := claimIncarnation(ctx, s.opts.Store, s.opts.CallTimeout, id, digest)
		if err != nil {
			return err
		}
		if recDigest == digest {
			stale, err := s.lostSpawns(ctx, env, inc)
			if err != nil || !stale {
				return err
			}
		}
		// Another environment held the id: retire its incarnation.
		if _, err := s.opts.Store.DeleteIdempotency(ctx, []store.IdempotencyKey{{Scope: incarnationScope, Key: incarnationKey(id)}}); err != nil {
			return fmt.Errorf("retiring the incarnation of exact environment %q: %w", id, err)
		}
		if err := s.expireSpawns(ctx, inc); err != nil {
			s.opts.Logger.WarnContext(ctx, "expiring the spawn records of a retired exact environment", "environment", id, "err", err)
		}
	}
	return fmt.Errorf("recording the incarnation of exact environment %q: it changed under every attempt", id)
}

// lostSpawns reports whether incarnation inc has spawn records although
// env lists no process: env is not the environment they were made in.
func (s *Server) lostSpawns(ctx context.Context, env contract.ExactProcessEnvironment, inc string) (bool, error) {
	recs, err := s.opts.Store.ListIdempotency(ctx, store.IdempotencyQuery{Scope: kindSpawn.intent, KeyPrefix: spawnPrefix(inc), Limit: 1})
	if err != nil || len(recs) == 0 {
		return false, err
	}
	procs, err := env.Processes().List(ctx)
	if err != nil {
		return false, fmt.Errorf("listing the processes of exact environment %q: %w", env.ID(), err)
	}
	return len(procs) == 0, nil
}

// expireExact forgets destroyed environment id's incarnation and expires
// its spawn records.
func (s *Server) expireExact(ctx context.Context, id string) error {
	recs, err := s.opts.Store.ListIdempotency(ctx, store.IdempotencyQuery{Scope: incarnationScope, KeyPrefix: incarnationKey(id), Limit: 1})
	if err != nil || len(recs) == 0 {
		return err
	}
	var rec incarnationRecord
	if err := canonjson.FromValue(recs[0].Result, &rec); err != nil {
		return fmt.Errorf("reading the incarnation of exact environment %q: %w", id, err)
	}
	if _, err := s.opts.Store.DeleteIdempotency(ctx, []store.IdempotencyKey{{Scope: incarnationScope, Key: incarnationKey(id)}}); err != nil {
		return err
	}
	if rec.Incarnation == "" {
		return nil
	}
	return s.expireSpawns(ctx, rec.Incarnation)
}

// maxExpireBatches bounds the batches one expiry deletes inline; what
// is left the retention sweep deletes.
const maxExpireBatches = 8

// expireSpawns deletes the spawn records of incarnation inc, a bounded
// number of batches of whole operations (expireGroups).
func (s *Server) expireSpawns(ctx context.Context, inc string) error {
	for range maxExpireBatches {
		n, err := expireGroups(ctx, s.opts.Store, kindSpawn, store.IdempotencyQuery{KeyPrefix: spawnPrefix(inc)})
		if err != nil || n == 0 {
			return err
		}
	}
	return nil
}

// groupBatch is how many operations one expireGroups call deletes: each
// is its intent and up to maxAttempts attempts and outcomes, within one
// store.MaxIdempotencyBatch.
const groupBatch = store.MaxIdempotencyBatch / (1 + 2*maxAttempts)

// expireGroups deletes, oldest first, up to groupBatch operations of
// kind whose intent q selects (q's scope and limit are set here): each
// with every attempt and outcome record, in one store call, so no
// operation is left half-recorded (an attempt without its intent would
// replay for another request). It returns how many intents it deleted.
func expireGroups(ctx context.Context, st store.Store, kind durableKind, q store.IdempotencyQuery) (int, error) {
	q.Scope, q.Limit = kind.intent, groupBatch
	intents, err := st.ListIdempotency(ctx, q)
	if err != nil || len(intents) == 0 {
		return 0, err
	}
	names := make([]string, len(intents))
	for i, in := range intents {
		names[i] = in.Key
	}
	if err := deleteGroups(ctx, st, kind, names); err != nil {
		return 0, err
	}
	return len(intents), nil
}

// deleteGroups deletes the operations of kind keyed keys, each with
// every attempt and outcome record in the same store call (groupBatch
// operations a call).
func deleteGroups(ctx context.Context, st store.Store, kind durableKind, keys []string) error {
	for chunk := range slices.Chunk(keys, groupBatch) {
		names := make([]store.IdempotencyKey, 0, len(chunk)*(1+2*maxAttempts))
		for _, k := range chunk {
			names = append(names, store.IdempotencyKey{Scope: kind.intent, Key: k})
			for n := 1; n <= maxAttempts; n++ {
				attempt := attemptKey(k, n)
				names = append(names, store.IdempotencyKey{Scope: kind.outcome, Key: attempt}, store.IdempotencyKey{Scope: kind.attempt, Key: attempt})
			}
		}
		if _, err := st.DeleteIdempotency(ctx, names); err != nil {
			return fmt.Errorf("expiring %s records: %w", kind.noun, err)
		}
	}
	return nil
}
