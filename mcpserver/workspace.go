package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/workspace"
)

// WorkspaceName is the server name NewWorkspace announces.
const WorkspaceName = "agentrt-workspace"

// WorkspaceOptions configures NewWorkspace.
type WorkspaceOptions struct {
	// Turn is the host's trusted active turn every call acts as: its
	// tenant selects the workspace and its member is the acting member.
	// It is required and must be valid (workspace.ActiveTurn.Validate).
	Turn workspace.ActiveTurn
	// Policy decides memory authority and admits content; nil means
	// workspace.DefaultMemoryPolicy(nil).
	Policy workspace.MemoryPolicy
	// Files adjusts the file tools; nil means their defaults.
	Files *workspace.FileOptions
	// Version is announced to the client; Logger is as in Options.
	Version string
	Logger  *slog.Logger
}

// ErrInvalidTurn matches NewWorkspace's error for a missing or invalid
// trusted turn.
var ErrInvalidTurn = errors.New("mcpserver: invalid trusted active turn")

// WorkspaceTools returns the tools NewWorkspace serves, in the order it
// lists them: workspace.MemoryTools then workspace.FileTools over st.
// They are the in-process tools themselves, so a call through the server
// and a call in-process under the same turn give equal results (WST-09).
func WorkspaceTools(st workspace.Store, pol workspace.MemoryPolicy, files *workspace.FileOptions) []contract.Tool {
	return append(workspace.MemoryTools(st, pol), workspace.FileTools(st, files)...)
}

// NewWorkspace returns an MCP server of the workspace memory and file
// tools (memory.remember, memory.recall, memory.forget, files.list,
// files.read, files.write, files.delete, files.search) over st, every call
// bound to opts.Turn. Arguments never choose the identity: a tenant or
// member named in them is ignored (WST-10). The caller keeps st open while
// the server runs and closes it afterwards.
func NewWorkspace(st workspace.Store, opts WorkspaceOptions) (*mcp.Server, error) {
	if st == nil {
		return nil, errors.New("mcpserver: NewWorkspace needs a workspace store")
	}
	if err := opts.Turn.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTurn, err)
	}
	turn := opts.Turn
	return New(WorkspaceTools(st, opts.Policy, opts.Files), &Options{
		Name:         WorkspaceName,
		Version:      opts.Version,
		Instructions: "Workspace memory and files of one tenant, acting as one member; identity is fixed by the host.",
		Logger:       opts.Logger,
		Bind:         func(ctx context.Context) context.Context { return workspace.WithActiveTurn(ctx, turn) },
	})
}
