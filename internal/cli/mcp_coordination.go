package cli

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/coordmcp"
)

func newMCPCoordinationCmd(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "coordination RUN-DIR",
		Short: "Relay the coordination verbs of a live supervise run over MCP stdio",
		Long: `Serve, on stdin/stdout, the coordination verbs (agent_runtime_coordination_*:
spawn_worker, await_event, observe_agent, submit_result, stop, ...) of the
supervise run that is live in RUN-DIR, by relaying every call to the
supervising process.

The supervising process publishes its endpoint (a loopback URL and a
per-run bearer token) in RUN-DIR/` + coordmcp.EndpointFile + ` (mode 0600)
while the run is live, and removes it when the run ends; this command
reads it, so the token never appears in an argv or a profile. This is the
MCP server an external-harness manager (agentrt supervise --provider
claude-code, codex or opencode) is given.

A refused verb is a tool result {error, reason}; a call made after the
run ended is a tool result {error: "run-not-live"}. When the run is not
live the command exits 1 before serving, saying so; when the run's
endpoint takes the connection but does not answer within 10s (its
supervising process paused or overloaded) it exits 1 saying that instead. Stdout carries nothing
but the MCP stdio transport; logs go to stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			logger := warnLogger(stdio.Err)
			err := coordmcp.Relay(ctx, args[0], stdio.In, machine(stdio.Out), coordmcp.RelayOptions{Logger: logger, Version: Version})
			switch {
			case err == nil || ctx.Err() != nil:
				return nil
			case errors.Is(err, coordmcp.ErrUnresponsive):
				return &exitError{code: ExitFailed, err: err}
			case errors.Is(err, coordmcp.ErrNotLive):
				return &exitError{code: ExitFailed, err: errors.Join(err,
					errors.New("start the run with agentrt supervise --run-dir "+args[0]+" (a claude-code, codex or opencode manager serves this endpoint), or check the directory"))}
			}
			return &exitError{code: ExitFailed, err: err}
		},
	}
}
