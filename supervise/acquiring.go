package supervise

import (
	"context"

	"github.com/agentrt/agentrt/kernel"
)

// AcquisitionReporter is implemented by an executor that says when its
// workers acquire their environments: when AcquiresEnvironment reports
// true, a worker's node stays pending when it starts, and the executor
// moves it with Work.Acquiring and Work.Running (KernelExecutor does,
// around its provider's Create) — or its kernel turn starting does. A
// worker that settles before it runs settles from the state it reached.
type AcquisitionReporter interface {
	AcquiresEnvironment() bool
}

// acquires reports whether exec moves its workers' nodes through
// acquiring itself (AcquisitionReporter): such a worker starts pending.
func acquires(exec Executor) bool {
	r, ok := exec.(AcquisitionReporter)
	return ok && r.AcquiresEnvironment()
}

// phaseHooks are Work.Acquiring and Work.Running of node id: acquiring
// moves a pending node to acquiring, running a pending or acquiring one
// to running. A node in any other state (waiting on a question, or
// settled) is left as it is.
func (c *Coordinator) phaseHooks(id NodeID) (acquiring, running func()) {
	move := func(to State, from ...State) {
		info, ok := c.scope.Node(id)
		if !ok {
			return
		}
		for _, f := range from {
			if info.State == f {
				if err := c.scope.Transition(id, to); err != nil {
					c.logger.Debug("supervise: a worker's node did not move", "node", id, "to", to, "err", err)
				}
				return
			}
		}
	}
	return func() { move(StateAcquiring, StatePending) },
		func() { move(StateRunning, StatePending, StateAcquiring) }
}

// phased is an executor that reports acquiring, handed its worker's
// Work.Acquiring and Work.Running; a worker it returns while still
// acquiring is moved to running (ranAcquired).
type phased struct {
	Executor
	c                  *Coordinator
	id                 NodeID
	acquiring, running func()
}

// Execute runs w on the executor with its phase hooks.
func (p phased) Execute(ctx context.Context, w Work) (WorkResult, error) {
	w.Acquiring, w.Running = p.acquiring, p.running
	res, err := p.Executor.Execute(ctx, w)
	p.c.ranAcquired(p.id, err)
	return res, err
}

// ranAcquired moves a worker that returned without error while still
// acquiring to running, so that it can settle done (acquiring → done is
// not a lifecycle move).
func (c *Coordinator) ranAcquired(id NodeID, err error) {
	if err != nil {
		return
	}
	if info, ok := c.scope.Node(id); ok && info.State == StateAcquiring {
		if terr := c.scope.Transition(id, StateRunning); terr != nil {
			c.logger.Debug("supervise: a worker's node did not move", "node", id, "to", StateRunning, "err", terr)
		}
	}
}

// turnRunning is the kernel.Observer of a worker whose executor reports
// acquiring: a kernel turn starting means the worker runs (its
// environment exists), whichever path of the executor ran it — so a
// worker is never left pending while its turn streams. Every hook goes
// on to inner (nil: none).
type turnRunning struct {
	passObserver
	running func()
}

func (o turnRunning) TurnStarted(ctx context.Context, t kernel.TurnStart) (context.Context, error) {
	o.running()
	return o.passObserver.TurnStarted(ctx, t)
}
