package contract

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/agentrt/agentrt/canonjson"
)

// ErrIdempotencyConflict is matched (errors.Is) by the refusal of a keyed
// create whose key already names a create with different input. The
// refusal happens before any create effect.
var ErrIdempotencyConflict = errors.New("environment create idempotency key conflicts with a different create input")

// KeyedCreate applies the keyed create contract inside one provider
// adapter: it coalesces concurrent same-key creates into one create effect
// and refuses a changed input under a used key before any effect. Embed
// one per adapter; the zero value is ready to use, and it must not be
// copied after first use.
//
// It keeps keys in memory unless Persist gives it a KeyRecordStore (the
// run store, through store.KeyRecords), which keeps them across process
// restarts. A provider backed by a remote service must also forward the
// key and let the service retain the canonical input, so that a
// reconstructed adapter still replays.
type KeyedCreate[E any] struct {
	keys    keyedRecords[E]
	durable atomic.Pointer[DurableKeys[E]]
}

// Do runs one create under the keyed contract.
//
// Without a key it calls create with in and reports CreationCreated. With
// a key it validates in (a refusal is a *schema.Error), computes its
// CreateInputDigest and then:
//
//   - a new key runs create once, with a detached canonical copy of in
//     (later changes to the caller's value have no effect), and reports
//     CreationCreated;
//   - a key whose create succeeded or is still running with the same
//     digest returns the same environment with CreationReplayed, waiting
//     for the running create (concurrent callers are coalesced into one
//     create effect);
//   - a key held by a different digest fails with ErrIdempotencyConflict,
//     before any create effect.
//
// A failed create forgets the key, so a later retry may create; callers
// waiting on it receive the same error. ctx cancels this call only: a
// waiter that gives up does not cancel the running create.
func (k *KeyedCreate[E]) Do(ctx context.Context, in *CreateInput, create func(ctx context.Context, in *CreateInput) (E, error)) (E, Creation, error) {
	var zero E
	if err := ctx.Err(); err != nil {
		return zero, "", err
	}
	if in == nil {
		return zero, "", fmt.Errorf("%w: nil input", ErrCreateInput)
	}
	if in.IdempotencyKey == nil {
		env, err := create(ctx, in)
		if err != nil {
			return zero, "", err
		}
		return env, CreationCreated, nil
	}
	v, err := envCreateInputValue(in)
	if err != nil {
		return zero, "", err
	}
	digest, err := envCreateDigest(v)
	if err != nil {
		return zero, "", err
	}
	snapshot := new(CreateInput)
	if err := canonjson.FromValue(v, snapshot); err != nil {
		return zero, "", fmt.Errorf("%w: %w", ErrCreateInput, err)
	}
	// The credential request is no part of the canonical input (nor of
	// its digest), so the snapshot does not carry it: the create that
	// runs still hands it to the provider's account owner (RG-07).
	snapshot.Credential = in.Credential
	durable := k.durable.Load()
	if durable == nil {
		return k.keys.do(ctx, in.Key(), digest, func(ctx context.Context) (E, error) { return create(ctx, snapshot) })
	}
	// In memory, concurrent same-key creates of this process are one;
	// the durable records make them one with every other process's.
	var replayed bool
	env, creation, err := k.keys.do(ctx, in.Key(), digest, func(ctx context.Context) (E, error) {
		env, c, err := durable.create(ctx, in.Key(), digest, func(ctx context.Context) (E, error) { return create(ctx, snapshot) })
		replayed = c == CreationReplayed
		return env, err
	})
	if err == nil && replayed {
		creation = CreationReplayed
	}
	return env, creation, err
}

// Forget drops the record of key, for a provider whose environment under
// that key was destroyed: a later create with the key then creates again.
// A create still running under the key is not affected. A durable
// KeyedCreate (Persist) also releases the key's records, each store call
// bounded by its Timeout; when the store fails the key stays bound, and
// a later create under it is ErrKeyedEnvironmentGone rather than a
// second environment.
func (k *KeyedCreate[E]) Forget(key string) {
	k.keys.forget(key)
	if d := k.durable.Load(); d != nil {
		_ = d.release(context.Background(), key, keyScope+d.Scope, keyScope+d.Scope+"/outcome")
	}
}

// KeyedExactProcessCreate applies the same keyed contract to exact-process
// creates (CreateExactProcessInput, whose key is required): the same key
// and CreateExactProcessInputDigest return the same environment, a changed
// input under a used key fails with ErrIdempotencyConflict before any
// effect, and concurrent same-key creates are one create effect (spec J;
// checklist EXP-11). Its keys are its own: an adapter offering both kinds
// of create embeds one KeyedCreate and one KeyedExactProcessCreate, so an
// agent environment's key never collides with an exact one's. The zero
// value is ready to use; it must not be copied after first use, and it
// keeps keys only in memory, as KeyedCreate does.
type KeyedExactProcessCreate[E any] struct {
	keys keyedRecords[E]
}

// Do runs one exact create under the keyed contract: it validates in (a
// refusal is a *schema.Error), computes its digest, and runs create at
// most once per key with a detached canonical copy of in, exactly as
// KeyedCreate.Do does for a keyed create.
func (k *KeyedExactProcessCreate[E]) Do(ctx context.Context, in *CreateExactProcessInput, create func(ctx context.Context, in *CreateExactProcessInput) (E, error)) (E, Creation, error) {
	var zero E
	if err := ctx.Err(); err != nil {
		return zero, "", err
	}
	v, err := exactCreateInputValue(in)
	if err != nil {
		return zero, "", err
	}
	digest, err := exactCreateDigest(v)
	if err != nil {
		return zero, "", err
	}
	snapshot := new(CreateExactProcessInput)
	if err := canonjson.FromValue(v, snapshot); err != nil {
		return zero, "", fmt.Errorf("%w: %w", ErrCreateInput, err)
	}
	return k.keys.do(ctx, in.IdempotencyKey, digest, func(ctx context.Context) (E, error) { return create(ctx, snapshot) })
}

// Forget drops the record of key (see KeyedCreate.Forget).
func (k *KeyedExactProcessCreate[E]) Forget(key string) { k.keys.forget(key) }

// KeyedOperation applies the keyed contract to any effect a caller names
// with an operation key and the digest of its request (a server that
// turns a request without idempotency of its own — a legacy checkpoint
// or fork — into one a client may re-send after a lost answer): the same
// key and digest run op once and return its outcome to every caller
// (CreationReplayed after the first), concurrent callers are coalesced,
// and another digest under a used key fails with ErrIdempotencyConflict
// before any effect. A failed op forgets its key. The zero value is ready
// to use; it must not be copied after first use, and it keeps keys only
// in memory, as KeyedCreate does.
type KeyedOperation[E any] struct {
	// Max, when positive, bounds the keys kept: past it, the oldest
	// key's settled record is forgotten, so a re-send older than the
	// last Max operations runs again. Zero keeps every key.
	Max int

	keys  keyedRecords[E]
	mu    sync.Mutex
	order []string
}

// Do runs op at most once for key and digest (see KeyedOperation).
func (k *KeyedOperation[E]) Do(ctx context.Context, key, digest string, op func(ctx context.Context) (E, error)) (E, Creation, error) {
	if err := ctx.Err(); err != nil {
		var zero E
		return zero, "", err
	}
	out, creation, err := k.keys.do(ctx, key, digest, op)
	if err == nil && creation == CreationCreated && k.Max > 0 {
		k.mu.Lock()
		k.order = append(k.order, key)
		for len(k.order) > k.Max {
			k.keys.forget(k.order[0])
			k.order = k.order[1:]
		}
		k.mu.Unlock()
	}
	return out, creation, err
}

// Forget drops the settled record of key.
func (k *KeyedOperation[E]) Forget(key string) { k.keys.forget(key) }

// keyedRecords is the one implementation of keyed create admission: per
// key, the digest of the input that holds it and the outcome of its one
// create effect.
type keyedRecords[E any] struct {
	mu      sync.Mutex
	records map[string]*envKeyedRecord[E]
}

type envKeyedRecord[E any] struct {
	digest string
	done   chan struct{} // closed when the create settled
	env    E
	err    error
}

// do runs create once for key and digest: a new key creates
// (CreationCreated), the same digest waits for and returns that create's
// environment (CreationReplayed), another digest is refused with
// ErrIdempotencyConflict before any effect. A failed create forgets the
// key.
func (k *keyedRecords[E]) do(ctx context.Context, key, digest string, create func(ctx context.Context) (E, error)) (E, Creation, error) {
	var zero E
	k.mu.Lock()
	if rec, ok := k.records[key]; ok {
		k.mu.Unlock()
		if rec.digest != digest {
			return zero, "", fmt.Errorf("%w (key %q)", ErrIdempotencyConflict, key)
		}
		select {
		case <-rec.done:
		case <-ctx.Done():
			return zero, "", ctx.Err()
		}
		if rec.err != nil {
			return zero, "", rec.err
		}
		return rec.env, CreationReplayed, nil
	}
	if k.records == nil {
		k.records = make(map[string]*envKeyedRecord[E])
	}
	rec := &envKeyedRecord[E]{digest: digest, done: make(chan struct{})}
	k.records[key] = rec
	k.mu.Unlock()

	settled := false
	defer func() {
		if settled {
			return
		}
		// create panicked: release the waiters and the key, then let the
		// panic continue.
		k.settle(key, rec, zero, errors.New("environment create panicked"))
	}()
	env, err := create(ctx)
	k.settle(key, rec, env, err)
	settled = true
	if err != nil {
		return zero, "", err
	}
	return env, CreationCreated, nil
}

// settle records the outcome of rec's create and wakes its waiters; a
// failure forgets the key.
func (k *keyedRecords[E]) settle(key string, rec *envKeyedRecord[E], env E, err error) {
	k.mu.Lock()
	rec.env, rec.err = env, err
	if err != nil && k.records[key] == rec {
		delete(k.records, key)
	}
	k.mu.Unlock()
	close(rec.done)
}

// forget drops the settled record of key.
func (k *keyedRecords[E]) forget(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if rec, ok := k.records[key]; ok {
		select {
		case <-rec.done:
			delete(k.records, key)
		default:
		}
	}
}
