package supervise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
)

// Product tools (§3.6 resolveSupervisorTools): Options.ResolveSupervisorTools
// gives each manager node — the root and every nested manager — tools of
// its own, resolved once for that node from its trusted identity
// (NodeContext), offered to that manager only, and journaled call by
// call with the machinery of Options.ExtraTools (journaledExtraTool).
// ExtraTools stay what they were: the root router's static tools.

// NodeContext is the trusted identity of one manager node, what
// Options.ResolveSupervisorTools resolves that manager's tools from and
// what each of their calls is told (ToolCallContext). Nothing in it
// comes from a model's tool arguments.
type NodeContext struct {
	// RunID is the supervised run's id. A resumed run keeps it, so it
	// also serves as the reference's runNamespace.
	RunID string
	// NodeID is the manager's node: the run's root (its id is the
	// RunID) or a nested manager's node id ("<parent>:s<seq>"). It names
	// the manager's coordination stream, and a resume keeps it, so it
	// also serves as the reference's ownerId.
	NodeID NodeID
	// Depth is the node's depth: 0 for the root, 1 for its children.
	Depth int
	// AssignmentID is a nested manager's assignment under the manager
	// that spawned it ("key:<k>" or "ordinal:<n>", as spawn_worker
	// answered it); "" for the root.
	AssignmentID string
	// Profile is the manager's profile (a copy: changing it changes
	// nothing the run holds).
	Profile *profile.Profile
	// Task is the manager's task.
	Task string
}

// ToolCallContext is what one call of a product tool is told besides
// its arguments: its manager's NodeContext and the call's id. The call's
// context.Context ends when that manager's does.
type ToolCallContext struct {
	NodeContext
	// CallID is the model's id of the call (kernel.ToolCallID), "" when
	// its transport gives none (a call over the coordination MCP).
	CallID string
}

// SupervisorTool is one product tool: Name, Description and
// InputSchema are what the manager's model is offered (as a
// contract.Tool's), Run executes a call — its result the tool result,
// its error a tool failure the manager reads, never a crash.
type SupervisorTool struct {
	Name        string
	Description string
	InputSchema canonjson.Value
	Run         func(ctx context.Context, args canonjson.Value, call ToolCallContext) (canonjson.Value, error)
}

// nodeTools is a manager's product tools, resolved once (NodeTools).
type nodeTools struct {
	mu    sync.Mutex
	done  bool
	tools []contract.Tool
	err   error
}

// ErrResolveTools wraps why a manager's product tools could not be
// resolved (Options.ResolveSupervisorTools failed, panicked, did not
// answer, or returned a tool refused by name); the manager's brain fails
// with it.
var ErrResolveTools = errors.New("supervise: resolving the manager's product tools")

// NodeTools returns this manager's product tools
// (Options.ResolveSupervisorTools) as tools its brain offers beside the
// coordination verbs, nil when the option is not set. They are
// resolved once per manager node, on the first call, with ctx (which
// bounds the resolver; task is the manager's task, as its brain was
// given it); later calls return the same tools, or the same error.
// Each tool's Run journals its call (as an ExtraTools call's) and runs
// the resolved tool's Run with a context that also ends when this
// manager's brain context does. The router brain and coordmcp's
// harness brain call it; a caller's Brain offers its manager the tools
// it returns.
func (c *Coordinator) NodeTools(ctx context.Context, task string) ([]contract.Tool, error) {
	if c.resolveTools == nil {
		return nil, nil
	}
	c.ownTools.mu.Lock()
	defer c.ownTools.mu.Unlock()
	if !c.ownTools.done {
		c.ownTools.tools, c.ownTools.err = c.resolveNodeTools(ctx, task)
		c.ownTools.done = true
	}
	return slices.Clone(c.ownTools.tools), c.ownTools.err
}

// nodeContext is this manager's NodeContext for task.
func (c *Coordinator) nodeContext(task string) (NodeContext, error) {
	nc := NodeContext{RunID: c.runID, NodeID: c.self, Task: task}
	var p *profile.Profile
	if c.parent == nil {
		p = c.manager
	} else {
		info, ok := c.scope.Node(c.self)
		if !ok {
			return NodeContext{}, fmt.Errorf("supervise: the manager %s is not a node of the run", c.self)
		}
		nc.Depth, nc.AssignmentID = info.Depth, c.scope.assignmentOf(c.self)
		c.mu.Lock()
		if w := c.workers[c.self]; w != nil {
			p = w.profile
		}
		c.mu.Unlock()
	}
	if p != nil {
		cp, err := profile.Clone(p)
		if err != nil {
			return NodeContext{}, fmt.Errorf("supervise: the manager's profile: %w", err)
		}
		nc.Profile = cp
	}
	return nc, nil
}

// resolveNodeTools calls the resolver for this manager, bounded by ctx
// (callHook), checks what it returned by name (checkToolNames; the
// root's ExtraTools are taken), and binds each tool to its node and
// journal.
func (c *Coordinator) resolveNodeTools(ctx context.Context, task string) ([]contract.Tool, error) {
	nc, err := c.nodeContext(task)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResolveTools, err)
	}
	// The resolver is given its own copy: what it keeps of it is not
	// what the calls are told.
	given := nc
	if nc.Profile != nil {
		if given.Profile, err = profile.Clone(nc.Profile); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrResolveTools, err)
		}
	}
	a, answered := callHook(ctx, func(ctx context.Context) ([]SupervisorTool, error) { return c.resolveTools(ctx, given) })
	switch {
	case !answered:
		return nil, fmt.Errorf("%w for %s: the resolver did not answer before the manager's context ended: %w", ErrResolveTools, c.self, context.Cause(ctx))
	case a.panic != nil:
		return nil, fmt.Errorf("%w for %s: the resolver panicked: %v", ErrResolveTools, c.self, a.panic)
	case a.err != nil:
		return nil, fmt.Errorf("%w for %s: %w", ErrResolveTools, c.self, a.err)
	}
	c.mu.Lock()
	scopeCtx := c.brainCtx
	c.mu.Unlock()
	if scopeCtx == nil {
		scopeCtx = ctx
	}
	bound := make([]contract.Tool, len(a.v))
	for i, st := range a.v {
		bound[i] = contract.Tool{Name: st.Name, Description: st.Description, InputSchema: st.InputSchema}
		if st.Run != nil {
			bound[i].Run = boundProductRun(nc, st.Run)
		}
	}
	var taken map[string]bool
	if c.parent == nil && len(c.extraTools) > 0 {
		taken = map[string]bool{}
		for _, t := range c.extraTools {
			taken[t.Name] = true
		}
	}
	if errs := checkToolNames("ResolveSupervisorTools("+string(c.self)+")", bound, taken); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrResolveTools, errors.Join(errs...))
	}
	for i := range bound {
		// Journaled inside the manager's scope: a call whose manager
		// ended is not waited for (journaledExtraTool's callHook), even
		// when its own transport's context goes on (an MCP request).
		t := c.journaledExtraTool(bound[i])
		t.Run = withinScope(scopeCtx, t.Run)
		bound[i] = t
	}
	return bound, nil
}

// withinScope is run with each call's context also ending when scope
// (the manager's brain context) does, with scope's cause. A call that
// arrives once scope ended is refused with its cause, neither journaled
// nor run: its manager ended, and a tool given an ended context may act
// all the same.
func withinScope(scope context.Context, run func(context.Context, canonjson.Value) (canonjson.Value, error)) func(context.Context, canonjson.Value) (canonjson.Value, error) {
	return func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		if scope.Err() != nil {
			return canonjson.Value{}, fmt.Errorf("supervise: the call was not run: its manager ended: %w", context.Cause(scope))
		}
		// The call's context ends when either does, and says the
		// manager's cause whenever the manager ended first — also when
		// the request's own end is what arrives first (a harness whose
		// stop ended its turn cancels its in-flight requests after the
		// stop ended the manager; a child of ctx would say only
		// "context canceled", whichever goroutine ran first).
		base := context.WithoutCancel(ctx)
		var cancelDeadline context.CancelFunc = func() {}
		if d, ok := ctx.Deadline(); ok {
			base, cancelDeadline = context.WithDeadline(base, d)
		}
		defer cancelDeadline()
		callCtx, cancel := context.WithCancelCause(base)
		defer cancel(nil)
		stopScope := context.AfterFunc(scope, func() { cancel(context.Cause(scope)) })
		defer stopScope()
		stopReq := context.AfterFunc(ctx, func() {
			if scope.Err() != nil {
				cancel(context.Cause(scope))
				return
			}
			cancel(context.Cause(ctx))
		})
		defer stopReq()
		return run(callCtx, args)
	}
}

// boundProductRun is run bound to its manager: each call is told nc
// (its profile a copy of its own) and its call id.
func boundProductRun(nc NodeContext, run func(context.Context, canonjson.Value, ToolCallContext) (canonjson.Value, error)) func(context.Context, canonjson.Value) (canonjson.Value, error) {
	return func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		call := ToolCallContext{NodeContext: nc, CallID: kernel.ToolCallID(ctx)}
		if nc.Profile != nil {
			p, err := profile.Clone(nc.Profile)
			if err != nil {
				return canonjson.Value{}, err
			}
			call.Profile = p
		}
		return run(ctx, args, call)
	}
}
