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
	return &pinnedEnv{Environment: env, turn: p.turn}, nil
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

// Stream implements contract.Environment.
func (e *pinnedEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	var turn contract.TurnInput
	if in != nil {
		turn = *in
	}
	if turn.TurnID == nil {
		id := e.turn
		turn.TurnID = &id
	}
	if a, ok := e.Environment.(turnAttacher); ok && e.attach {
		return a.AttachTurn(ctx, &turn)
	}
	return e.Environment.Stream(ctx, &turn)
}
