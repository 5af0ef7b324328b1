package supervise

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
