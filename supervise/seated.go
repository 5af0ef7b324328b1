package supervise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// executeSeated runs a worker whose profile has seats through its seat
// chain (kernel.ExecuteSeated) on the providers e.Accounts resolves: a
// typed quota refusal on one stage continues on the next under the same
// worker — its node, its deadline and, where the provider proves
// continuity, its native session (RG-07..RG-11) — and the seated record
// names every stage tried. The worker's spend is every stage's (a stage
// refused part way through a turn spent what its record says), unknown
// where a stage's record cannot be read. Steers reach no seated worker:
// its inbox is sealed before the chain runs, so they are refused
// not_live rather than queued for a turn that never takes them.
func (e *KernelExecutor) executeSeated(ctx context.Context, w Work) (WorkResult, error) {
	w.Inbox.Seal(ctx)
	runID := kernel.NewID("worker")
	if w.Bind != nil {
		// Journaled before the run exists, as for an unseated worker:
		// a process that dies mid-chain leaves it recoverable.
		if err := w.Bind(ctx, runID); err != nil {
			return WorkResult{Spent: zeroSpend()}, fmt.Errorf("supervise: worker %s: %w", w.Node, err)
		}
	}
	// The worker's questions go to its manager, and each stage's
	// environment creation is its acquiring, as for an unseated worker.
	asking := newAskWorker(ctx, w, e.Logger)
	defer asking.close()
	accounts := kernel.AccountManagerFunc(func(ctx context.Context, stage int, seat profile.Seat) (contract.Provider, error) {
		p, err := e.Accounts.ProviderFor(ctx, stage, seat)
		if err != nil || p == nil {
			return p, err
		}
		return asking.provider(p), nil
	})
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: w.Profile, Task: w.Task, Store: e.Store, RunID: runID, Kind: WorkerRunKind, JudgedBy: w.JudgedBy(), Observer: asking.observer(w.Observer)},
		// The worker is the logical node every stage runs as (RG-11).
		Node: string(w.Node)})
	if res == nil {
		if err == nil {
			err = errors.New("supervise: the kernel returned no seated result")
		}
		// Refused before any stage ran: nothing was spent.
		return WorkResult{Spent: zeroSpend()}, fmt.Errorf("supervise: worker %s: %w", w.Node, err)
	}
	usage := e.stagesUsage(ctx, res)
	out := WorkResult{Spent: SpendOf(usage), Usage: &usage}
	if res.Final != nil {
		out.Text, out.Output, out.ServedModel, out.Session = res.Final.Text, res.Final.Output, res.Final.Served.Model, res.Final.NativeSessionID
		// An environment the chain's last run could not confirm
		// destroyed holds the worker's slot (§15 behaviour 51).
		out.TeardownUnconfirmed = res.Final.TeardownUnconfirmed
	}
	if res.TeardownUnconfirmed != "" {
		// An environment of the chain — a stage's, or a session a refused
		// stage left — may still exist: the settlement says so.
		out.TeardownUnconfirmed = res.TeardownUnconfirmed
		if e.Logger != nil {
			e.Logger.Error("supervise: destroying a seated worker's environment", "node", w.Node, "err", res.TeardownUnconfirmed)
		}
	}
	if err != nil {
		return out, fmt.Errorf("supervise: worker %s: %w", w.Node, err)
	}
	return out, nil
}

// stagesUsage is what every stage of a seated run spent
// (kernel.SeatedUsage); unknown when a stage's record cannot be read.
func (e *KernelExecutor) stagesUsage(ctx context.Context, res *kernel.SeatedResult) ledger.Usage {
	u, err := kernel.SeatedUsage(context.WithoutCancel(ctx), e.Store, res.Stages)
	if err != nil {
		if e.Logger != nil {
			e.Logger.Warn("supervise: reading a seated worker's spend", "run", res.RunID, "err", err)
		}
		return ledger.Usage{}
	}
	return u
}

// recoverSeated reports how the seated run of a worker ended (Recover,
// for a worker whose execution is a seated run): its result is its last
// stage's, its spend every stage's.
func (e *KernelExecutor) recoverSeated(ctx context.Context, run *kernel.RunRecord) (Recovered, error) {
	if run.Seated == nil {
		return Recovered{}, fmt.Errorf("supervise: seated run %s: its record cannot be read: %v", run.ID, run.DocErr)
	}
	if run.Seated.Terminal == nil {
		return Recovered{}, fmt.Errorf("supervise: seated run %s is %s but its record holds no end", run.ID, run.Status)
	}
	usage := e.stagesUsage(ctx, &kernel.SeatedResult{RunID: run.ID, Stages: run.Seated.Stages})
	res := WorkResult{Spent: SpendOf(usage), Usage: &usage}
	for _, st := range slices.Backward(run.Seated.Stages) {
		if st.RunID == "" {
			continue
		}
		last, err := kernel.ReadRun(ctx, e.Store, st.RunID)
		if err != nil {
			return Recovered{}, fmt.Errorf("supervise: seated run %s: reading stage %d's run %s: %w", run.ID, st.Stage, st.RunID, err)
		}
		if last.Exact != nil {
			res.Output, res.ServedModel = last.Exact.Output, string(last.Exact.ServedModel)
			if last.Exact.Text != nil {
				res.Text = *last.Exact.Text
			}
		}
		break
	}
	out := Recovered{State: StateDone, Result: res}
	switch run.Status {
	case store.StatusCompleted:
		return out, nil
	case store.StatusCancelled:
		out.State = StateCancelled
	default:
		out.State = StateFailed
	}
	out.Reason = fmt.Sprintf("seated run %s %s", run.ID, run.Status)
	if why := strings.TrimSpace(run.Seated.Terminal.Reason + " " + run.Seated.Terminal.Detail); why != "" {
		out.Reason += ": " + why
	}
	return out, nil
}
