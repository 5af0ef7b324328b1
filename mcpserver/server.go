package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/tools"
)

// DefaultName is the server name announced in the initialize result when
// Options.Name is empty.
const DefaultName = "agentrt"

// DefaultCallTimeout bounds one tool call when Options.CallTimeout is 0:
// longer than the longest wait a tool offers (supervise's await_event
// waits at most 10 minutes).
const DefaultCallTimeout = 15 * time.Minute

// Options adjusts New. A nil *Options means the defaults.
type Options struct {
	// Name and Version are announced to the client (serverInfo). Name
	// defaults to DefaultName, Version to "dev".
	Name, Version string
	// Instructions, when set, are sent to the client at initialization.
	Instructions string
	// Logger receives the server's operational log (never arguments or
	// results). Nil discards it.
	Logger *slog.Logger
	// Bind derives the context a tool call runs with from the context the
	// SDK gives the handler. The host installs trusted identity here (for
	// example workspace.WithActiveTurn); nil leaves the context as it is.
	// It is called once per call and must be safe for concurrent use.
	Bind func(ctx context.Context) context.Context
	// CallTimeout bounds one tool call: its context ends then and the
	// call's result is the tool's error. 0 means DefaultCallTimeout.
	CallTimeout time.Duration
}

// InvalidToolError reports a tool New cannot serve: an empty or
// duplicate name, a name MCP does not allow, no Run function, or an input
// schema that does not compile.
type InvalidToolError struct {
	// Tool is the tool's name ("" when the name itself is missing).
	Tool string
	// Err says why.
	Err error
}

// Error names the tool and the reason.
func (e *InvalidToolError) Error() string {
	return fmt.Sprintf("mcpserver: tool %q: %v", e.Tool, e.Err)
}

// Unwrap returns the reason.
func (e *InvalidToolError) Unwrap() error { return e.Err }

// New returns an MCP server listing ts (the SDK sorts them by name) and
// calling them as the
// tool loop does (see the package documentation). The tools are used as
// given; New keeps no other state, and the server is safe for many
// concurrent sessions when the tools are. An error is an
// *InvalidToolError and nothing is served.
func New(ts []contract.Tool, opts *Options) (*mcp.Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	type mounted struct {
		tool  *mcp.Tool
		check *tools.Validator
		run   contract.Tool
	}
	seen := make(map[string]bool, len(ts))
	ms := make([]mounted, 0, len(ts))
	for _, t := range ts {
		if err := checkName(t.Name); err != nil {
			return nil, &InvalidToolError{Tool: t.Name, Err: err}
		}
		if seen[t.Name] {
			return nil, &InvalidToolError{Tool: t.Name, Err: errors.New("two tools have this name")}
		}
		seen[t.Name] = true
		if t.Run == nil {
			return nil, &InvalidToolError{Tool: t.Name, Err: errors.New("the tool has no Run function")}
		}
		check, err := tools.NewValidator(t)
		if err != nil {
			return nil, &InvalidToolError{Tool: t.Name, Err: err}
		}
		schema := json.RawMessage(`{"type":"object"}`)
		if t.InputSchema.IsValid() {
			schema = canonjson.Marshal(t.InputSchema)
			if ty, _ := t.InputSchema.Get("type"); ty.Kind() != canonjson.String || ty.Str() != "object" {
				return nil, &InvalidToolError{Tool: t.Name, Err: errors.New(`MCP requires an input schema of "type": "object"`)}
			}
		}
		ms = append(ms, mounted{tool: &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: schema}, check: check, run: t})
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{
		Instructions: o.Instructions,
		Logger:       o.Logger,
		// Tools only: no logging capability (our log goes to the host's
		// stderr, not to the client).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, m := range ms {
		c := caller{tool: m.run, check: m.check, bind: o.Bind, timeout: o.CallTimeout, log: o.Logger}
		srv.AddTool(m.tool, c.handle)
	}
	return srv, nil
}

// checkName applies MCP's tool name rule: 1 to 128 characters from
// A-Z, a-z, 0-9, '_', '-' and '.'.
func checkName(name string) error {
	if name == "" || len(name) > 128 {
		return errors.New("a tool name has 1 to 128 characters")
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("a tool name may not contain %q (MCP allows A-Z, a-z, 0-9, _, - and .)", r)
		}
	}
	return nil
}

// caller runs one mounted tool.
type caller struct {
	tool    contract.Tool
	check   *tools.Validator
	bind    func(context.Context) context.Context
	timeout time.Duration
	log     *slog.Logger
}

// Outcome is one call's outcome as the server reports it in a failed
// result's structuredContent: the tool loop's code and message.
type Outcome struct {
	// Error is the code: kernel.CodeInvalidArguments, kernel.CodeRefused,
	// kernel.CodeToolError or kernel.CodeExecutorError.
	Error string `json:"error"`
	// Reason is the message, as the tool loop would show it to a model.
	Reason string `json:"reason"`
}

func (c caller) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := time.Now()
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	out, fail := c.call(ctx, raw)
	if fail != nil {
		c.log.DebugContext(ctx, "tool call failed", "tool", c.tool.Name, "code", fail.Error, "elapsed", time.Since(start))
		return failed(*fail), nil
	}
	c.log.DebugContext(ctx, "tool call", "tool", c.tool.Name, "elapsed", time.Since(start))
	text := canonjson.Marshal(out)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}}
	if out.Kind() == canonjson.Object {
		// MCP clients before SEP-2106 expect an object here.
		res.StructuredContent = json.RawMessage(text)
	}
	return res, nil
}

// call checks the arguments and runs the tool the way the tool loop does.
// Absent arguments are an empty object.
func (c caller) call(ctx context.Context, raw json.RawMessage) (out canonjson.Value, fail *Outcome) {
	args := canonjson.ObjectValue(nil)
	if len(raw) > 0 {
		v, err := canonjson.Decode(raw)
		if err != nil {
			return canonjson.Value{}, &Outcome{Error: kernel.CodeInvalidArguments, Reason: "the arguments are not valid JSON: " + err.Error()}
		}
		args = v
	}
	if err := c.check.Check(args); err != nil {
		return canonjson.Value{}, &Outcome{Error: kernel.CodeInvalidArguments, Reason: err.Error()}
	}
	if c.bind != nil {
		ctx = c.bind(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			c.log.WarnContext(ctx, "tool panicked", "tool", c.tool.Name, "stack", string(debug.Stack()))
			out, fail = canonjson.Value{}, &Outcome{Error: kernel.CodeExecutorError, Reason: fmt.Sprint("the tool panicked: ", p)}
		}
	}()
	v, err := c.tool.Run(ctx, args)
	if err != nil {
		return canonjson.Value{}, outcomeOf(err)
	}
	if !v.IsValid() {
		v = canonjson.NullValue()
	}
	return v, nil
}

// outcomeOf classifies a tool's error with the tool loop's codes.
func outcomeOf(err error) *Outcome {
	if _, ok := errors.AsType[*contract.ToolRefusal](err); ok {
		return &Outcome{Error: kernel.CodeRefused, Reason: err.Error()}
	}
	if _, ok := errors.AsType[*tools.ArgumentsError](err); ok {
		return &Outcome{Error: kernel.CodeInvalidArguments, Reason: err.Error()}
	}
	return &Outcome{Error: kernel.CodeToolError, Reason: err.Error()}
}

// MaxReasonBytes bounds the reason of a failed call's result: a longer
// one (a refusal that quotes a 2 MiB argument) is clipped on a UTF-8
// boundary and marked with "…", so that what the model is shown stays
// small whatever it sent.
const MaxReasonBytes = 4096

// clip returns s cut to at most n bytes on a UTF-8 boundary, marked with
// "…" when cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// failed is the tool result of a failed call: isError, the reason
// (clipped to MaxReasonBytes) as text, the outcome as structuredContent.
func failed(o Outcome) *mcp.CallToolResult {
	o.Reason = clip(o.Reason, MaxReasonBytes)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: o.Reason}},
		StructuredContent: o,
		IsError:           true,
	}
}
