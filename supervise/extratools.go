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
	var errs []error
	seen := map[string]bool{}
	for i, t := range tools {
		bare, _ := strings.CutPrefix(t.Name, ToolPrefix)
		switch {
		case t.Name == "":
			errs = append(errs, fmt.Errorf("%w: ExtraTools[%d] has no name", ErrInvalidOptions, i))
		case slices.Contains(Verbs(), bare):
			errs = append(errs, fmt.Errorf("%w: ExtraTools[%d] %q collides with a coordination verb", ErrInvalidOptions, i, t.Name))
		case seen[t.Name]:
			errs = append(errs, fmt.Errorf("%w: ExtraTools[%d] %q is named twice", ErrInvalidOptions, i, t.Name))
		case t.Run == nil:
			errs = append(errs, fmt.Errorf("%w: ExtraTools[%d] %q has no Run (how a call of it is executed)", ErrInvalidOptions, i, t.Name))
		}
		seen[t.Name] = true
	}
	return errs
}

// withExtraTools returns manager with the extra tools declared (the tool
// loop runs exactly the tools its profile declares), and the extra tools
// journaled (journaledExtraTool).
func (c *Coordinator) withExtraTools(manager *profile.Profile) (*profile.Profile, []contract.Tool, error) {
	if len(c.extraTools) == 0 {
		return manager, nil, nil
	}
	p, err := profile.Clone(manager)
	if err != nil {
		return nil, nil, fmt.Errorf("supervise: declaring the extra tools: %w", err)
	}
	if p.Tools == nil {
		p.Tools = map[string]bool{}
	}
	out := make([]contract.Tool, 0, len(c.extraTools))
	for _, t := range c.extraTools {
		p.Tools[t.Name] = true
		out = append(out, c.journaledExtraTool(t))
	}
	return p, out, nil
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
// it may still act).
func (c *Coordinator) journaledExtraTool(t contract.Tool) contract.Tool {
	run, name := t.Run, t.Name
	t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		call := kernel.ToolCallID(ctx)
		key := name + " " + call
		c.mu.Lock()
		var prior extraOutcome
		var done, started bool
		if call != "" && c.rerunCalls[call] {
			prior, done = c.extraDone[key]
			started = c.extraStarted[key]
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
		if err := c.log.append(context.WithoutCancel(ctx), Record{Kind: KindExtraToolCalled, Key: key, Label: name}); err != nil {
			return canonjson.Value{}, fmt.Errorf("supervise: the call was not run: journaling it failed: %w", err)
		}
		c.mu.Lock()
		c.extraStarted[key] = true
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
		rec := Record{Kind: KindExtraToolDone, Key: key, Label: name, Data: out}
		o := extraOutcome{out: out}
		if err != nil {
			o.errMsg = clip(err.Error(), MaxReasonBytes)
			rec.Reason, rec.Data = o.errMsg, canonjson.Value{}
		}
		if jerr := c.log.appendOrLose(context.WithoutCancel(ctx), rec); jerr != nil {
			c.logger.Error("supervise: journaling an extra tool's result", "tool", name, "err", jerr)
		}
		c.mu.Lock()
		c.extraDone[key] = o
		c.mu.Unlock()
		return out, err
	}
	return t
}

// replayExtraTool replays an extra tool record of an earlier process.
func (c *Coordinator) replayExtraTool(r Record) {
	switch r.Kind {
	case KindExtraToolCalled:
		c.extraStarted[r.Key] = true
	case KindExtraToolDone:
		c.extraDone[r.Key] = extraOutcome{out: r.Data, errMsg: r.Reason}
	}
}
