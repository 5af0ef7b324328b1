package contract

import (
	"maps"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind name of the child-task event.
const KindChildTaskEvent = "ChildTaskEvent"

// Child task statuses. Completed, failed and cancelled are terminal;
// cancelled is caller cancellation and never a failure.
const (
	ChildTaskStatusStarted   = "started"
	ChildTaskStatusRunning   = "running"
	ChildTaskStatusCompleted = "completed"
	ChildTaskStatusFailed    = "failed"
	ChildTaskStatusCancelled = "cancelled"
)

// ChildTaskEvent reports one update of a provider-native child task (a
// subagent, worker or delegated task the runner started inside the run).
//
// Identity comes only from ChildID (stable across every update of one
// child), ParentChildID (absent when the parent is the run itself) and
// SourceEventID (the provider's id of this exact update: two events with
// the same SourceEventID are the same update). Raw is an opaque bounded
// copy of provider fields and never identifies anything. A provider that
// cannot report a stable child id emits no child-task event.
//
// Runner, Model, Usage and TerminalReason are present only when the
// provider reported them. Time.Ended and TerminalReason appear only with a
// terminal status, and no time precedes Time.Started.
type ChildTaskEvent struct {
	ChildID        string                     `json:"childId"`
	ParentChildID  *string                    `json:"parentChildId,omitzero"`
	Status         string                     `json:"status"`
	Title          *string                    `json:"title,omitzero"`
	Time           ChildTaskTime              `json:"time"`
	Runner         *string                    `json:"runner,omitzero"`
	Model          *string                    `json:"model,omitzero"`
	Usage          *TokenUsage                `json:"usage,omitzero"`
	TerminalReason *string                    `json:"terminalReason,omitzero"`
	SourceEventID  string                     `json:"sourceEventId"`
	Raw            map[string]canonjson.Value `json:"raw,omitzero"`
}

// ChildTaskTime holds a child task's start, latest update and (once
// terminal) end, in epoch milliseconds as the provider reported them.
type ChildTaskTime struct {
	Started float64  `json:"started"`
	Updated float64  `json:"updated"`
	Ended   *float64 `json:"ended,omitzero"`
}

// Terminal reports whether the child task has ended, and how.
func (e *ChildTaskEvent) Terminal() (TerminalKind, bool) {
	return evTerminalStatus(e.Status)
}

var (
	evEpochMillis = schema.Number(schema.NonNegative)

	// ChildTaskEventSchema is the child-task event shape with its
	// certainty rules: end time and terminal reason only with a terminal
	// status, no time before the start, and no child its own parent.
	ChildTaskEventSchema = evVariant(EventTypeChildTask,
		schema.Req("childId", BoundedIdentifier),
		schema.Opt("parentChildId", BoundedIdentifier),
		schema.Req("status", schema.Enum(ChildTaskStatusStarted, ChildTaskStatusRunning, ChildTaskStatusCompleted,
			ChildTaskStatusFailed, ChildTaskStatusCancelled)),
		schema.Opt("title", BoundedString),
		schema.Req("time", schema.Object(
			schema.Req("started", evEpochMillis),
			schema.Req("updated", evEpochMillis),
			schema.Opt("ended", evEpochMillis),
		)),
		schema.Opt("runner", BoundedIdentifier),
		schema.Opt("model", BoundedIdentifier),
		schema.Opt("usage", ModelUsageSchema),
		schema.Opt("terminalReason", BoundedString),
		schema.Req("sourceEventId", BoundedIdentifier),
		schema.Opt("raw", BoundedJSONRecord),
	).Refine(evCheckChildTask)
)

func evCheckChildTask(c *schema.Context, v canonjson.Value) {
	_, terminal := evTerminalStatus(str(v, "status"))
	t, _ := v.Get("time")
	started, _ := t.Get("started")
	updated, _ := t.Get("updated")
	ended, hasEnded := t.Get("ended")
	if !terminal && hasEnded {
		c.Custom("only a terminal child task status may carry an end time", "time", "ended")
	}
	if _, ok := v.Get("terminalReason"); !terminal && ok {
		c.Custom("only a terminal child task status may carry a terminal reason", "terminalReason")
	}
	if updated.Float() < started.Float() {
		c.Custom("a child task update time cannot precede its start time", "time", "updated")
	}
	if hasEnded && ended.Float() < started.Float() {
		c.Custom("a child task end time cannot precede its start time", "time", "ended")
	}
	if parent, ok := v.Get("parentChildId"); ok && parent.Str() == str(v, "childId") {
		c.Custom("a child task cannot be its own parent", "parentChildId")
	}
}

// ParseChildTaskEvent decodes and validates one child-task event (with
// its "type" member) as a stream event.
func ParseChildTaskEvent(data []byte) (*ChildTaskEvent, error) {
	e, err := Parse[StreamEvent](KindChildTaskEvent, ChildTaskEventSchema, data)
	if err != nil {
		return nil, err
	}
	return e.ChildTask, nil
}

// ChildTaskDeduper rebuilds the child-task tree of one run from a live or
// replayed stream. It applies the first event with a given source event id
// and ignores every later copy, so a stream replayed after a reconnect
// builds the same tree as the live one: identity comes only from the
// child id, the parent child id and the source event id, never from Raw.
// The zero value is ready to use and safe for concurrent use.
type ChildTaskDeduper struct {
	mu       sync.Mutex
	applied  map[string]struct{}
	children map[string]ChildTaskEvent
	order    []string
}

// Apply records ev unless an event with its source event id was applied
// before, and reports whether it was applied. The child's latest state is
// the last applied update of its child id.
func (d *ChildTaskDeduper) Apply(ev ChildTaskEvent) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, dup := d.applied[ev.SourceEventID]; dup {
		return false
	}
	if d.applied == nil {
		d.applied = map[string]struct{}{}
		d.children = map[string]ChildTaskEvent{}
	}
	d.applied[ev.SourceEventID] = struct{}{}
	if _, known := d.children[ev.ChildID]; !known {
		d.order = append(d.order, ev.ChildID)
	}
	d.children[ev.ChildID] = ev
	return true
}

// ApplyEvent applies e when it is a child-task event and reports whether
// it was applied; every other event is ignored.
func (d *ChildTaskDeduper) ApplyEvent(e StreamEvent) bool {
	if e.Type != EventTypeChildTask || e.ChildTask == nil {
		return false
	}
	return d.Apply(*e.ChildTask)
}

// Seen reports whether an update with sourceEventID was applied.
func (d *ChildTaskDeduper) Seen(sourceEventID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.applied[sourceEventID]
	return ok
}

// Children returns the latest applied state of every child, by child id.
func (d *ChildTaskDeduper) Children() map[string]ChildTaskEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.children)
}

// ChildIDs returns the child ids in the order their first update was
// applied.
func (d *ChildTaskDeduper) ChildIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.order...)
}

// Parent returns the parent child id of childID, or "" when its parent is
// the run itself (or the child is unknown).
func (d *ChildTaskDeduper) Parent(childID string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.children[childID]; ok && c.ParentChildID != nil {
		return *c.ParentChildID
	}
	return ""
}
