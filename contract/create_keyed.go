package contract

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
// It keeps keys only in memory. A provider backed by a remote service
// must also forward the key and let the service retain the canonical
// input, so that a reconstructed adapter still replays.
type KeyedCreate[E any] struct {
	mu      sync.Mutex
	records map[string]*envKeyedRecord[E]
}

type envKeyedRecord[E any] struct {
	digest string
	done   chan struct{} // closed when the create settled
	env    E
	err    error
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
	key := in.Key()
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
	env, err := create(ctx, snapshot)
	k.settle(key, rec, env, err)
	settled = true
	if err != nil {
		return zero, "", err
	}
	return env, CreationCreated, nil
}

// settle records the outcome of rec's create and wakes its waiters; a
// failure forgets the key.
func (k *KeyedCreate[E]) settle(key string, rec *envKeyedRecord[E], env E, err error) {
	k.mu.Lock()
	rec.env, rec.err = env, err
	if err != nil && k.records[key] == rec {
		delete(k.records, key)
	}
	k.mu.Unlock()
	close(rec.done)
}

// Forget drops the record of key, for a provider whose environment under
// that key was destroyed: a later create with the key then creates again.
// A create still running under the key is not affected.
func (k *KeyedCreate[E]) Forget(key string) {
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
