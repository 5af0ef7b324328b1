package kernel

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// Reattach is an environment, and the turn in it, that another run left
// behind: its process lost the run's lease or died mid-turn, and a new
// run takes the work over (a fleet worker taking a dead worker's run).
// The environment was found by lookup (contract.EnvironmentGetter) and
// carries no creation verdict of its own.
//
// The run sends its turn under the turn id the environment already
// admitted it with (the environment, or a wrapper of it, names it), so
// the provider replays that turn and carries it on instead of starting
// another (turn idempotency). How the re-attached turn ends is the run's
// outcome, with one exception: a turn that ended cancelled while nobody
// asked this run to stop was cancelled with its old holder — by the
// process that lost the lease, or by its death — and says nothing of the
// work. The provider reported that end, so the work is not in doubt (a
// turn whose end is unknown, its stream lost, fails the run with
// ReasonTransport, and is never run again): the run leaves that
// environment, destroying it when the runtime created it, and runs the
// turn again in a new environment from the same provider. So it does
// when the provider says the environment was destroyed (its error wraps
// contract.ErrDestroyed) between its lookup and the turn: the turn ended
// with it, as when the lookup finds nothing.
type Reattach struct {
	// Environment is the environment to re-attach to; required.
	Environment contract.Environment
	// Created says the record of the run that left the environment proves
	// the runtime created it (Record.EnvironmentCreated; ENV-06): this run
	// then destroys it when it is done with it, as that run would have.
	// Otherwise it is left to its provider.
	Created bool
	// Settle makes the run only settle the re-attached turn, never run it
	// again: a turn that had ended cancelled with its previous holder
	// fails the run (ReasonInBandError), an environment destroyed before
	// the turn was followed fails it with ReasonEnvironmentGone, and a
	// turn whose end this run could not see either (its stream broke
	// again, or ctx ended while it was still running) leaves the
	// environment alive and in doubt (Result.EnvironmentKept), as
	// Request.KeepInDoubt does. A caller that stops following a live
	// turn cancels ctx with a cause matching contract.ErrLeaseLost, so
	// that its provider leaves the turn running.
	Settle bool
}

// reattach runs the turn in the re-attached environment. It reports
// whether the turn must run again in a new environment: the re-attached
// turn ended cancelled though nobody asked this run to stop (see
// Reattach). Everything it observed of that turn is recorded as the
// events it is; the settled turn, its text, usage and served identity
// start afresh.
func (x *execution) reattach(ctx context.Context, r *Reattach) (again bool) {
	x.dispatched = true
	x.env, x.res.EnvironmentID = r.Environment, r.Environment.ID()
	if !x.recordEnvironment(ctx) {
		return false
	}
	x.reattaching = true
	x.observedTurn(ctx, func(ctx context.Context) { x.stream(ctx, x.env) })
	x.reattaching = false
	if !x.orphaned || x.runErr != nil {
		return false
	}
	if r.Settle {
		if x.envGone {
			x.fail(store.StatusFailed, ReasonEnvironmentGone, "the environment "+x.res.EnvironmentID+" was destroyed: its turn's end is unknown", nil)
		} else {
			x.fail(store.StatusFailed, ReasonCancelledWithHolder, "the turn had ended cancelled with its previous holder (nobody asked this run to stop: its holder died or its server abandoned it unread)", nil)
		}
		return false
	}
	x.log.Warn("the re-attached turn had ended with its previous holder; running it again in a new environment",
		"run", x.req.RunID, "env", x.res.EnvironmentID, "environment_gone", x.envGone)
	if !x.envGone {
		x.releaseEnv()
	}
	x.env, x.res.EnvironmentID, x.envGone = nil, "", false
	x.turnFrom = len(x.events)
	x.text.Reset()
	x.turn = ledger.TurnUsage{}
	x.ended, x.stoppedByModel, x.orphaned = false, false, false
	x.terminal, x.stopReason = "", ""
	x.res.Output, x.res.Served, x.res.NativeSessionID = canonjson.Value{}, ServedIdentity{}, ""
	return true
}

// inDoubt reports whether the run ends with its environment's turn in
// doubt and the caller asked to keep such an environment: it has one,
// the turn's end was not seen, and the stream broke off or ended without
// a terminal event — or, for a run that only settles a re-attached turn,
// its context ended while following it.
func (x *execution) inDoubt() bool {
	if x.env == nil || x.envGone || x.terminal != "" || x.runErr == nil {
		return false
	}
	settling := x.req.Reattach != nil && x.req.Reattach.Settle && x.req.Reattach.Environment == x.env
	if !x.req.KeepInDoubt && !settling {
		return false
	}
	switch x.runErr.Reason {
	case ReasonTransport, ReasonNoTerminal:
		return true
	case ReasonCancelled, ReasonTimedOut:
		return settling
	}
	return false
}

// recordEnvironment records the run's environment as soon as it has one,
// before its turn: a process that takes the run over after this one died
// finds it there (to re-attach to it, or to destroy it), rather than
// leaking it. It reports false, with the run failed, when the store
// refused.
func (x *execution) recordEnvironment(ctx context.Context) bool {
	if err := x.life.updateDoc(x.doc()); err != nil {
		x.recordFailed(ctx, "recording the run's environment", err)
		return false
	}
	return true
}

// releaseEnv destroys the run's environment when this run provably owns
// it (ENV-06: the runtime created it) and still holds its lease; a
// process that lost the lease destroys nothing, since another process
// may have taken the run over, and with it this environment. The
// destroy itself is bounded by the lease (teardownCtx): one still
// waiting when the lease, no longer renewed, lapses is given up — the
// environment reported not confirmed destroyed — rather than landing
// after a successor re-attached to the environment, which would end
// that holder's turn. A destroy that answered only once its bound had
// passed is no confirmation either.
func (x *execution) releaseEnv() {
	if !x.createdEnv() {
		return
	}
	if lost := x.life.holds(); lost != nil {
		x.log.Warn("leaving the environment to the run's next holder: this process lost the lease", "run", x.req.RunID, "env", x.res.EnvironmentID, "err", lost)
		return
	}
	ctx, cancel := x.life.teardownCtx()
	defer cancel()
	err := x.env.Destroy(ctx)
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), contract.ErrLeaseLost) {
			x.log.Warn("gave up destroying the environment: this process lost the lease meanwhile, and the run's next holder may use it", "run", x.req.RunID, "env", x.res.EnvironmentID, "err", err)
		} else {
			x.log.Warn("destroying the environment", "run", x.req.RunID, "env", x.res.EnvironmentID, "err", err)
		}
		x.res.TeardownUnconfirmed = teardownUnconfirmed(x.res.EnvironmentID, err)
	}
}

// teardownUnconfirmed is Result.TeardownUnconfirmed for environment id,
// whose Destroy returned err.
func teardownUnconfirmed(id string, err error) string {
	return fmt.Sprintf("environment %s was not confirmed destroyed (%v); it may still exist: destroy it with its provider", id, err)
}
