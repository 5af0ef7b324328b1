package supervise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
)

// Extra tools (§3.6 extraTools, executeExtraTool): work tools the root
// manager's router brain may call itself beside the coordination verbs,
// so that it can act as well as delegate. Each is a contract.Tool of
// Options.ExtraTools: Name, Description and InputSchema are what the
// model is offered (the reference's extraTools spec), Run is the
// caller's function that executes a call (its executeExtraTool), whose
// result is the call's tool result and whose error is a tool failure the
// manager reads, never a crash.

// extraOutcome is an extra tool call's journaled outcome.
type extraOutcome struct {
	out    canonjson.Value
	errMsg string
}

// checkExtraTools refuses extra tools whose names collide with a
// coordination verb (bare or prefixed: the manager could no longer
// coordinate), repeat, are empty, or that have no Run.
func checkExtraTools(tools []contract.Tool) []error {
	return checkToolNames("ExtraTools", tools, nil)
}

// checkToolNames is the one rule for the tools a manager is offered
// beside its coordination verbs (Options.ExtraTools, and what
// Options.ResolveSupervisorTools resolves for a manager): each name has
// one owner and keeps MCP's name rule (badToolName), so a tool named
// empty, outside that rule, as a coordination verb (bare or with
// ToolPrefix: the manager could no longer coordinate), twice, or as one
// of taken (another set the same manager is offered) is refused, and so
// is one with no Run. field names the set in the errors.
func checkToolNames(field string, tools []contract.Tool, taken map[string]bool) []error {
	var errs []error
	seen := map[string]bool{}
	for i, t := range tools {
		bare, _ := strings.CutPrefix(t.Name, ToolPrefix)
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("%w: %s[%d] has no name", ErrInvalidOptions, field, i))
		case badToolName(t.Name) != "":
			errs = append(errs, fmt.Errorf("%w: %s[%d] %q: %s", ErrInvalidOptions, field, i, clip(t.Name, 160), badToolName(t.Name)))
		case slices.Contains(Verbs(), bare):
			errs = append(errs, fmt.Errorf("%w: %s[%d] %q collides with a coordination verb", ErrInvalidOptions, field, i, t.Name))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("%w: %s[%d] %q is named twice", ErrInvalidOptions, field, i, t.Name))
		case taken[t.Name]:
			errs = append(errs, fmt.Errorf("%w: %s[%d] %q is already offered to this manager (ExtraTools)", ErrInvalidOptions, field, i, t.Name))
		case t.Run == nil:
			errs = append(errs, fmt.Errorf("%w: %s[%d] %q has no Run (how a call of it is executed)", ErrInvalidOptions, field, i, t.Name))
		}
		seen[t.Name] = true
	}
	return errs
}

// maxToolNameLen is the longest tool name MCP's rule allows.
const maxToolNameLen = 128

// badToolName says why name breaks MCP's tool name rule — 1 to 128
// characters from A-Z, a-z, 0-9, '_', '-' and '.' — and "" when it
// keeps it. The coordination MCP serves a manager's tools under that
// rule (mcpserver), and model providers refuse wider names, so a tool
// either arm could not offer is refused before its manager starts.
func badToolName(name string) string {
	if len(name) > maxToolNameLen {
		return fmt.Sprintf("a tool name has 1 to %d characters, not %d", maxToolNameLen, len(name))
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Sprintf("a tool name may not contain %q (A-Z, a-z, 0-9, _, - and . only)", r)
		}
	}
	return ""
}

// withExtraTools returns manager with the extra tools declared (the tool
// loop runs exactly the tools its profile declares), and the extra tools
// journaled (journaledExtraTool).
func (c *Coordinator) withExtraTools(manager *profile.Profile) (*profile.Profile, []contract.Tool, error) {
	out := c.ExtraTools()
	if len(out) == 0 {
		return manager, nil, nil
	}
	p, err := declareTools(manager, out)
	if err != nil {
		return nil, nil, err
	}
	return p, out, nil
}

// ExtraTools returns the root manager's extra tools (Options.ExtraTools),
// each call journaled as the router brain's are (journaledExtraTool):
// what an ExtraToolsOfferer's own brain offers its model beside the
// coordination verbs. A nested manager has none (nil). Only a call the
// router brain's resumed tool loop runs again from its journaled
// transcript (rerunCalls) gets its journaled outcome back or is answered
// in doubt; any other call, a caller's brain's included, runs.
func (c *Coordinator) ExtraTools() []contract.Tool {
	if c.parent != nil || len(c.extraTools) == 0 {
		return nil
	}
	out := make([]contract.Tool, 0, len(c.extraTools))
	for _, t := range c.extraTools {
		out = append(out, c.journaledExtraTool(t))
	}
	return out
}

// declareTools returns a copy of manager that declares ts besides what
// it declares (the tool loop runs exactly the tools its profile
// declares); manager itself when ts is empty.
func declareTools(manager *profile.Profile, ts []contract.Tool) (*profile.Profile, error) {
	if len(ts) == 0 {
		return manager, nil
	}
	p, err := profile.Clone(manager)
	if err != nil {
		return nil, fmt.Errorf("supervise: declaring the manager's own tools: %w", err)
	}
	if p.Tools == nil {
		p.Tools = map[string]bool{}
	}
	for _, t := range ts {
		p.Tools[t.Name] = true
	}
	return p, nil
}

// errExtraInDoubt is an extra tool call an earlier process started and
// did not see end: it is not run again (it may have acted).
var errExtraInDoubt = errors.New("supervise: this call of the tool started in an earlier process that ended before its result was journaled; it is not run again")

// journaledExtraTool wraps t so that each call is journaled before it
// runs (KindExtraToolCalled) and its outcome after (KindExtraToolDone),
// keyed by the tool and the call's id: a resumed manager whose journaled
// transcript holds the call but not its result (the loop runs it again:
// rerunCalls) gets the journaled outcome back without running it again,
// and a call whose outcome was never journaled is answered in doubt, not
// run again — each call acts at most once. Only such a re-run call reads
// the journal: a call id the provider reused (or gave none, the loop's
// "call_<tool>") names a call of its own, which runs. Run is the
// caller's code: its panic is the call's error (journaled), and a call
// still running when its context ends is not waited for (left in doubt:
// it may still act). The same machinery journals every manager's
// product tools (Options.ResolveSupervisorTools): a nested manager's
// records carry its node (Record.Node), so its calls are keyed apart
// from another manager's; the root's carry none, as its extra tools'
// always have.
func (c *Coordinator) journaledExtraTool(t contract.Tool) contract.Tool {
	run, name := t.Run, t.Name
	var node NodeID
	if c.parent != nil {
		node = c.self
	}
	t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		call := kernel.ToolCallID(ctx)
		key := name + " " + call
		mk := extraKey(node, key)
		c.mu.Lock()
		var prior extraOutcome
		var done, started bool
		if call != "" && c.rerunCalls[call] {
			prior, done = c.extraDone[mk]
			started = c.extraStarted[mk]
			if done || started {
				delete(c.rerunCalls, call)
			}
		}
		c.mu.Unlock()
		switch {
		case done && prior.errMsg != "":
			return canonjson.Value{}, errors.New(prior.errMsg)
		case done:
			return prior.out, nil
		case started:
			return canonjson.Value{}, errExtraInDoubt
		}
		if err := c.log.append(context.WithoutCancel(ctx), Record{Kind: KindExtraToolCalled, Node: node, Key: key, Label: name}); err != nil {
			return canonjson.Value{}, fmt.Errorf("supervise: the call was not run: journaling it failed: %w", err)
		}
		c.mu.Lock()
		c.extraStarted[mk] = true
		c.mu.Unlock()
		a, answered := callHook(ctx, func(ctx context.Context) (canonjson.Value, error) { return run(ctx, args) })
		if !answered {
			c.logger.Error("supervise: an extra tool did not return when its call's context ended; its call is in doubt", "tool", name, "call", call)
			return canonjson.Value{}, fmt.Errorf("supervise: the call was not waited for (it may still act): %w", context.Cause(ctx))
		}
		out, err := a.v, a.err
		if a.panic != nil {
			out, err = canonjson.Value{}, fmt.Errorf("the tool panicked: %v", a.panic)
		}
		rec := Record{Kind: KindExtraToolDone, Node: node, Key: key, Label: name, Data: out}
		o := extraOutcome{out: out}
		if err != nil {
			o.errMsg = clip(err.Error(), MaxReasonBytes)
			rec.Reason, rec.Data = o.errMsg, canonjson.Value{}
		}
		if jerr := c.log.appendOrLose(context.WithoutCancel(ctx), rec); jerr != nil {
			c.logger.Error("supervise: journaling an extra tool's result", "tool", name, "err", jerr)
		}
		c.mu.Lock()
		c.extraDone[mk] = o
		c.mu.Unlock()
		return out, err
	}
	return t
}

// replayExtraTool replays an extra tool record of an earlier process.
func (c *Coordinator) replayExtraTool(r Record) {
	switch r.Kind {
	case KindExtraToolCalled:
		c.extraStarted[extraKey(r.Node, r.Key)] = true
	case KindExtraToolDone:
		c.extraDone[extraKey(r.Node, r.Key)] = extraOutcome{out: r.Data, errMsg: r.Reason}
	}
}

// extraKey is the key of a journaled tool call of the manager of node
// ("" for the root): its record's Key (the tool and the call's id)
// under that manager.
func extraKey(node NodeID, key string) string {
	if node == "" {
		return key
	}
	return string(node) + "\x00" + key
}
