package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// defaultCancelStoreTimeout bounds the run store's answers to agentrt
// runs cancel (--store-timeout).
const defaultCancelStoreTimeout = 30 * time.Second

func newRunsCancelCmd(stdio IO, open providerOpener) *cobra.Command {
	var sf storeFlags
	var pf providerFlags
	var asJSON bool
	var reason, operationID string
	var wait, storeTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Ask the process running a run to cancel it, and wait until it has",
		Long: `Record a cancel request for a live run. The process that owns the run — this
machine or another one sharing the store — notices within about half a
second, cancels the run and records it cancelled. cancel waits for that
(--wait, 0 to return at once) and reports the effect:

  cancelled         the run ended cancelled
  cancel_requested  the request is recorded; the run has not ended yet
  not_live          the run had already ended, or its process died
                    (interrupted): nothing was changed
  unknown           the request could not be recorded (the store failed):
                    whether the run will stop is not known

A retained run (agentrt run --retain) is owned by its provider: cancel asks
the provider through the run's control ref, under --operation-id (default: a
new one), and reports the provider's answer — accepted or replayed with its
effect, conflict (the operation id names another request) or unknown. Give the
--provider (and --base-url) the run was started on.

Exit status: 0 when the run is cancelled (or the request is recorded and
--wait is 0), 1 otherwise.`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := waitFlag(wait); err != nil {
				return err
			}
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			// The store's answers are bounded: a database that stopped
			// answering is said, not waited on for ever.
			if storeTimeout <= 0 {
				return usage("--store-timeout must be positive")
			}
			sctx, scancel := context.WithTimeout(ctx, storeTimeout)
			defer scancel()
			got, gerr := s.GetRun(sctx, args[0])
			if gerr != nil && sctx.Err() != nil && ctx.Err() == nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("the run store did not answer within %s: check that the database (--db or --database) is reachable, then cancel again", storeTimeout)}
			}
			if gerr == nil && got.Kind == retained.Kind {
				return cancelRetained(ctx, stdio, s, &pf, open, args[0], operationID, reason, wait, asJSON)
			}
			if cmd.Flags().Changed("operation-id") {
				return usage("--operation-id applies to retained runs only")
			}
			var effect kernel.Effect
			var r store.Run
			if gerr == nil && got.Kind == fleet.Kind {
				// A fleet run still pending ends at once (fleet.CancelRun);
				// a running one's worker is asked, as for any run.
				if effect, err = fleet.CancelRun(sctx, s, args[0], reason, time.Now()); err == nil {
					r, err = s.GetRun(sctx, args[0])
				}
			} else {
				effect, r, err = kernel.RequestCancel(sctx, s, args[0], reason, time.Now())
			}
			if errors.Is(err, store.ErrNotFound) {
				return noStoredRun(args[0])
			}
			if gerr == nil && got.Kind == supervise.SpawnLogRunKind && errors.Is(err, kernel.ErrNotKernelRun) {
				err = fmt.Errorf("%w; %s", err, spawnLogHolder(got, time.Now()))
			}
			if err != nil {
				if asJSON {
					writeJSON(stdio.Out, canonjson.ObjectValue([]canonjson.Member{
						{Name: "runId", Value: canonjson.StringValue(args[0])},
						{Name: "effect", Value: canonjson.StringValue(string(effect))},
					}))
				}
				return &exitError{code: ExitFailed, err: fmt.Errorf("effect %s: %w", effect, err)}
			}
			if effect == kernel.EffectCancelRequested && wait > 0 {
				fmt.Fprintf(stdio.Err, "cancel requested; waiting up to %s for run %s to end…\n", wait, r.ID)
				deadline := time.Now().Add(wait)
				wctx, wcancel := context.WithDeadline(ctx, deadline.Add(storeTimeout))
				defer wcancel()
				for time.Now().Before(deadline) && !r.Status.Terminal() {
					select {
					case <-ctx.Done():
						return &exitError{code: ExitFailed, err: ctx.Err()}
					case <-time.After(100 * time.Millisecond):
					}
					if r, err = s.GetRun(wctx, r.ID); err != nil {
						return &exitError{code: ExitFailed, err: err}
					}
				}
				switch {
				case r.Status == store.StatusCancelled:
					effect = kernel.EffectCancelled
				case r.Status.Terminal():
					effect = kernel.EffectNotLive // it ended some other way first
				}
			}
			if asJSON {
				err = writeJSON(stdio.Out, canonjson.ObjectValue([]canonjson.Member{
					{Name: "runId", Value: canonjson.StringValue(r.ID)},
					{Name: "effect", Value: canonjson.StringValue(string(effect))},
					{Name: "status", Value: canonjson.StringValue(string(r.Status))},
				}))
			} else {
				fmt.Fprintf(stdio.Out, "run %s  %s (status %s)\n", r.ID, effect, r.Status)
			}
			if err != nil {
				return err
			}
			if effect == kernel.EffectCancelled || (effect == kernel.EffectCancelRequested && wait == 0) {
				return nil
			}
			return refused()
		},
	}
	sf.register(cmd)
	pf.register(cmd)
	cmd.Flags().StringVar(&operationID, "operation-id", "", "retained runs: the cancel operation's id; the same id and reason again is replayed, never applied twice (default: a new one)")
	cmd.Flags().StringVar(&reason, "reason", "cancelled from the command line", "why, recorded with the run")
	cmd.Flags().DurationVar(&wait, "wait", 30*time.Second, "how long to wait for the run to end (0: do not wait)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the effect as JSON")
	cmd.Flags().DurationVar(&storeTimeout, "store-timeout", defaultCancelStoreTimeout, "how long to wait for the run store to answer before saying it did not")
	return cmd
}

// spawnLogHolder says, from r, the store run of a supervised run's spawn
// journal (--journal-in-store), who holds the run: the process its lease
// names (host/pid) and until when — the supervisor whose run dir takes
// the run's steers and cancellations — or that none does since its lease
// lapsed, when only a --resume continues (or cancels) it. The store
// records the holding process, not its run dir.
func spawnLogHolder(r store.Run, now time.Time) string {
	if r.Status.Terminal() {
		return fmt.Sprintf("the store says run %s ended (%s): nothing is left to cancel", r.ID, r.Status)
	}
	owner := orName(r.Owner, "an unnamed process")
	until := supervise.SpawnLogLease(r)
	if now.Before(until) {
		return fmt.Sprintf("the store says %s holds run %s (its lease lasts until %s): cancel it in that supervisor's run dir", owner, r.ID, until.UTC().Format(time.RFC3339))
	}
	if until.IsZero() {
		return fmt.Sprintf("the store says no process holds run %s (its lease was released)", r.ID)
	}
	return fmt.Sprintf("the store says no process holds run %s (the lease of %s lapsed at %s): resume it (agentrt supervise or agentrt graph with --resume --journal-in-store --run-id %s) for a supervisor to take the cancellation", r.ID, owner, until.UTC().Format(time.RFC3339), r.ID)
}
