package workspace

import (
	"context"
	"errors"
	"fmt"
)

// ActiveTurn is the host's trusted identity for the turn being served:
// whose workspace the tools act on and which member acts. The host
// installs it on the context with WithActiveTurn; tools read it with
// ActiveTurnFrom and never from their arguments.
type ActiveTurn struct {
	// Tenant selects the workspace (one store namespace per tenant).
	Tenant string
	// Member is the acting member; it names the member memory scope
	// (/memories/members/<Member>/) and is recorded as the writer.
	Member string
	// Turn optionally identifies the turn, for the host's own records.
	Turn string
}

// ErrNoActiveTurn is returned by tools called without a valid trusted
// active turn on their context.
var ErrNoActiveTurn = errors.New("workspace: no trusted active turn on the context")

// Validate checks the turn: a valid tenant, a member that is a valid path
// segment, and a turn id (if any) by the tenant rules.
func (t ActiveTurn) Validate() error {
	if err := ValidateTenant(t.Tenant); err != nil {
		return err
	}
	if err := ValidateSegment(t.Member); err != nil {
		return fmt.Errorf("member: %w", err)
	}
	if t.Turn != "" {
		if err := checkName("turn", t.Turn); err != nil {
			return err
		}
	}
	return nil
}

type activeTurnKey struct{}

// WithActiveTurn returns a context carrying t as the trusted active turn.
// Only the host calls it; it is how identity reaches the tools.
func WithActiveTurn(ctx context.Context, t ActiveTurn) context.Context {
	return context.WithValue(ctx, activeTurnKey{}, t)
}

// ActiveTurnFrom returns the trusted active turn on ctx, if any.
func ActiveTurnFrom(ctx context.Context) (ActiveTurn, bool) {
	t, ok := ctx.Value(activeTurnKey{}).(ActiveTurn)
	return t, ok
}

// activeTurn returns the context's turn, validated.
func activeTurn(ctx context.Context) (ActiveTurn, error) {
	t, ok := ActiveTurnFrom(ctx)
	if !ok {
		return ActiveTurn{}, ErrNoActiveTurn
	}
	if err := t.Validate(); err != nil {
		return ActiveTurn{}, fmt.Errorf("%w: %w", ErrNoActiveTurn, err)
	}
	return t, nil
}
