package fleet

import (
	"context"
	"iter"

	"github.com/agentrt/agentrt/contract"
)

// A provider whose environments can be found by id from any process
// (contract.EnvironmentGetter: a remote server's) keeps them, and their
// turns, alive when the worker that created them dies. Each attempt of a
// fleet run on such a provider names its turn after the fleet run
// (turnID), so that the worker taking over a dead worker's attempt can
// re-attach to the environment it created and to the same turn — the
// server replays the turn's events and goes on with it — instead of
// running the work again.

// turnID is the turn id every attempt of a fleet run gives its turn.
func turnID(runID string) string { return "fleet-" + runID }

// pinned is a provider whose environments name their turns after the
// fleet run. The environment a dead attempt left is re-attached to by
// the kernel (kernel.Reattach), not created.
type pinned struct {
	contract.Provider
	turn string
}

// Create implements contract.Provider.
func (p *pinned) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return pin(env, p.turn, false), nil
}

// pin is env with every turn without an id of its own named turn; with
// attach it only re-attaches to that turn. An environment that streams
// to its execution owner (contract.OwnedStreamer) keeps doing so through
// the pin, so the kernel still binds the native session the provider
// observed to the attempt (NSO-02).
func pin(env contract.Environment, turn string, attach bool) contract.Environment {
	p := &pinnedEnv{Environment: env, turn: turn, attach: attach}
	if o, ok := env.(contract.OwnedStreamer); ok {
		return &pinnedOwnedEnv{pinnedEnv: p, owned: o}
	}
	return p
}

// pinnedEnv gives every turn without an id of its own the fleet run's.
// With attach it only re-attaches to that turn, never starting it, when
// the environment can (turnAttacher: a remote server's).
type pinnedEnv struct {
	contract.Environment
	turn   string
	attach bool
}

// turnAttacher is an environment that follows a turn by id without ever
// starting it (providers/remote: a server that no longer holds the turn
// answers that it is gone, rather than running it again).
type turnAttacher interface {
	AttachTurn(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error]
}

// named is in with the fleet run's turn id when it names none.
func (e *pinnedEnv) named(in *contract.TurnInput) *contract.TurnInput {
	var turn contract.TurnInput
	if in != nil {
		turn = *in
	}
	if turn.TurnID == nil {
		id := e.turn
		turn.TurnID = &id
	}
	return &turn
}

// Stream implements contract.Environment.
func (e *pinnedEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	if a, ok := e.Environment.(turnAttacher); ok && e.attach {
		return a.AttachTurn(ctx, e.named(in))
	}
	return e.Environment.Stream(ctx, e.named(in))
}

// pinnedOwnedEnv is a pinnedEnv whose environment streams to its owner.
type pinnedOwnedEnv struct {
	*pinnedEnv
	owned contract.OwnedStreamer
}

// StreamOwned implements contract.OwnedStreamer. A re-attaching pin
// follows the turn as Stream does: attaching never starts a turn, and
// the owner stream has no attaching form, so the native session of a
// turn re-attached to stays as the attempt that started it recorded it.
func (e *pinnedOwnedEnv) StreamOwned(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	if _, ok := e.Environment.(turnAttacher); ok && e.attach {
		return e.Stream(ctx, in)
	}
	return e.owned.StreamOwned(ctx, e.named(in))
}
