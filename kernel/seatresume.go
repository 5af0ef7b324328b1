package kernel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// ErrNotResumable: the seated run cannot be resumed — it is still live
// under its process's lease, it ended, or its record left nothing to go
// on from. The error says which.
var ErrNotResumable = errors.New("kernel: the seated run cannot be resumed")

// maxResumptions bounds how many times one seated run is resumed.
const maxResumptions = 64

// ResumeSeated resumes a seated run whose process died (spec runtime
// §5: the run reads interrupted once its lease lapsed) from any process
// sharing its store: req names the interrupted run (RunID) with the same
// profile, task and account manager. The run's record holds the
// profile's identity (SeatedRecord.ProfileDigest); another profile is
// refused (an *OptionsError naming both identities). The interrupted record stays as it
// is — the truth that its process died — and the resumption is recorded
// as a new seated run, RunID.resume-N (ResumeOf names the original),
// whose stages open with those already tried. The chain goes on after
// the last recorded stage, under the original deadline when one was
// recorded (RG-11); every stage from the one it goes on with is resolved
// through Accounts before any of them runs, and one no account can serve
// refuses the resumption before any spend (PRF-07, a *SeatUnresolvedError
// as in ExecuteSeated). When that stage's quota refusal left a session
// (StageAttempt.KeptRun), the next stage looks its environment up
// through its own provider — a cold lookup — and continues the same
// native session when the provider proves continuity (RG-08, RG-09,
// RG-11); otherwise it starts fresh and the record says why. When the
// process died while a stage was continuing such a session (its attempt
// recorded StageRunning with the continuation it sent), the same stage
// goes on: it sends the recorded continuation again, which the provider
// answers replayed with the turn it admitted, never a second one; the
// interrupted attempt is recorded StageInterrupted. An environment found
// by lookup carries no creation verdict: the resumed run destroys it when
// it ends exactly as the original run would have — only when the
// original record proves the runtime created it (KeptCreated; ENV-06),
// and otherwise leaves it to its provider.
//
// A run still live under its lease, or ended otherwise than interrupted,
// is ErrNotResumable, as is one whose last recorded stage did not end in
// a quota refusal (it was the run's last).
func ResumeSeated(ctx context.Context, req SeatedRequest) (*SeatedResult, error) {
	if req.RunID == "" {
		return nil, &OptionsError{Field: "RunID", Problem: "name the interrupted seated run to resume"}
	}
	lo, err := checkSeated(&req)
	if err != nil {
		return nil, err
	}
	// The reads before the resumption is recorded are bounded like its
	// create, by the lease: a store that stopped answering does not hold
	// a caller without a deadline.
	rctx, cancelRead := context.WithTimeout(ctx, lo.LeaseTTL)
	defer cancelRead()
	prior, err := req.Store.GetRun(rctx, req.RunID)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrNotFound) {
			err = &StoreError{RunID: req.RunID, Op: "read", Err: err}
		}
		return nil, fmt.Errorf("kernel: reading seated run %s: %w", req.RunID, err)
	}
	if prior.Kind != KindSeated {
		return nil, fmt.Errorf("%w: run %s is a %s run, not a seated one", ErrNotResumable, req.RunID, prior.Kind)
	}
	if prior.Status != store.StatusInterrupted {
		hint := "it ended"
		if !prior.Status.Terminal() {
			hint = fmt.Sprintf("its process still holds its lease (until %s); resume it once that process died and the lease lapsed", prior.LeaseUntil.UTC().Format(time.RFC3339))
		}
		return nil, fmt.Errorf("%w: run %s is %s: %s", ErrNotResumable, req.RunID, prior.Status, hint)
	}
	rec, err := DecodeSeatedRecord(prior.Doc)
	if err != nil {
		return nil, err
	}
	if req.Task == "" {
		req.Task = rec.Task
	} else if req.Task != rec.Task {
		return nil, &OptionsError{Field: "Task", Problem: "the task differs from the interrupted run's; resume it with the same task"}
	}
	digest, err := authoredDigest(req.Profile)
	if err != nil {
		return nil, err
	}
	if rec.ProfileDigest != "" && rec.ProfileDigest != digest {
		return nil, &OptionsError{Field: "Profile", Problem: fmt.Sprintf("the interrupted run ran profile %s, not %s; resume it with the same profile", rec.ProfileDigest, digest)}
	}
	// The logical node goes on: the recorded one, or, for a record from
	// before nodes were recorded, the interrupted run's derived one.
	node := cmp.Or(rec.Node, SeatedNode(req.RunID))
	if req.Node != "" && req.Node != node {
		return nil, &OptionsError{Field: "Node", Problem: fmt.Sprintf("the interrupted run is node %s, not %s; a resumption goes on as the same node", node, req.Node)}
	}
	req.Node = node
	k0, left := req.Stage, (*StageAttempt)(nil)
	if n := len(rec.Stages); n > 0 {
		last := rec.Stages[n-1]
		switch {
		case last.Outcome == StageRunning && last.Continuation != nil:
			// The process died while the stage continued a session: the
			// same stage goes on, sending the same continuation again.
			rec.Stages[n-1].Outcome, rec.Stages[n-1].Reason = StageInterrupted, "the process running the seated run died mid-turn"
			run := last.Continuation.Run
			last.KeptRun = &run
			k0, left = last.Stage, &last
		case last.Outcome != StageQuotaRefused:
			return nil, fmt.Errorf("%w: run %s's last stage %d ended %s", ErrNotResumable, req.RunID, last.Stage, last.Outcome)
		default:
			k0, left = last.Stage+1, &last
		}
		if last.Stage >= len(req.Profile.Seats) {
			return nil, &OptionsError{Field: "Profile", Problem: fmt.Sprintf("the run recorded stage %d; the profile has %d seats", last.Stage, len(req.Profile.Seats))}
		}
		if err := sameProfile(rctx, req, last.RunID); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if rec.DeadlineUnixMs != nil {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, time.UnixMilli(*rec.DeadlineUnixMs))
		defer stop()
	}
	next := SeatedRecord{Task: rec.Task, Node: node, Stages: append([]StageAttempt{}, rec.Stages...), DeadlineUnixMs: rec.DeadlineUnixMs, ResumeOf: req.RunID,
		ProfileDigest: digest, ProfileSource: cmp.Or(req.ProfileSource, rec.ProfileSource)}
	var l *life
	for n := 1; ; n++ {
		if n > maxResumptions {
			return nil, fmt.Errorf("%w: run %s was resumed %d times already", ErrNotResumable, req.RunID, maxResumptions)
		}
		lo.RunID = fmt.Sprintf("%s.resume-%d", req.RunID, n)
		if l, err = startLife(ctx, lo, seatedDoc(next), cancel); !errors.Is(err, store.ErrExists) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	defer l.release()
	l.log.Info("resuming a seated run", "run", req.RunID, "as", lo.RunID, "stage", k0)
	req.RunID = lo.RunID
	return walkSeats(ctx, req, lo, l, next, k0, left)
}

// lookUpKept finds, through the stage's provider, the environment of the
// session a refused stage left in another process (a cold lookup), or
// says why it cannot: then the stage starts fresh.
func lookUpKept(ctx context.Context, p contract.Provider, left *StageAttempt) (*keptSession, string) {
	ref := left.KeptRun
	g, ok := p.(contract.EnvironmentGetter)
	if !ok {
		return nil, fmt.Sprintf("provider %s cannot look environment %s up", p.Name(), ref.EnvironmentID)
	}
	env, err := g.Get(ctx, ref.EnvironmentID)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("looking environment %s up: %v", ref.EnvironmentID, err)
	case env == nil:
		return nil, fmt.Sprintf("environment %s of the refused stage no longer exists", ref.EnvironmentID)
	}
	// A lookup carries no creation verdict: the record says whether the
	// runtime created the environment (ENV-06).
	return &keptSession{env: env, run: *ref, nativeSessionID: left.NativeSessionID, created: left.KeptCreated, replay: left.Continuation, holder: p}, ""
}

// sameProfile refuses a resumption whose profile is not the one the
// interrupted run's stage run was recorded with (its authored digest).
func sameProfile(ctx context.Context, req SeatedRequest, stageRun string) error {
	if stageRun == "" {
		return nil
	}
	rec, err := ReadRun(ctx, req.Store, stageRun)
	if err != nil {
		return fmt.Errorf("kernel: reading the interrupted run's stage run %s: %w", stageRun, err)
	}
	if rec.Exact == nil {
		return fmt.Errorf("kernel: the interrupted run's stage run %s is no exact run's record: %w", stageRun, rec.DocErr)
	}
	digest, err := profile.Digest(req.Profile)
	if err != nil {
		return &OptionsError{Field: "Profile", Problem: "the profile has no identity: " + err.Error()}
	}
	if digest != rec.Exact.AuthoredProfileDigest {
		return &OptionsError{Field: "Profile", Problem: fmt.Sprintf("the interrupted run ran profile %s, not %s; resume it with the same profile", rec.Exact.AuthoredProfileDigest, digest)}
	}
	return nil
}
