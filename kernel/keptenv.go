package kernel

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// ErrKeptProfileChanged is returned by KeptProvider.Create when a later
// run asks for an environment of another profile than the one the kept
// environment was created for: one environment serves one profile.
var ErrKeptProfileChanged = errors.New("kernel: the kept environment was created for another profile")

// KeptProvider is a provider that creates its wrapped provider's
// environment once and hands that same environment to every run made
// through it. A conversation's turns then run one after another through
// Execute or StreamRun — each recorded as a run with its events, ledger
// and terminal state — in one environment (one provider session), which
// Execute alone cannot do: it creates and destroys an environment per run.
//
// Runs see the kept environment as replayed (this run provisioned
// nothing), so no run destroys it; the keeper does, with Close, when the
// conversation ends. The kept environment passes the provider session id
// set with SetSessionID on every turn that names none; each run records
// the native session its turn observed (Result.NativeSessionID, NSO-02).
//
// A KeptProvider is safe for concurrent use, but its turns are meant to
// run one at a time, as a conversation's do.
type KeptProvider struct {
	p contract.Provider

	mu        sync.Mutex
	env       contract.Environment
	digest    string
	sessionID string
	closed    bool
}

// KeepEnvironment returns a KeptProvider over p.
func KeepEnvironment(p contract.Provider) *KeptProvider { return &KeptProvider{p: p} }

// Name is the wrapped provider's name.
func (k *KeptProvider) Name() string { return k.p.Name() }

// Unwrap returns the wrapped provider (SameProvider sees through it).
func (k *KeptProvider) Unwrap() contract.Provider { return k.p }

// Capabilities is the wrapped provider's capability document.
func (k *KeptProvider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	return k.p.Capabilities(ctx)
}

// Create creates the wrapped provider's environment on its first call and
// returns the same environment on every later one. A later call for
// another profile fails with ErrKeptProfileChanged; a call after Close
// fails too.
func (k *KeptProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	digest := ""
	if in != nil && in.Profile.Inline != nil {
		var err error
		if digest, err = profile.Digest(in.Profile.Inline); err != nil {
			return nil, fmt.Errorf("kernel: the kept environment's profile has no identity: %w", err)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, errors.New("kernel: the kept environment was closed; start a new conversation")
	}
	if k.env == nil {
		env, err := k.p.Create(ctx, in)
		if err != nil {
			return nil, err
		}
		k.env, k.digest = env, digest
	} else if digest != k.digest {
		return nil, fmt.Errorf("%w (%s, not %s)", ErrKeptProfileChanged, k.digest, digest)
	}
	return &keptEnvironment{Environment: k.env, k: k}, nil
}

// SetSessionID makes every later turn name the provider session id (the
// turn's contract.TurnInput.SessionID) unless the turn names one itself;
// "" stops it.
func (k *KeptProvider) SetSessionID(id string) {
	k.mu.Lock()
	k.sessionID = id
	k.mu.Unlock()
}

// EnvironmentID is the kept environment's id, "" before it is created.
func (k *KeptProvider) EnvironmentID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.env == nil {
		return ""
	}
	return k.env.ID()
}

// Close destroys the kept environment when its creation was proven
// (ENV-06) and makes later Creates fail. Closing again does nothing.
func (k *KeptProvider) Close(ctx context.Context) error {
	k.mu.Lock()
	env := k.env
	done := k.closed
	k.closed = true
	k.mu.Unlock()
	if done || env == nil || env.Creation() != contract.CreationCreated {
		return nil
	}
	if err := env.Destroy(ctx); err != nil {
		return fmt.Errorf("kernel: destroying the kept environment %s: %w", env.ID(), err)
	}
	return nil
}

// keptEnvironment is the kept environment as one run sees it.
type keptEnvironment struct {
	contract.Environment
	k *KeptProvider
}

// Creation is replayed: the run that asked provisioned nothing, and the
// environment is the keeper's to destroy.
func (e *keptEnvironment) Creation() contract.Creation { return contract.CreationReplayed }

// Destroy does nothing: the keeper destroys the environment with Close.
func (e *keptEnvironment) Destroy(context.Context) error { return nil }

// Stream runs the turn in the kept environment, naming the keeper's
// session id.
func (e *keptEnvironment) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return e.Environment.Stream(ctx, e.turn(in))
}

// StreamOwned implements contract.OwnedStreamer for the run that owns
// the turn: the kept environment's own StreamOwned when it has one, so
// the provider's private native session observation reaches the run
// (NSO-02, Result.NativeSessionID) as it does without a keeper; else
// Stream.
func (e *keptEnvironment) StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	if o, ok := e.Environment.(contract.OwnedStreamer); ok {
		return o.StreamOwned(ctx, e.turn(in))
	}
	return e.Environment.Stream(ctx, e.turn(in))
}

// turn is in naming the keeper's session id when it names none.
func (e *keptEnvironment) turn(in *contract.TurnInput) *contract.TurnInput {
	turn := contract.TurnInput{}
	if in != nil {
		turn = *in
	}
	e.k.mu.Lock()
	if turn.SessionID == nil && e.k.sessionID != "" {
		id := e.k.sessionID
		turn.SessionID = &id
	}
	e.k.mu.Unlock()
	return &turn
}
