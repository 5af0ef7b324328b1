package kernel

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// Continue names a kept environment's provider session for a run to
// continue natively (spec runtime §3.6 "Continuity" resume; RG-08's
// proof-and-continue): the run opens the session (contract.SessionOpener)
// bound to Run, has the provider prove its boundary is still Run's
// (contract.NativeContinuer.ContextBoundary), and sends one native
// continuation carrying the run's task under the operation id
// "<RunID>.native" — the same run sent again is the same continuation,
// never a second one. No history is copied and no environment is
// created. The run is recorded like any other, with Record.Continuity
// ContinuityNative and the same native session id.
//
// The box must be verified live first (spec runtime §5, "same live box"):
// an environment whose Status is not running, or cannot be read, is
// never resumed into.
//
// When continuity cannot be proven before anything is dispatched (the
// environment is not verified live, cannot reopen sessions, the provider declares no native
// continuation, the session moved past Run, the provider refused the
// continuation) the run fails refused with a *ContinuityError and spent
// nothing: it is never run fresh in its place. Once the provider may have
// admitted the turn, the run's outcome is whatever the provider says.
//
// The run never destroys Environment: whoever kept it does.
type Continue struct {
	// Environment holds the session; required. An environment found by
	// lookup (contract.EnvironmentGetter) serves as well as the one a
	// create returned.
	Environment contract.Environment
	// Run is the exact run whose session the run continues: the
	// session's latest run when it was kept (ContinuableRun).
	Run contract.ExactRunControlRef
	// NativeSessionID is the provider's own conversation id that run was
	// bound to (NSO-02), recorded as this run's; "" when none was
	// observed.
	NativeSessionID string
}

// ContinuityError is a Request.Continue run refused because the provider
// could not prove, or refused, the native continuation of the session:
// nothing was dispatched.
type ContinuityError struct {
	// RunID is the refused run.
	RunID string
	// Reason says why continuity could not be proven.
	Reason string
}

// Error says which run was refused and why.
func (e *ContinuityError) Error() string {
	return fmt.Sprintf("kernel: run %s cannot continue the kept session natively: %s; start a fresh run instead", e.RunID, e.Reason)
}

// check adds c's problems to errs; a nil c has none.
func (c *Continue) check(errs *optionErrors) {
	if c == nil {
		return
	}
	if c.Environment == nil {
		errs.add("Continue", "name the environment that holds the session (Continue.Environment)")
	}
	if _, err := contract.Validate("AgentExactRunControlRef", contract.ExactRunControlRefSchema, c.Run); err != nil {
		errs.add("Continue.Run", "not an exact run: %v", err)
	}
}

// continueKept runs the turn of a Request.Continue run (see Continue).
func (x *execution) continueKept(ctx context.Context) {
	c := x.req.Continue
	st := &seatStage{from: &keptSession{env: c.Environment, run: c.Run, nativeSessionID: c.NativeSessionID}}
	ok := x.continueNative(ctx, st)
	if st.continuity == ContinuityNative {
		x.res.Continuity = ContinuityNative
	}
	if !ok {
		err := &ContinuityError{RunID: x.req.RunID, Reason: st.reason}
		x.fail(store.StatusFailed, ReasonRefused, err.Error(), err)
	}
}

// keptByCaller reports whether env is the environment a Request.Continue
// caller kept: the run never destroys it.
func (x *execution) keptByCaller(env contract.Environment) bool {
	return x.req.Continue != nil && env != nil && env == x.req.Continue.Environment
}

// ContinuableRun is the exact run a later Request.Continue would go on
// from in env's session sessionID: the session's latest run, as the
// provider's proof of its boundary names it. It fails with a
// *ContinuityError (RunID "") when env cannot reopen the session, the
// provider declares no native continuation, or it cannot prove the
// session's boundary (a run of it is still in progress).
func ContinuableRun(ctx context.Context, env contract.Environment, sessionID string) (contract.ExactRunControlRef, error) {
	refuse := func(format string, args ...any) (contract.ExactRunControlRef, error) {
		return contract.ExactRunControlRef{}, &ContinuityError{Reason: fmt.Sprintf(format, args...)}
	}
	if env == nil || sessionID == "" {
		return refuse("no environment or session to continue")
	}
	opener, ok := env.(contract.SessionOpener)
	if !ok {
		return refuse("environment %s cannot reopen its session", env.ID())
	}
	sess, err := opener.Session(ctx, sessionID, nil)
	if err != nil {
		return refuse("reopening session %s: %v", sessionID, err)
	}
	nc, ok := sess.(contract.NativeContinuer)
	if !ok {
		return refuse("the provider of environment %s declares no native continuation", env.ID())
	}
	proof, err := nc.ContextBoundary(ctx)
	switch {
	case err != nil:
		return refuse("proving session %s's boundary: %v", sessionID, err)
	case proof == nil:
		return refuse("the provider cannot prove session %s's boundary", sessionID)
	case proof.SessionID != sessionID || proof.EnvironmentID != env.ID():
		return refuse("the provider's boundary proof names session %s of environment %s", proof.SessionID, proof.EnvironmentID)
	}
	run := contract.ExactRunControlRef{RunID: proof.RunID, Provider: proof.Provider, EnvironmentID: proof.EnvironmentID,
		SessionID: proof.SessionID, ExecutionID: proof.ExecutionID, RequestDigest: proof.RequestDigest}
	if _, err := contract.Validate("AgentExactRunControlRef", contract.ExactRunControlRefSchema, run); err != nil {
		return refuse("the provider's boundary proof names no exact run: %v", err)
	}
	return run, nil
}
