package supervise

import (
	"context"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
)

// passObserver passes every kernel.Observer and kernel.ToolObserver hook
// on to inner (nil: none). The observers of a worker's or manager's runs
// embed it and define only the hooks they act on, which pass on through
// it in turn.
type passObserver struct{ inner kernel.Observer }

var _ kernel.ToolObserver = passObserver{}

// RunStarted implements kernel.Observer.
func (o passObserver) RunStarted(ctx context.Context, r kernel.RunStart) (context.Context, error) {
	if o.inner == nil {
		return ctx, nil
	}
	return o.inner.RunStarted(ctx, r)
}

// TurnStarted implements kernel.Observer.
func (o passObserver) TurnStarted(ctx context.Context, t kernel.TurnStart) (context.Context, error) {
	if o.inner == nil {
		return ctx, nil
	}
	return o.inner.TurnStarted(ctx, t)
}

// Event implements kernel.Observer.
func (o passObserver) Event(ctx context.Context, e contract.EnvironmentEvent) error {
	if o.inner == nil {
		return nil
	}
	return o.inner.Event(ctx, e)
}

// TurnEnded implements kernel.Observer.
func (o passObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	if o.inner == nil {
		return nil
	}
	return o.inner.TurnEnded(ctx, t)
}

// RunEnded implements kernel.Observer.
func (o passObserver) RunEnded(ctx context.Context, res kernel.Result) error {
	if o.inner == nil {
		return nil
	}
	return o.inner.RunEnded(ctx, res)
}

// ToolStarted implements kernel.ToolObserver, when inner watches tools.
func (o passObserver) ToolStarted(ctx context.Context, c kernel.ToolCallStart) (context.Context, error) {
	if to, ok := o.inner.(kernel.ToolObserver); ok {
		return to.ToolStarted(ctx, c)
	}
	return ctx, nil
}

// ToolEnded implements kernel.ToolObserver, when inner watches tools.
func (o passObserver) ToolEnded(ctx context.Context, c kernel.ToolCallEnd) error {
	if to, ok := o.inner.(kernel.ToolObserver); ok {
		return to.ToolEnded(ctx, c)
	}
	return nil
}
