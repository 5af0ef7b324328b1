package contract

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/canonjson"
)

// KeyRecord is one durable record of a KeyRecordStore: the request digest
// a key is bound to and the result recorded with it.
type KeyRecord struct {
	Digest string
	Result canonjson.Value
}

// KeyRecordStore keeps keyed create records beyond the process, so that
// a KeyedCreate whose process restarted still replays a key's
// environment instead of creating a second one. Each record is claimed
// once: the first claim of (scope, key) records it, later claims return
// it. store.KeyRecords adapts the run store (SQLite, PostgreSQL, memory)
// to it.
type KeyRecordStore interface {
	// ClaimKey records (scope, key) with digest and result unless it is
	// recorded, and returns the record held, created true when this call
	// made it.
	ClaimKey(ctx context.Context, scope, key, digest string, result canonjson.Value) (rec KeyRecord, created bool, err error)
	// ReleaseKey deletes the records of key in scopes; a missing record
	// is no error.
	ReleaseKey(ctx context.Context, key string, scopes ...string) error
}

// Errors of a durable KeyedCreate (KeyedCreate.Persist).
var (
	// ErrCreateInDoubt: an earlier create under the key started — in a
	// process that died, or that is still running it elsewhere — and its
	// outcome is not recorded. No second environment is created: find
	// out what the provider holds, then release the key's records.
	ErrCreateInDoubt = errors.New("an earlier create with this idempotency key started and its outcome is unknown; no second environment is created")
	// ErrKeyedEnvironmentGone: the environment recorded under the key no
	// longer exists. No second environment is created under the key: use
	// a new key.
	ErrKeyedEnvironmentGone = errors.New("the environment created under this idempotency key no longer exists")
	// ErrKeyStore: the key record store failed or did not answer within
	// its bound; nothing was created. Retry with the same key once it
	// answers.
	ErrKeyStore = errors.New("the keyed create record store failed or did not answer")
)

// DurableKeys configures a KeyedCreate whose keys outlive the process
// (KeyedCreate.Persist).
type DurableKeys[E any] struct {
	// Store holds the records; required.
	Store KeyRecordStore
	// Scope separates this adapter's keys from every other's (say, the
	// provider's name); required.
	Scope string
	// ID is the environment's id, recorded once its create succeeded.
	ID func(E) string
	// Find returns the environment of a recorded id; found false when
	// the provider no longer holds it.
	Find func(ctx context.Context, id string) (env E, found bool, err error)
	// Undo destroys an environment this process created that is handed
	// to nobody (another process declared its create in doubt first);
	// nil leaves it. Its error joins the create's.
	Undo func(ctx context.Context, env E) error
	// Timeout bounds each store call (default DefaultKeyStoreTimeout),
	// even for a caller without a deadline.
	Timeout time.Duration
}

// DefaultKeyStoreTimeout bounds one KeyRecordStore call of a durable
// KeyedCreate.
const DefaultKeyStoreTimeout = 10 * time.Second

// keyScope prefixes the scopes of a durable KeyedCreate's records.
const keyScope = "contract.keyed-create/"

// keyOutcome is the recorded outcome of a key's create: exactly one
// member is set.
type keyOutcome struct {
	EnvironmentID *string `json:"environmentId,omitzero"`
	InDoubt       *bool   `json:"inDoubt,omitzero"`
}

// Persist makes k keep its keys in d.Store as well as in memory: a key
// bound in an earlier process still refuses a changed input
// (ErrIdempotencyConflict) and still replays its environment, found by
// its recorded id (CreationReplayed); an environment that is gone is
// ErrKeyedEnvironmentGone and a create whose outcome was never recorded
// is ErrCreateInDoubt — never a second environment under the key. A
// failed create releases the key, so a retry may create. Keys this
// process already holds in memory are answered from memory first. Call
// it before the first Do (a later call replaces the store for the
// creates that follow); without it k keeps keys in memory only.
func (k *KeyedCreate[E]) Persist(d DurableKeys[E]) error {
	if d.Store == nil || d.Scope == "" || d.ID == nil || d.Find == nil {
		return fmt.Errorf("%w: a durable KeyedCreate needs Store, Scope, ID and Find", ErrCreateInput)
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultKeyStoreTimeout
	}
	k.durable.Store(&d)
	return nil
}

// CreateKeyPersister is implemented by a provider adapter whose keyed
// creates can be kept in a KeyRecordStore (KeyedCreate.Persist): a
// caller that has a run store (the agentrt CLI) hands it over, so a
// keyed create retried after the process restarted replays the key's
// environment, or says it is gone or in doubt, and never makes a second
// one. Without it the adapter keeps its keys in memory.
type CreateKeyPersister interface {
	PersistCreateKeys(st KeyRecordStore) error
}

// durableCreate runs one keyed create through d's records: the intent
// record binds the key to digest before any effect, the outcome record
// names the environment once it exists.
func (d *DurableKeys[E]) create(ctx context.Context, key, digest string, create func(ctx context.Context) (E, error)) (E, Creation, error) {
	var zero E
	intentScope, outcomeScope := keyScope+d.Scope, keyScope+d.Scope+"/outcome"
	intent, created, err := d.claim(ctx, intentScope, key, digest, canonjson.NullValue())
	if err != nil {
		return zero, "", err
	}
	if intent.Digest != digest {
		return zero, "", fmt.Errorf("%w (key %q)", ErrIdempotencyConflict, key)
	}
	if !created {
		// An earlier create under the key: its outcome decides. One that
		// recorded none is in doubt from now on.
		out, err := d.outcome(ctx, outcomeScope, key, digest, keyOutcome{InDoubt: ptrTo(true)})
		if err != nil {
			return zero, "", err
		}
		if out.EnvironmentID == nil {
			return zero, "", fmt.Errorf("%w (key %q)", ErrCreateInDoubt, key)
		}
		env, found, err := d.Find(ctx, *out.EnvironmentID)
		switch {
		case err != nil:
			return zero, "", fmt.Errorf("finding environment %s of key %q: %w", *out.EnvironmentID, key, err)
		case !found:
			return zero, "", fmt.Errorf("%w (key %q, environment %s)", ErrKeyedEnvironmentGone, key, *out.EnvironmentID)
		}
		return env, CreationReplayed, nil
	}
	env, err := create(ctx)
	detached := context.WithoutCancel(ctx)
	if err != nil {
		if rerr := d.release(detached, key, intentScope, outcomeScope); rerr != nil {
			return zero, "", errors.Join(err, rerr)
		}
		return zero, "", err
	}
	id := d.ID(env)
	out, err := d.outcome(detached, outcomeScope, key, digest, keyOutcome{EnvironmentID: &id})
	if err == nil && out.EnvironmentID != nil && *out.EnvironmentID == id {
		return env, CreationCreated, nil
	}
	// Another process declared this create in doubt first, or the store
	// failed: the environment is handed to nobody.
	if err == nil {
		err = fmt.Errorf("%w (key %q)", ErrCreateInDoubt, key)
	}
	if d.Undo != nil {
		if uerr := d.Undo(detached, env); uerr != nil {
			err = errors.Join(err, fmt.Errorf("destroying environment %s, which no caller received: %w", id, uerr))
		}
	}
	return zero, "", err
}

// claim is one bounded ClaimKey.
func (d *DurableKeys[E]) claim(ctx context.Context, scope, key, digest string, result canonjson.Value) (KeyRecord, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	rec, created, err := d.Store.ClaimKey(cctx, scope, key, digest, result)
	if err != nil {
		return KeyRecord{}, false, fmt.Errorf("%w: recording key %q: %w", ErrKeyStore, key, err)
	}
	return rec, created, nil
}

// outcome records want as key's outcome unless one is recorded, and
// returns the recorded one.
func (d *DurableKeys[E]) outcome(ctx context.Context, scope, key, digest string, want keyOutcome) (keyOutcome, error) {
	v, err := canonjson.ToValue(want)
	if err != nil {
		return keyOutcome{}, err
	}
	rec, _, err := d.claim(ctx, scope, key, digest, v)
	if err != nil {
		return keyOutcome{}, err
	}
	var out keyOutcome
	if err := canonjson.FromValue(rec.Result, &out); err != nil || (out.EnvironmentID == nil) == (out.InDoubt == nil) {
		return keyOutcome{}, fmt.Errorf("%w: the recorded outcome of key %q is malformed", ErrKeyStore, key)
	}
	return out, nil
}

// release deletes key's records, bounded.
func (d *DurableKeys[E]) release(ctx context.Context, key string, scopes ...string) error {
	cctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	if err := d.Store.ReleaseKey(cctx, key, scopes...); err != nil {
		return fmt.Errorf("%w: releasing key %q after its create failed: %w", ErrKeyStore, key, err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
