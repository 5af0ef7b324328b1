package kernel

import "github.com/agentrt/agentrt/contract"

// observeNative binds a native session observation to the run (NSO-02):
// the run record names the provider's own conversation id from then on,
// so a process that dies still leaves it recorded. The event itself stays
// private (NSO-03): it is never appended to the run's events.
func (x *execution) observeNative(e contract.EnvironmentEvent) {
	obs := NativeObservation(e)
	if obs == nil || obs.NativeSessionID == x.res.NativeSessionID {
		return
	}
	x.res.NativeSessionID = obs.NativeSessionID
	if err := x.life.updateDoc(x.doc()); err != nil && x.life.leaseLost() == nil {
		x.log.Warn("recording the native session", "run", x.req.RunID, "err", err)
	}
}

// NativeObservation returns the valid native session observation an
// environment event carries, in its normalized form or its data, or nil
// when it carries none (a malformed one, NSO-01's strict shape, is none).
func NativeObservation(e contract.EnvironmentEvent) *contract.NativeSessionObserved {
	return contract.ObservedNativeSession(e)
}
