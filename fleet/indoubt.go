package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// A fleet run whose attempt lost its environment's stream (the provider's
// server died or a network blip cut it off mid-turn) is in doubt: its turn
// may have ended, may still be running, or may have died with its server.
// Work in doubt is never run again, so the worker ends the run interrupted
// and — on a provider whose environments can be found by id — keeps the
// environment (kernel.Request.KeepInDoubt) and records it on the run
// (InDoubt). Recover later settles the run from that environment.

// Doc members of a run in doubt.
const (
	// docInDoubt is the environment kept in doubt (InDoubt).
	docInDoubt = "inDoubt"
	// docRecovery is what the last Recover found (Recovery).
	docRecovery = "recovery"
)

// InDoubt names the environment a fleet run's attempt kept when its turn
// became in doubt.
type InDoubt struct {
	// Attempt is the attempt's kernel run (it records whether the
	// runtime created the environment).
	Attempt string `json:"attempt"`
	// EnvironmentID is the kept environment.
	EnvironmentID string `json:"environmentId"`
}

// RecoveryState is what Recover found of a run in doubt.
type RecoveryState string

// Recovery states.
const (
	// RecoverySettled: the turn had ended; the run's outcome is now how
	// it ended (completed or failed).
	RecoverySettled RecoveryState = "settled"
	// RecoveryRunning: the turn was still running when Recover stopped
	// following it (or its stream broke again); the run stays in doubt
	// and Recover may be called again.
	RecoveryRunning RecoveryState = "running"
	// RecoveryLost: the environment is gone, and the turn's end with it;
	// the run stays interrupted, now known lost. Nothing was destroyed.
	RecoveryLost RecoveryState = "lost"
)

// Final reports whether nothing more can be learned of the run: a
// settled or lost run is not followed again.
func (s RecoveryState) Final() bool { return s == RecoverySettled || s == RecoveryLost }

// Recovery is what Recover found and recorded.
type Recovery struct {
	// State is what was found.
	State RecoveryState `json:"state"`
	// EnvironmentID is the environment in doubt.
	EnvironmentID string `json:"environmentId"`
	// Attempt is the kernel run that followed the turn ("" when none
	// did: the environment was gone).
	Attempt string `json:"attempt,omitzero"`
	// Detail says what was found, for people.
	Detail string `json:"detail"`
	// At is when it was found (RFC 3339).
	At string `json:"at"`
	// Replayed is true when an earlier Recover had already settled the
	// run or found it lost: this call changed nothing. Never stored.
	Replayed bool `json:"-"`
}

// ErrNotInDoubt is a run Recover cannot recover: it is not a fleet run
// that ended interrupted with its environment kept in doubt.
var ErrNotInDoubt = errors.New("fleet: the run is not in doubt")

// RecoverOptions configures Recover.
type RecoverOptions struct {
	// Provider is the provider the run ran on (its spec's provider); it
	// must find environments by id (contract.EnvironmentGetter).
	Provider contract.Provider
	// Owner names the recovering process in the run record; "" is
	// host/pid/random.
	Owner string
	// LeaseTTL is the lease of the recovery's kernel run, and how long
	// its claim on the fleet run holds past ctx's deadline; 0 is
	// kernel.DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// recoverCleanup bounds Recover's writes once ctx ended.
const recoverCleanup = 30 * time.Second

// errStopFollowing ends the following of a turn that is still running:
// its cause matches contract.ErrLeaseLost, the contract's signal for a
// provider to leave the turn running rather than cancel it.
var errStopFollowing = fmt.Errorf("fleet: recover stopped following the turn, which goes on: %w", contract.ErrLeaseLost)

// Recover settles a fleet run that ended interrupted in doubt (InDoubt):
// it finds the kept environment through the provider and re-attaches to
// its turn (kernel.Reattach with Settle), following it until it ends or
// ctx does. A turn that ended makes the run's outcome how it ended
// (completed or failed; the recovering attempt's kernel run records its
// events and ledger once) and the environment is destroyed when the
// runtime created it; a turn still running when ctx ends leaves the run
// in doubt (RecoveryRunning: call again later); an environment the
// provider no longer has leaves the run interrupted, known lost
// (RecoveryLost), destroying nothing. The work is never run again. A run
// already settled or found lost is not touched again: its recorded
// Recovery is returned, Replayed. Writes are fenced: a Recover that lost
// the run to another changes nothing. A provider that cannot tell
// whether the environment exists (its server is unreachable) is an
// error, and nothing is recorded; so is one that refuses this process's
// credentials, a *AccessRefusedError. Give ctx a deadline: the recovery's
// claim on the run lasts until it (plus LeaseTTL), or LeaseTTL without
// one, after which another Recover may take the run over and this one's
// findings are refused.
func (f *Fleet) Recover(ctx context.Context, runID string, o RecoverOptions) (*Recovery, error) {
	getter, ok := o.Provider.(contract.EnvironmentGetter)
	if o.Provider == nil || !ok {
		return nil, fmt.Errorf("fleet: recover %s: %w: the provider must find environments by id (contract.EnvironmentGetter)", runID, ErrInvalid)
	}
	if o.Owner == "" {
		o.Owner = workerID()
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = kernel.DefaultLeaseTTL
	}
	r, err := f.store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("fleet: recover %s: %w", runID, err)
	}
	fr, err := DecodeRun(r)
	if err != nil {
		return nil, err
	}
	if fr.Recovery != nil && fr.Recovery.State.Final() {
		done := *fr.Recovery
		done.Replayed = true
		return &done, nil
	}
	if fr.InDoubt == nil || r.Status != store.StatusInterrupted {
		return nil, fmt.Errorf("fleet: recover %s (%s): %w", runID, r.Status, ErrNotInDoubt)
	}
	if until := claimUntilOf(r.Doc); r.Owner != "" && f.now().Before(until) {
		return nil, fmt.Errorf("fleet: recover %s: %s is recovering it until %s; try again then", runID, r.Owner, until.UTC().Format(time.RFC3339))
	}
	doubt := *fr.InDoubt
	rec, err := kernel.ReadRun(ctx, f.store, doubt.Attempt)
	if err != nil {
		return nil, fmt.Errorf("fleet: recover %s: reading attempt %s: %w", runID, doubt.Attempt, err)
	}
	created := rec.Exact != nil && rec.Exact.EnvironmentCreated
	env, err := getter.Get(ctx, doubt.EnvironmentID)
	if status := accessRefused(err); status != 0 {
		return nil, &AccessRefusedError{RunID: runID, EnvironmentID: doubt.EnvironmentID, Status: status, Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: recover %s: cannot tell whether environment %s is alive (try again once the provider answers): %w", runID, doubt.EnvironmentID, err)
	}
	if env == nil {
		rc := &Recovery{State: RecoveryLost, EnvironmentID: doubt.EnvironmentID,
			Detail: "the environment " + doubt.EnvironmentID + " is gone, and its turn's end with it: the run is lost", At: f.stamp()}
		if err := f.recordLost(ctx, r, rc); err != nil {
			return nil, err
		}
		return rc, nil
	}
	fence, attempt, err := f.claimRecovery(ctx, r, o, doubt)
	if err != nil {
		return nil, err
	}
	res, runErr := f.followInDoubt(ctx, runID, fr.Spec, attempt.RunID, env, created, o)
	return f.settle(fence, attempt, doubt, fr.Spec.JudgedBy, res, runErr)
}

// stamp is the fleet's clock as RFC 3339.
func (f *Fleet) stamp() string { return f.now().UTC().Format(time.RFC3339Nano) }

// recordLost records, once, that a run's environment in doubt is gone.
func (f *Fleet) recordLost(ctx context.Context, read store.Run, rc *Recovery) error {
	v, err := canonjson.ToValue(rc)
	if err != nil {
		return err
	}
	_, err = f.store.UpdateRun(ctx, read.ID, func(cur *store.Run) error {
		if cur.Revision != read.Revision {
			return errChanged
		}
		cur.Doc = cur.Doc.With(docRecovery, v)
		if o, ok := cur.Doc.Get(docOutcome); ok {
			var oc Outcome
			if err := canonjson.FromValue(o, &oc); err == nil {
				oc.Error = joinNotes(oc.Error, rc.Detail)
				if ov, err := canonjson.ToValue(oc); err == nil {
					cur.Doc = cur.Doc.With(docOutcome, ov)
				}
			}
		}
		return nil
	})
	if errors.Is(err, errChanged) || errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("fleet: recover %s: the run changed meanwhile; look again", read.ID)
	}
	if err != nil {
		return fmt.Errorf("fleet: recover %s: %w", read.ID, err)
	}
	return nil
}

// claimRecovery takes the run for this recovery: a new lease generation
// (which fences out any earlier recovery), a claim until the recovery's
// deadline, and an attempt naming the environment it follows.
func (f *Fleet) claimRecovery(ctx context.Context, read store.Run, o RecoverOptions, doubt InDoubt) (store.Fence, Attempt, error) {
	until := f.now().Add(o.LeaseTTL)
	if d, ok := ctx.Deadline(); ok {
		until = d.Add(o.LeaseTTL + recoverCleanup)
	}
	var fence store.Fence
	var attempt Attempt
	_, err := f.store.UpdateRun(ctx, read.ID, func(cur *store.Run) error {
		if cur.Revision != read.Revision {
			return errChanged
		}
		attempts, err := attemptsOf(*cur)
		if err != nil {
			return err
		}
		cur.Generation++
		cur.Owner = o.Owner
		attempt = Attempt{Generation: cur.Generation, RunID: attemptID(read.ID, cur.Generation), Worker: o.Owner,
			StartedAt: f.stamp(), Note: "recovery: re-attached to the environment in doubt " + doubt.EnvironmentID}
		fence = store.Fence{RunID: read.ID, Generation: cur.Generation}
		cur.Doc, err = withAttempts(withClaim(cur.Doc, until), append(attempts, attempt))
		return err
	})
	if errors.Is(err, errChanged) || errors.Is(err, store.ErrConflict) {
		return store.Fence{}, Attempt{}, fmt.Errorf("fleet: recover %s: the run changed meanwhile (another recovery?); look again", read.ID)
	}
	if err != nil {
		return store.Fence{}, Attempt{}, fmt.Errorf("fleet: recover %s: %w", read.ID, err)
	}
	return fence, attempt, nil
}

// followInDoubt re-attaches a kernel run to the environment's turn,
// named after the fleet run as every attempt names it, only to settle
// it. When ctx ends the turn is left running (errStopFollowing).
func (f *Fleet) followInDoubt(ctx context.Context, runID string, spec Spec, attemptRun string, env contract.Environment, created bool, o RecoverOptions) (*kernel.Result, error) {
	p, err := profile.FromValue(spec.Profile)
	if err != nil {
		return nil, fmt.Errorf("%w: profile: %w", ErrInvalid, err)
	}
	follow, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	unhook := context.AfterFunc(ctx, func() { stop(errStopFollowing) })
	defer unhook()
	check, judge := spec.completionCheck()
	return kernel.Execute(follow, kernel.Request{
		Profile: p, Task: spec.Task, Provider: o.Provider, Store: f.store, Check: check, JudgedBy: judge, Stage: spec.Stage,
		RunID: attemptRun, LeaseTTL: o.LeaseTTL, CleanupTimeout: recoverCleanup, Logger: f.log,
		Reattach: &kernel.Reattach{Environment: pin(env, turnID(runID), true), Created: created, Settle: true},
	})
}

// settle records, fenced, what the recovery's kernel run found: the
// turn's end as the run's outcome (judged by judgedBy, the spec's, when
// set), the environment gone, or the turn still in doubt.
func (f *Fleet) settle(fence store.Fence, attempt Attempt, doubt InDoubt, judgedBy string, res *kernel.Result, runErr error) (*Recovery, error) {
	ctx, cancel := context.WithTimeout(context.Background(), recoverCleanup)
	defer cancel()
	rc := &Recovery{EnvironmentID: doubt.EnvironmentID, Attempt: attempt.RunID, At: f.stamp()}
	var oc *Outcome
	status := ""
	switch {
	case errors.Is(runErr, contract.ErrTurnGone):
		// The server forgot the turn (it ended long ago, or the server
		// restarted): its end will never be known, and it is not run
		// again.
		rc.State, rc.Detail = RecoveryLost, "the server no longer holds the turn in environment "+doubt.EnvironmentID+" (it ended and was forgotten, or the server restarted): its end is unknown, and the run is lost"
		if res != nil {
			status = string(res.Status)
		}
	case res == nil:
		rc.State, rc.Detail = RecoveryRunning, "the recovery could not follow the turn: "+runErr.Error()
	case res.Reason == kernel.ReasonEnvironmentGone:
		rc.State, rc.Detail = RecoveryLost, "the environment "+doubt.EnvironmentID+" is gone, and its turn's end with it: the run is lost"
		status = string(res.Status)
	case res.Reason == kernel.ReasonCancelledWithHolder:
		// Nobody asked it to stop: cut with the holder that lost it, or
		// abandoned unread by its server (serve --abandon-after). Its
		// work was never done: lost, not the worker's failure.
		rc.State, rc.Detail = RecoveryLost, "the turn in environment "+doubt.EnvironmentID+" had ended cancelled though nobody asked (its holder died or its server abandoned it unread): the run is lost"
		status = string(res.Status)
	case res.Reason == kernel.ReasonCancelled && errors.Is(runErr, errStopFollowing):
		// ctx ended before the recovery's kernel run saw the turn's end,
		// even before it re-attached to the environment (then it kept
		// nothing, having held nothing): the cancel is this recovery's
		// own going away, never the turn's end, and the turn may still
		// run.
		rc.State, rc.Detail = RecoveryRunning, "the recovery stopped before it saw the turn's end ("+res.Detail+"); the run stays in doubt"
		status = string(res.Status)
	case res.EnvironmentKept, res.Status == store.StatusInterrupted:
		rc.State, rc.Detail = RecoveryRunning, "the turn is still running (or its end could not be seen: "+res.Detail+"); the run stays in doubt"
		status = string(res.Status)
	default:
		status = string(res.Status)
		rc.State, rc.Detail = RecoverySettled, "the turn in environment "+doubt.EnvironmentID+" had ended "+status
		oc = &Outcome{Status: status, RunID: attempt.RunID, Delivered: res.Delivered, Text: res.Text, JudgedBy: judgedBy}
		if runErr != nil {
			oc.Error = runErr.Error()
		}
	}
	rv, err := canonjson.ToValue(rc)
	if err != nil {
		return nil, err
	}
	// The run is terminal, which store fences refuse: the generation this
	// recovery claimed is checked inside the compare-and-set instead.
	_, err = f.store.UpdateRun(ctx, fence.RunID, func(r *store.Run) error {
		if r.Generation != fence.Generation {
			return &store.FenceError{RunID: r.ID, Generation: fence.Generation, Current: r.Generation, Status: r.Status, Reason: store.FenceSuperseded}
		}
		attempts, err := attemptsOf(*r)
		if err != nil {
			return err
		}
		if n := len(attempts); n > 0 && attempts[n-1].RunID == attempt.RunID {
			attempts[n-1].Status = status
			if status == "" {
				attempts[n-1].Status = string(store.StatusFailed)
			}
			attempts[n-1].Note = joinNotes(attempts[n-1].Note, rc.Detail)
		}
		r.Owner = ""
		r.Doc = r.Doc.Without(docClaim).With(docRecovery, rv)
		if oc != nil {
			return setOutcome(r, attempts, *oc)
		}
		r.Doc, err = withAttempts(r.Doc, attempts)
		return err
	})
	if errors.Is(err, store.ErrFenced) {
		return nil, fmt.Errorf("fleet: recover %s: another recovery took the run over; nothing recorded: %w", fence.RunID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: recover %s: recording what was found (%s): %w", fence.RunID, rc.Detail, err)
	}
	f.log.Info("run in doubt recovered", "run", fence.RunID, "state", string(rc.State), "attempt", attempt.RunID, "environment", doubt.EnvironmentID)
	return rc, nil
}

// statusOr is the outcome's status, or or when there is no outcome.
func (o *Outcome) statusOr(or string) string {
	if o == nil {
		return or
	}
	return o.Status
}
