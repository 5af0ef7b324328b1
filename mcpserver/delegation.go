package mcpserver

import (
	"errors"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/delegation"
)

// DelegationOptions adjusts NewDelegation.
type DelegationOptions struct {
	// Version is announced to the client; Logger is as in Options.
	Version string
	Logger  *slog.Logger
}

// NewDelegation returns the delegation MCP server (spec/runtime.md §9,
// "Delegation server") over q: delegate, delegate_feedback,
// delegation_status, delegation_history and delegation_cancel
// (delegation.Queue.Tools). What a delegation runs — manager, workers,
// provider, check, caps — was fixed when q was opened; no argument
// chooses it. The caller keeps q open while the server runs and closes
// it afterwards.
func NewDelegation(q *delegation.Queue, opts DelegationOptions) (*mcp.Server, error) {
	if q == nil {
		return nil, errors.New("mcpserver: NewDelegation needs a delegation queue")
	}
	ts, err := q.Tools()
	if err != nil {
		return nil, err
	}
	return New(ts, &Options{
		Name:         delegation.ServerName,
		Version:      opts.Version,
		Instructions: "Delegate intents to a manager agent the host fixed: delegate waits for the result (status winner with out, or no-winner with reason) and returns the taskId; when its wait ends first, poll delegation_status with the taskId. A result is delivered only when the host's check passed.",
		Logger:       opts.Logger,
	})
}
