package contract

import (
	"context"

	"github.com/agentrt/agentrt/canonjson"
)

// Tool is a function an agent may call: the shape agentrt's tool loop
// drives, workspace memory and file tools provide, and an MCP server can
// mount. It is a Go contract, not a wire kind.
type Tool struct {
	// Name is the tool's name as the model sees it.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// InputSchema is the JSON Schema of the tool's arguments (an object).
	InputSchema canonjson.Value
	// Run executes one call. Identity and authority come from ctx (the
	// host's trusted active turn), never from the arguments. A returned
	// error is a tool failure the loop reports to the model, not a crash.
	Run func(ctx context.Context, args canonjson.Value) (canonjson.Value, error)
}

// ToolRefusal is returned by Tool.Run when policy refuses the call (as
// opposed to the call failing). The loop reports it to the model and may
// stop on it.
type ToolRefusal struct {
	Tool   string
	Reason string
}

func (e *ToolRefusal) Error() string { return "tool " + e.Tool + " refused: " + e.Reason }
