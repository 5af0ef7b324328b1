package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/fleet"
)

// defaultRecoverWait bounds how long "fleet recover" follows a turn that
// is still running before it says so and leaves it in doubt.
const defaultRecoverWait = 30 * time.Second

func newFleetRecoverCmd(stdio IO) *cobra.Command {
	var ff fleetFlags
	var providerName, scriptPath, baseURL, openaiAPI string
	var wait time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "recover RUN --database URL --provider NAME [--base-url URL]",
		Short: "Settle a fleet run left interrupted in doubt from the environment its turn ran in",
		Long: `Settle a fleet run that ended interrupted in doubt: its worker lost the
environment's stream mid-turn (a network blip, a server that went away), so the
turn may have ended, may still be running, or may be lost. The worker kept the
environment; recover looks it up through --provider (the run's provider, e.g.
--provider remote --base-url URL of the agentrt serve that holds it) and
re-attaches to its turn, never running the work again:

  settled   the turn had ended: the run now ends as the turn did
  running   the turn is still running after --wait: the run stays in doubt
            (run recover again later)
  lost      the provider no longer has the environment: the run stays
            interrupted, known lost; nothing is destroyed

A provider that refuses this process's credentials (agentrt serve answering
401 to a wrong or missing $AGENTRT_SERVE_TOKEN) is reported as such; nothing
is recorded and the run stays in doubt.

Exit status 0 when the run was settled completed, 1 otherwise.`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			if wait <= 0 {
				return usage("--wait must be positive, not %s", wait)
			}
			provider, err := openProvider(providerName, scriptPath, baseURL, openaiAPI)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), wait+fleetCallTimeout)
			defer cancel()
			fl, err := ff.open(ctx, nil)
			if err != nil {
				return err
			}
			defer fl.Close()
			follow, stop := context.WithTimeout(ctx, wait)
			defer stop()
			fmt.Fprintf(stdio.Err, "recovering %s: following its turn for at most %s\n", args[0], wait)
			rc, err := fl.Recover(follow, args[0], fleet.RecoverOptions{Provider: provider})
			var refused *fleet.AccessRefusedError
			switch {
			case errors.As(err, &refused):
				return &exitError{code: ExitFailed, err: fmt.Errorf("%w\n%s", err, accessRefusedHint(providerName, refused, args[0]))}
			case errors.Is(err, fleet.ErrNotInDoubt):
				return &exitError{code: ExitFailed, err: fmt.Errorf("%w: only a run that ended interrupted with its environment kept in doubt can be recovered (see agentrt fleet show %s)", err, args[0])}
			case errors.Is(err, fleet.ErrInvalid):
				return usage("%v", err)
			case err != nil:
				return &exitError{code: ExitFailed, err: err}
			}
			r, err := fl.Get(ctx, args[0])
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				if err := writeJSON(stdio.Out, recoveryJSON{RunID: r.ID, Status: string(r.Status), Recovery: rc, Replayed: rc.Replayed, Outcome: r.Outcome}); err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
			} else {
				again := ""
				if rc.Replayed {
					again = " (already found by an earlier recover; nothing changed)"
				}
				fmt.Fprintf(stdio.Out, "run %s: %s%s\n%s\n", r.ID, rc.State, again, rc.Detail)
				if rc.State == fleet.RecoveryRunning {
					fmt.Fprintf(stdio.Out, "environment %s kept: the turn is in doubt; agentrt fleet recover %s settles it\n", rc.EnvironmentID, r.ID)
				}
				fmt.Fprintf(stdio.Out, "status: %s\n", r.Status)
			}
			if rc.State != fleet.RecoverySettled || r.Outcome == nil || r.Outcome.Status != "completed" {
				return &exitError{code: ExitFailed}
			}
			return nil
		},
	}
	ff.register(cmd)
	cmd.Flags().StringVar(&providerName, "provider", "remote", "the run's provider, which holds its environment (remote, scripted, ...)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the provider's endpoint, as for agentrt worker")
	cmd.Flags().StringVar(&openaiAPI, "openai-api", "", "the openai provider's wire protocol, as for agentrt worker")
	cmd.Flags().StringVar(&scriptPath, "script", "", "script for the scripted provider")
	cmd.Flags().DurationVar(&wait, "wait", defaultRecoverWait, "how long to follow a turn that is still running before leaving it in doubt")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print what was found as JSON")
	return cmd
}

// recoveryJSON is fleet recover's --json output.
type recoveryJSON struct {
	RunID    string          `json:"runId"`
	Status   string          `json:"status"`
	Recovery *fleet.Recovery `json:"recovery"`
	Replayed bool            `json:"replayed"`
	Outcome  *fleet.Outcome  `json:"outcome,omitzero"`
}

// accessRefusedHint says what to do when the provider refused the
// recovering process's credentials.
func accessRefusedHint(providerName string, e *fleet.AccessRefusedError, runID string) string {
	if providerName == "remote" {
		return fmt.Sprintf("the agentrt serve at --base-url refused this process's bearer token (HTTP %d): set $AGENTRT_SERVE_TOKEN to the token that server reads (its --token-file or $AGENTRT_SERVE_TOKEN) and run agentrt fleet recover %s again; the run stays in doubt, nothing was recorded", e.Status, runID)
	}
	return fmt.Sprintf("the %s provider refused this process's credentials (HTTP %d): give it the credentials the run's workers use and run agentrt fleet recover %s again; the run stays in doubt, nothing was recorded", providerName, e.Status, runID)
}
