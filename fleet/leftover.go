package fleet

import (
	"context"
	"iter"
	"sync"

	"github.com/agentrt/agentrt/contract"
)

// An attempt's kernel run that lost its lease destroys nothing (kernel
// rule: no effects after a lost lease): the run's next holder may have
// re-attached to its environment. On a provider whose environments can
// be found by id that next holder is the run's next claim, which
// re-attaches to it (see Worker.claim). On any other provider nobody can
// ever find the environment again, so the worker that ran the attempt
// destroys what its kernel run left behind (tracking), or it would leak.

// tracking is a provider, one whose environments cannot be found by id,
// that remembers the environments one attempt created and whether
// anything destroyed them.
type tracking struct {
	contract.Provider
	mu   sync.Mutex
	envs []*trackedEnv
}

// Create implements contract.Provider.
func (p *tracking) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil || env == nil {
		return env, err
	}
	t := &trackedEnv{Environment: env}
	p.mu.Lock()
	p.envs = append(p.envs, t)
	p.mu.Unlock()
	if o, ok := env.(contract.OwnedStreamer); ok {
		// The kernel hands the native session observation to the
		// environment's owner (NSO-02): keep offering it.
		return &trackedOwnedEnv{trackedEnv: t, owned: o}, nil
	}
	return t, nil
}

// leftBehind returns the environments the attempt created (the runtime
// created them: ENV-06) that nothing tried to destroy.
func (p *tracking) leftBehind() []contract.Environment {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []contract.Environment
	for _, t := range p.envs {
		if t.Creation() == contract.CreationCreated && !t.destroyCalled() {
			out = append(out, t.Environment)
		}
	}
	return out
}

// trackedEnv records whether Destroy was called.
type trackedEnv struct {
	contract.Environment
	mu        sync.Mutex
	destroyed bool
}

// Destroy implements contract.Environment.
func (e *trackedEnv) Destroy(ctx context.Context) error {
	e.mu.Lock()
	e.destroyed = true
	e.mu.Unlock()
	return e.Environment.Destroy(ctx)
}

func (e *trackedEnv) destroyCalled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.destroyed
}

// trackedOwnedEnv is a trackedEnv whose environment streams to its owner
// (contract.OwnedStreamer).
type trackedOwnedEnv struct {
	*trackedEnv
	owned contract.OwnedStreamer
}

// StreamOwned implements contract.OwnedStreamer.
func (e *trackedOwnedEnv) StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return e.owned.StreamOwned(ctx, in)
}
