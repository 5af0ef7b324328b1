package store

import (
	"context"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// KeyRecords adapts s to the records a durable keyed create keeps
// (contract.KeyRecordStore; contract.KeyedCreate.Persist): each record is
// an idempotency record of s, so SQLite, PostgreSQL and memory keep them
// with no schema of their own, and a process that restarts over the same
// store replays a key's environment instead of creating a second one.
func KeyRecords(s Store) contract.KeyRecordStore { return keyRecords{s} }

type keyRecords struct{ s Store }

// ClaimKey implements contract.KeyRecordStore.
func (k keyRecords) ClaimKey(ctx context.Context, scope, key, digest string, result canonjson.Value) (contract.KeyRecord, bool, error) {
	rec, created, err := k.s.ClaimIdempotency(ctx, Idempotency{Scope: scope, Key: key, RequestDigest: digest, Result: result})
	if err != nil {
		return contract.KeyRecord{}, false, err
	}
	return contract.KeyRecord{Digest: rec.RequestDigest, Result: rec.Result}, created, nil
}

// ReleaseKey implements contract.KeyRecordStore.
func (k keyRecords) ReleaseKey(ctx context.Context, key string, scopes ...string) error {
	names := make([]IdempotencyKey, 0, len(scopes))
	for _, sc := range scopes {
		names = append(names, IdempotencyKey{Scope: sc, Key: key})
	}
	_, err := k.s.DeleteIdempotency(ctx, names)
	return err
}
