package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// ContinuityNative is a stage's continuity when it went on in the native
// session of the stage before it: the provider proved the session's
// boundary and acknowledged a native continuation from it, so the
// logical agent's conversation goes on with no copied history.
const ContinuityNative = "native"

// seatStage carries a native session between the stages of a seated run:
// the execution of one stage reads from and may fill kept. ExecuteSeated
// is the one owner of a kept environment that no stage took over: it
// destroys it (when created) once no later stage continues it.
type seatStage struct {
	// from is the session the refused stage before left; nil starts
	// fresh.
	from *keptSession
	// kept is the session this stage leaves for the next one: a quota
	// refusal that broke its turn off in a session the provider named,
	// or refused a native continuation before admitting it. keepEnv
	// says the execution handed its environment over instead of
	// destroying it.
	kept    *keptSession
	keepEnv bool
	// continuity and reason say how the stage started: ContinuityNative,
	// or ContinuityFresh with why native continuation was not possible
	// ("" when the stage had no session to continue).
	continuity, reason string
	// freshTask, when set, replaces the run's task when the stage starts
	// a fresh session (SeatedRequest.FreshTask).
	freshTask string
	// sending, when set, is told the native continuation the stage is
	// about to send, and the session it continues, before it is sent.
	sending func(*contract.NativeContextContinuationRequest, *keptSession)
}

// keptSession is a provider session left by a refused stage: its
// environment, the exact run the refusal broke off, and the native
// session id the run bound (NSO-02; "" when none was observed).
type keptSession struct {
	env             contract.Environment
	run             contract.ExactRunControlRef
	nativeSessionID string
	// holder is the provider the session was reached through (the
	// refused stage's, or the one a resumed stage looked it up with);
	// nil when not known. Only a stage on that provider continues it.
	holder contract.Provider
	// created: the runtime created env (its create was answered
	// CreationCreated), whether env says so itself or, found by a cold
	// lookup, the seated run's record does (ENV-06).
	created bool
	// replay is the continuation a stage of the run sent in this session
	// before its process died: the stage sends it again instead of a new
	// one.
	replay *contract.NativeContextContinuationRequest
}

// createdEnv reports whether the runtime provably created the run's
// environment (ENV-06): its create said so, or it is the session a seat
// stage took over whose creation the seated run recorded, or the
// re-attached one whose creation the run that left it recorded.
func (x *execution) createdEnv() bool {
	if x.env == nil || x.keptByCaller(x.env) {
		return false
	}
	if x.env.Creation() == contract.CreationCreated {
		return true
	}
	if r := x.req.Reattach; r != nil && r.Created && r.Environment == x.env {
		return true
	}
	st := x.req.seat
	return st != nil && st.from != nil && st.from.created && st.from.env == x.env
}

// keepForSeat reports whether the run hands its environment to the next
// seat stage instead of destroying it: a quota refusal broke its turn off
// in a run of this environment the provider named (or refused the native
// continuation this stage attempted, leaving the session as it was).
func (x *execution) keepForSeat() bool {
	st := x.req.seat
	if st == nil || x.env == nil || x.runErr == nil {
		return false
	}
	if st.kept == nil {
		run, ok := RefusalKeepsSession(x.runErr, x.env)
		if !ok || run.Provider != x.provider {
			return false
		}
		st.kept = &keptSession{env: x.env, run: *run, nativeSessionID: x.res.NativeSessionID, created: x.createdEnv(), holder: x.req.Provider}
	}
	st.keepEnv = true
	return true
}

// continueNative runs the stage as a native continuation of the session
// the refused stage before left (RG-08, RG-11): the same environment and
// native session, the stage's own projection of the model and its own
// credential request, no copied history. It returns false, with the
// reason recorded, when continuity cannot be proven before anything is
// dispatched — the stage then starts fresh; once the provider may have
// admitted the turn, the stage's outcome is whatever the provider says,
// never a second, fresh dispatch.
//
// It is the one path that continues a kept session natively: a seat
// stage's (st is Request.seat) and a Request.Continue run's (st carries
// the session the caller named).
func (x *execution) continueNative(ctx context.Context, st *seatStage) bool {
	from := st.from
	fresh := func(format string, args ...any) bool {
		st.continuity, st.reason = ContinuityFresh, fmt.Sprintf(format, args...)
		x.log.Info("the session cannot be continued natively", "run", x.req.RunID, "reason", st.reason)
		return false
	}
	if from.holder != nil && !SameProvider(from.holder, x.req.Provider) {
		// Another provider of the same name (another endpoint or
		// account): continuing through the session's environment would
		// send this stage's turn to the provider that refused.
		return fresh("the session is held by another %s provider than this stage's", x.provider)
	}
	sess, nc, reason := OpenNativeSession(ctx, from.env, from.run, x.provider)
	if reason != "" {
		return fresh("%s", reason)
	}
	task := x.req.Task
	turn := contract.NativeContextContinuationTurn{Prompt: &task}
	if x.res.RequestedModel != "" {
		model := x.res.RequestedModel
		turn.Model = &model
	}
	req := from.replay
	if req != nil {
		// A stage of this run sent this continuation before its process
		// died mid-turn: the same request again is answered replayed with
		// the turn the provider admitted (never a second one), or with
		// the provider's refusal.
		if d, err := contract.NativeContextContinuationTurnDigest(turn); err != nil || d != req.TurnDigest {
			return fresh("the recorded continuation was sent for another turn (task or model) than this stage's")
		}
	} else {
		proof, reason := ProveNativeBoundary(ctx, nc, from.run)
		if reason != "" {
			return fresh("%s", reason)
		}
		var err error
		// The operation id is the stage run's own: the same stage sent
		// again is the same continuation, never a second one.
		if req, err = contract.NewNativeContextContinuationRequest(x.req.RunID+".native", turn, from.run, *proof); err != nil {
			return fresh("the continuation request is invalid: %v", err)
		}
	}
	if st.sending != nil {
		st.sending(req, from)
	}
	x.dispatched = true
	res, err := nc.ContinueNative(ctx, req, contract.NativeContinuationOptions{Turn: turn,
		Credential: contract.CredentialRequestFor(x.req.Profile, x.req.Stage, contract.CredentialOnTurn)})
	if admittedNothing(err) {
		// This stage's account is out too, before anything was admitted:
		// the session is as the stage before left it, for the next stage.
		x.dispatched = false
		st.continuity, st.kept = ContinuityNative, from
		x.env, x.res.EnvironmentID = from.env, from.env.ID()
		x.fail(store.StatusFailed, ReasonProvider, "continuing the session natively: "+err.Error(), err)
		return true
	}
	if err != nil {
		st.continuity = ContinuityNative
		x.env, x.res.EnvironmentID = from.env, from.env.ID()
		if !x.contextEnd(ctx) {
			x.fail(store.StatusFailed, ReasonTransport, "continuing the session natively (outcome unknown): "+err.Error(), err)
		}
		return true
	}
	if res == nil || (!contract.NativeContinuationResultMatchesRequest(req, res) && !contract.NativeContinuationRefusalMatchesRequest(req, res)) {
		st.continuity = ContinuityNative
		x.env, x.res.EnvironmentID = from.env, from.env.ID()
		x.fail(store.StatusFailed, ReasonProvider, "continuing the session natively (outcome unknown): the provider's answer does not answer this request", nil)
		return true
	}
	if ack := res.Acknowledgement; !res.Succeeded() {
		if ack.Status == contract.ContinuationStatusTransportFailure {
			st.continuity = ContinuityNative
			x.env, x.res.EnvironmentID = from.env, from.env.ID()
			x.fail(store.StatusFailed, ReasonTransport, "continuing the session natively (outcome unknown): "+derefOr(ack.Message, ack.Status), nil)
			return true
		}
		// Every other refusal admitted nothing.
		x.dispatched = false
		return fresh("the provider refused the native continuation: %s", ack.Status)
	}
	if res.ControlRef.SessionID != from.run.SessionID {
		st.continuity = ContinuityNative
		x.env, x.res.EnvironmentID = from.env, from.env.ID()
		x.fail(store.StatusFailed, ReasonProvider, fmt.Sprintf("the provider continued in session %s, not %s", res.ControlRef.SessionID, from.run.SessionID), nil)
		return true
	}
	// Admitted in the same session: the stage owns the environment now
	// and its run is bound to the same native session.
	st.continuity = ContinuityNative
	x.env, x.res.EnvironmentID = from.env, from.env.ID()
	x.res.NativeSessionID = from.nativeSessionID
	if err := x.life.updateDoc(x.doc()); err != nil && x.life.leaseLost() == nil {
		x.log.Warn("recording the continued session", "run", x.req.RunID, "err", err)
	}
	x.observedTurn(ctx, func(ctx context.Context) {
		x.consume(ctx, sess.Events(ctx, "", res.ControlRef.ExecutionID))
	})
	return true
}

// RefusalKeepsSession reports whether err, how a stage's run in env
// ended, is a typed quota refusal that broke the turn off in a run of
// env the provider named: that run's session is kept as it was, for the
// next seat stage to continue natively (RG-11). It returns the run.
func RefusalKeepsSession(err error, env contract.Environment) (*contract.ExactRunControlRef, bool) {
	q, ok := errors.AsType[*contract.QuotaRefusalError](err)
	if !ok || env == nil || q.Run == nil || q.Run.EnvironmentID != env.ID() || q.Run.Provider != env.Provider() {
		return nil, false
	}
	run := *q.Run
	return &run, true
}

// SameProvider reports whether a and b are one provider: the same
// instance once every wrapper that reports the provider it wraps
// (Unwrap() contract.Provider, as KeptProvider does) is seen through.
// Two instances of one provider kind — two sidecars, two accounts'
// endpoints — are not the same provider, whatever their names.
func SameProvider(a, b contract.Provider) bool {
	a, b = unwrapProvider(a), unwrapProvider(b)
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Type() == vb.Type() && va.Comparable() && va.Equal(vb)
}

// unwrapProvider sees through the wrappers of p.
func unwrapProvider(p contract.Provider) contract.Provider {
	for range 64 {
		w, ok := p.(interface{ Unwrap() contract.Provider })
		if !ok {
			return p
		}
		inner := w.Unwrap()
		if inner == nil {
			return p
		}
		p = inner
	}
	return p
}

// OpenNativeSession is the first half of the rule by which a seat stage
// served by provider goes on natively in the session of run, which a
// refused stage left in env (RG-11): the session is held by the same
// provider, the environment says it is running (spec runtime §5: a box
// that stopped, failed, expired or cannot say is never resumed into,
// whatever its sessions still answer), and the session reopens as a
// native continuer. It returns the reopened session, or why the stage
// must start fresh instead (the stage's ContinuityReason). It has no
// effect on the session.
func OpenNativeSession(ctx context.Context, env contract.Environment, run contract.ExactRunControlRef, provider string) (contract.Session, contract.NativeContinuer, string) {
	if env.Provider() != provider {
		return nil, nil, fmt.Sprintf("the session is held by provider %s, not this stage's %s", env.Provider(), provider)
	}
	if st, err := env.Status(ctx); err != nil {
		return nil, nil, fmt.Sprintf("verifying environment %s is live: %v", env.ID(), err)
	} else if st != contract.EnvironmentRunning {
		return nil, nil, fmt.Sprintf("environment %s is not live (%s)", env.ID(), st)
	}
	opener, ok := env.(contract.SessionOpener)
	if !ok {
		return nil, nil, fmt.Sprintf("environment %s cannot reopen its session", env.ID())
	}
	ref := run.Ref()
	sess, err := opener.Session(ctx, run.SessionID, &ref)
	if err != nil {
		return nil, nil, fmt.Sprintf("reopening session %s: %v", run.SessionID, err)
	}
	nc, ok := sess.(contract.NativeContinuer)
	if !ok {
		return nil, nil, fmt.Sprintf("provider %s declares no native continuation", provider)
	}
	return sess, nc, ""
}

// ProveNativeBoundary is the second half of the rule (after
// OpenNativeSession): the provider proves the session's boundary, bound
// to exactly run. It returns the proof, or why the stage must start
// fresh instead. A continuation that replays one already sent needs no
// new proof.
func ProveNativeBoundary(ctx context.Context, nc contract.NativeContinuer, run contract.ExactRunControlRef) (*contract.NativeContextBoundaryProof, string) {
	proof, err := nc.ContextBoundary(ctx)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("proving the session's boundary: %v", err)
	case proof == nil:
		return nil, "the provider cannot prove the session's boundary"
	case !contract.BoundaryProofMatchesRun(run, proof):
		return nil, fmt.Sprintf("the provider's boundary proof is bound to another run than %s", run.RunID)
	}
	return proof, ""
}

// destroyKept destroys a kept environment no stage took over, when the
// seated run created it (ENV-06), bounded by timeout. A Destroy that
// fails or does not answer in time is returned as the teardown not
// confirmed (Result.TeardownUnconfirmed's wording); "" when it was
// destroyed or was not the run's to destroy.
func destroyKept(ctx context.Context, k *keptSession, timeout time.Duration, log *slog.Logger) string {
	if k == nil || (!k.created && k.env.Creation() != contract.CreationCreated) {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	err := k.env.Destroy(ctx)
	if err == nil && ctx.Err() != nil {
		// A Destroy that answered only once its bound had passed is not
		// a confirmation.
		err = ctx.Err()
	}
	if err != nil {
		log.Warn("destroying a seat stage's environment", "env", k.env.ID(), "err", err)
		return teardownUnconfirmed(k.env.ID(), err)
	}
	return ""
}

func derefOr(s *string, or string) string {
	if s == nil || *s == "" {
		return or
	}
	return *s
}
