package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
)

// KindTeardownUnconfirmed is the journal record of a worker whose
// teardown was never acknowledged (§3.6 "Teardown & retained
// environments"): Node the worker, Label its label, Runtime where it
// ran, State its state when the record was written and Reason why the
// teardown is unconfirmed. A record of a settled worker keeps its
// capacity slot charged, also on resume.
const KindTeardownUnconfirmed = "teardown-unconfirmed"

// KindEnvironmentTeardown is the journal record of one environment a
// worker's executor released at its settlement (§3.6: release journals
// one environment-teardown{provider, environmentId, destroyed, detail?}
// per environment): Node the worker, Provider, EnvironmentID, Destroyed
// and Detail (why a destroy was not confirmed). Evidence only: replay
// passes it over (an unconfirmed one is also a teardown-unconfirmed
// record, which holds the slot).
const KindEnvironmentTeardown = "environment-teardown"

// MaxTeardowns bounds how many environment-teardown records one
// settlement journals; more are counted in the last one's Detail.
const MaxTeardowns = 16

// EnvironmentTeardown is one environment an executor released when its
// worker settled.
type EnvironmentTeardown struct {
	// Provider is the provider that held the environment.
	Provider string `json:"provider"`
	// EnvironmentID is the provider's id for it.
	EnvironmentID string `json:"environmentId"`
	// Destroyed is true when the provider confirmed the destroy.
	Destroyed bool `json:"destroyed"`
	// Detail says why a destroy was not confirmed (at most
	// MaxTeardownDetail bytes).
	Detail string `json:"detail,omitzero"`
}

// UnconfirmedTeardown names a worker whose teardown was never
// acknowledged: one still running when its run ended, or one whose
// executor could not confirm its environment was destroyed
// (WorkResult.TeardownUnconfirmed). It is §3.6's teardownUnconfirmed
// {id, label, runtime, status}; such a worker keeps its capacity slot
// charged (§15 behaviour 51).
type UnconfirmedTeardown struct {
	ID NodeID `json:"id"`
	// Label is the worker's label (its profile's name when it has none).
	Label string `json:"label,omitzero"`
	// Runtime is where it ran (RuntimeOf its executor), "" when unknown.
	Runtime string `json:"runtime,omitzero"`
	// Status is the worker's state when its teardown went unconfirmed: a
	// live state for a worker still running at the run's end, else how
	// it settled.
	Status State `json:"status,omitzero"`
	// Detail says why the teardown is unconfirmed.
	Detail string `json:"detail,omitzero"`
}

// unconfirmedFields is UnconfirmedTeardown without its decoders.
type unconfirmedFields UnconfirmedTeardown

// UnmarshalValue implements canonjson.ValueUnmarshaler: an entry, or
// the bare node id a journal written before entries had fields holds.
func (u *UnconfirmedTeardown) UnmarshalValue(v canonjson.Value) error {
	if v.Kind() == canonjson.String {
		*u = UnconfirmedTeardown{ID: NodeID(v.Str())}
		return nil
	}
	var f unconfirmedFields
	if err := canonjson.FromValue(v, &f); err != nil {
		return err
	}
	*u = UnconfirmedTeardown(f)
	return nil
}

// UnmarshalJSON reads an entry, or a bare node id (see UnmarshalValue).
func (u *UnconfirmedTeardown) UnmarshalJSON(data []byte) error {
	var id string
	if json.Unmarshal(data, &id) == nil {
		*u = UnconfirmedTeardown{ID: NodeID(id)}
		return nil
	}
	var f unconfirmedFields
	if err := json.Unmarshal(data, &f); err != nil {
		return err
	}
	*u = UnconfirmedTeardown(f)
	return nil
}

// teardownIDs are the node ids of us.
func teardownIDs(us []UnconfirmedTeardown) []NodeID {
	if len(us) == 0 {
		return nil
	}
	ids := make([]NodeID, len(us))
	for i, u := range us {
		ids[i] = u.ID
	}
	return ids
}

// HoldSlot keeps the capacity slot of settled node id charged: its
// teardown was never acknowledged, so what it ran may still hold its
// box (§3.6; §15 behaviour 51). A held slot counts against
// MaxLiveWorkers for the rest of the scope's life. Holding a slot again,
// or the slot of a node still live (it holds its slot already), does
// nothing.
func (s *Scope) HoldSlot(id NodeID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.nodes[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownNode, id)
	}
	if s.closed || n.live() || n.slotHeld {
		return nil
	}
	n.slotHeld = true
	s.live++
	return nil
}

// MaxTeardownDetail bounds an UnconfirmedTeardown's Detail (bytes): an
// executor's error text is clipped to it, so every entry fits the
// journal's records.
const MaxTeardownDetail = 1 << 10

// teardownUnconfirmed records that settled worker id's teardown was
// never acknowledged (detail says why): its slot stays charged, the
// run's result names it, and the journal keeps it (a state change made:
// a refused record is a loss).
func (c *Coordinator) teardownUnconfirmed(ctx context.Context, id NodeID, runtime string, state State, detail string) {
	detail = clip(detail, MaxTeardownDetail)
	info, _ := c.scope.Node(id)
	u := UnconfirmedTeardown{ID: id, Label: labelOf(info.Label, info.Profile), Runtime: runtime, Status: state, Detail: detail}
	if err := c.scope.HoldSlot(id); err != nil {
		c.logger.Warn("supervise: holding the slot of a worker whose teardown is unconfirmed", "node", id, "err", err)
	}
	c.mu.Lock()
	c.nameTeardownLocked(u)
	c.mu.Unlock()
	rec := Record{Kind: KindTeardownUnconfirmed, Node: id, Label: u.Label, Runtime: runtime, State: state, Reason: detail}
	if err := c.log.appendOrLose(ctx, rec); err != nil {
		c.logger.Error("supervise: journaling an unconfirmed teardown", "node", id, "err", err)
	}
}

// replayTeardown reads a teardown-unconfirmed record of a resumed run
// back: a settled worker's slot is held again and it is named in the
// result. A record of a worker that was still live when it was written
// (the run ended around it) is passed over: the resume treats that
// worker as unsettled. A worker named already (its settlement record
// carries the unconfirmed teardown too) is named once.
func (c *Coordinator) replayTeardown(r Record) {
	info, ok := c.scope.Node(r.Node)
	if !ok || !info.State.Terminal() || !r.State.Terminal() {
		return
	}
	if err := c.scope.HoldSlot(r.Node); err != nil {
		c.logger.Warn("supervise: holding the slot of a worker whose teardown is unconfirmed", "node", r.Node, "err", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nameTeardownLocked(UnconfirmedTeardown{ID: r.Node, Label: r.Label, Runtime: r.Runtime, Status: r.State, Detail: r.Reason})
}

// nameTeardownLocked names u's worker in the run's teardownUnconfirmed
// unless it is named already: a worker whose settlement's teardown went
// unconfirmed and whose kept session's release (releaseSessions) did
// too, or whose settlement record and teardown-unconfirmed record both
// say so on resume, is named once, with what was said first. HoldSlot
// is idempotent on its own. c.mu is held.
func (c *Coordinator) nameTeardownLocked(u UnconfirmedTeardown) {
	if slices.ContainsFunc(c.teardowns, func(t UnconfirmedTeardown) bool { return t.ID == u.ID }) {
		return
	}
	c.teardowns = append(c.teardowns, u)
}

// teardownsAtEnd is the run's teardownUnconfirmed once its brain
// returned: every worker whose executor reported an unconfirmed
// teardown, then every worker still live (charged at its ceiling when
// the scope closes), each journaled.
func (c *Coordinator) teardownsAtEnd(ctx context.Context) []UnconfirmedTeardown {
	c.mu.Lock()
	out := append([]UnconfirmedTeardown(nil), c.teardowns...)
	c.mu.Unlock()
	named := map[NodeID]bool{}
	for _, u := range out {
		named[u.ID] = true
	}
	var live []NodeInfo
	c.scope.eachNode(func(n *NodeInfo) {
		if n.State.Live() && !n.InDoubt && !named[n.ID] {
			live = append(live, *n)
		}
	})
	for _, n := range live {
		c.mu.Lock()
		runtime := ""
		if w := c.workers[n.ID]; w != nil {
			runtime = w.runtime
		}
		c.mu.Unlock()
		u := UnconfirmedTeardown{ID: n.ID, Label: labelOf(n.Label, n.Profile), Runtime: runtime, Status: n.State,
			Detail: "still running when the run ended"}
		out = append(out, u)
		// The finished record carries the result with this entry; a
		// refused record here is logged, not a loss.
		rec := Record{Kind: KindTeardownUnconfirmed, Node: n.ID, Label: u.Label, Runtime: runtime, State: n.State, Reason: u.Detail}
		if err := c.log.append(context.WithoutCancel(ctx), rec); err != nil {
			c.logger.Error("supervise: journaling an unconfirmed teardown", "node", n.ID, "err", err)
		}
	}
	return out
}

// environmentTeardowns journals one environment-teardown record per
// environment worker id's executor released (at most MaxTeardowns). A
// refused record is a loss: the environment's end is a fact the journal
// must keep.
func (c *Coordinator) environmentTeardowns(ctx context.Context, id NodeID, ts []EnvironmentTeardown) {
	for i, t := range ts {
		if i == MaxTeardowns-1 && len(ts) > MaxTeardowns {
			t.Detail = clip(fmt.Sprintf("%s (and %d more environments not journaled)", t.Detail, len(ts)-MaxTeardowns), MaxTeardownDetail)
		}
		if i == MaxTeardowns {
			break
		}
		destroyed := t.Destroyed
		rec := Record{Kind: KindEnvironmentTeardown, Node: id, Provider: clip(t.Provider, MaxTeardownDetail),
			EnvironmentID: clip(t.EnvironmentID, MaxTeardownDetail), Destroyed: &destroyed, Reason: clip(t.Detail, MaxTeardownDetail)}
		if err := c.log.appendOrLose(ctx, rec); err != nil {
			c.logger.Error("supervise: journaling an environment's teardown", "node", id, "environment", t.EnvironmentID, "err", err)
		}
	}
}
