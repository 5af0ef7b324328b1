package contract

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of the canonical stream event and its parts.
const (
	KindCanonicalStreamEvent = "CanonicalStreamEvent"
	KindPart                 = "Part"
)

// Stream event types: the discriminator of the canonical event union. A
// later minor version of the contract may add types, so a consumer's
// switch over them needs a default branch.
const (
	EventTypeMessagePartUpdated    = "message.part.updated"
	EventTypeToolHeartbeat         = "tool-heartbeat"
	EventTypeToolSlow              = "tool-slow"
	EventTypeModelProcessing       = "model-processing"
	EventTypeStatus                = "status"
	EventTypeWarning               = "warning"
	EventTypeRaw                   = "raw"
	EventTypeNativeSessionObserved = "native.session.observed"
	EventTypeSessionUpdated        = "session.updated"
	EventTypeInteraction           = "interaction"
	EventTypeInteractionCancel     = "interaction.cancel"
	EventTypePlanSubmitted         = "plan.submitted"
	EventTypeChildTask             = "child-task"
)

// Run statuses a status event reports. Cancelled is caller cancellation
// and is never a failure; failed is the run failing on its own.
const (
	StreamStatusStarted    = "started"
	StreamStatusProcessing = "processing"
	StreamStatusCompleted  = "completed"
	StreamStatusFailed     = "failed"
	StreamStatusCancelled  = "cancelled"
)

// Phases of a model-processing event.
const (
	ModelPhaseToolResult = "tool-result"
	ModelPhaseGenerating = "generating"
	ModelPhaseThinking   = "thinking"
)

// MessagePartUpdatedEvent reports the current state of one message part,
// with the newly appended text when the runner streams deltas.
type MessagePartUpdatedEvent struct {
	Part  Part    `json:"part"`
	Delta *string `json:"delta,omitzero"`
}

// ToolHeartbeatEvent says a tool call is still running after ElapsedMs
// milliseconds.
type ToolHeartbeatEvent struct {
	ToolName  string  `json:"toolName"`
	PartID    string  `json:"partId"`
	ElapsedMs float64 `json:"elapsedMs"`
}

// ToolSlowEvent says a tool call has run longer than ThresholdMs.
type ToolSlowEvent struct {
	ToolName    string  `json:"toolName"`
	PartID      string  `json:"partId"`
	ElapsedMs   float64 `json:"elapsedMs"`
	ThresholdMs float64 `json:"thresholdMs"`
}

// ModelProcessingEvent says the model is busy (reading a tool result,
// generating or thinking), optionally for which tool and for how long.
type ModelProcessingEvent struct {
	Phase     string   `json:"phase"`
	ToolName  *string  `json:"toolName,omitzero"`
	ElapsedMs *float64 `json:"elapsedMs,omitzero"`
}

// StatusEvent reports the run's lifecycle status (the StreamStatus*
// constants). Completed, failed and cancelled are terminal.
type StatusEvent struct {
	Status string  `json:"status"`
	Detail *string `json:"detail,omitzero"`
}

// WarningEvent is a non-fatal problem the runner reports.
type WarningEvent struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// RawEvent carries a backend-native event that has no canonical form, as
// bounded JSON.
type RawEvent struct {
	Backend string          `json:"backend"`
	Event   canonjson.Value `json:"event"`
}

// SessionUpdatedEvent reports the public session (resume key) of a run,
// with its title and creation/update times when known. It never
// establishes the provider's native conversation identity; that is what
// the private NativeSessionObserved event is for.
type SessionUpdatedEvent struct {
	SessionID string       `json:"sessionId"`
	Title     *string      `json:"title,omitzero"`
	Time      *SessionTime `json:"time,omitzero"`
}

// SessionTime holds a session's creation and last update times, as the
// provider reports them.
type SessionTime struct {
	Created *float64 `json:"created,omitzero"`
	Updated *float64 `json:"updated,omitzero"`
}

// InteractionEvent is a typed interaction request the run raised.
type InteractionEvent struct {
	Request InteractionRequest `json:"request"`
}

// InteractionCancelEvent withdraws an outstanding interaction request.
type InteractionCancelEvent struct {
	ID     string  `json:"id"`
	Reason *string `json:"reason,omitzero"`
}

// PlanSubmittedEvent reports a durable plan the run committed.
type PlanSubmittedEvent struct {
	Plan DurablePlan `json:"plan"`
}

// StreamEvent is one canonical stream event: Type names the variant and
// exactly the matching pointer is set. The JSON form is the variant's
// members plus "type".
type StreamEvent struct {
	Type string

	MessagePartUpdated    *MessagePartUpdatedEvent
	ToolHeartbeat         *ToolHeartbeatEvent
	ToolSlow              *ToolSlowEvent
	ModelProcessing       *ModelProcessingEvent
	Status                *StatusEvent
	Warning               *WarningEvent
	Raw                   *RawEvent
	NativeSessionObserved *NativeSessionObserved
	SessionUpdated        *SessionUpdatedEvent
	Interaction           *InteractionEvent
	InteractionCancel     *InteractionCancelEvent
	PlanSubmitted         *PlanSubmittedEvent
	ChildTask             *ChildTaskEvent
}

// NewStreamEvent wraps a variant (a pointer to one of the *Event types or
// to NativeSessionObserved) in a StreamEvent with its type set.
func NewStreamEvent(variant any) (StreamEvent, error) {
	var e StreamEvent
	switch v := variant.(type) {
	case *MessagePartUpdatedEvent:
		e.Type, e.MessagePartUpdated = EventTypeMessagePartUpdated, v
	case *ToolHeartbeatEvent:
		e.Type, e.ToolHeartbeat = EventTypeToolHeartbeat, v
	case *ToolSlowEvent:
		e.Type, e.ToolSlow = EventTypeToolSlow, v
	case *ModelProcessingEvent:
		e.Type, e.ModelProcessing = EventTypeModelProcessing, v
	case *StatusEvent:
		e.Type, e.Status = EventTypeStatus, v
	case *WarningEvent:
		e.Type, e.Warning = EventTypeWarning, v
	case *RawEvent:
		e.Type, e.Raw = EventTypeRaw, v
	case *NativeSessionObserved:
		e.Type, e.NativeSessionObserved = EventTypeNativeSessionObserved, v
	case *SessionUpdatedEvent:
		e.Type, e.SessionUpdated = EventTypeSessionUpdated, v
	case *InteractionEvent:
		e.Type, e.Interaction = EventTypeInteraction, v
	case *InteractionCancelEvent:
		e.Type, e.InteractionCancel = EventTypeInteractionCancel, v
	case *PlanSubmittedEvent:
		e.Type, e.PlanSubmitted = EventTypePlanSubmitted, v
	case *ChildTaskEvent:
		e.Type, e.ChildTask = EventTypeChildTask, v
	default:
		return StreamEvent{}, fmt.Errorf("%T is not a stream event variant", variant)
	}
	if e.Variant() == nil {
		return StreamEvent{}, errors.New("stream event variant is nil")
	}
	return e, nil
}

// StatusStreamEvent returns a status event with an optional detail.
func StatusStreamEvent(status string, detail *string) StreamEvent {
	return StreamEvent{Type: EventTypeStatus, Status: &StatusEvent{Status: status, Detail: detail}}
}

// Variant returns the pointer that matches e.Type, or nil when e.Type is
// unknown or its pointer is unset.
func (e StreamEvent) Variant() any {
	var p any
	switch e.Type {
	case EventTypeMessagePartUpdated:
		p = evNonNil(e.MessagePartUpdated)
	case EventTypeToolHeartbeat:
		p = evNonNil(e.ToolHeartbeat)
	case EventTypeToolSlow:
		p = evNonNil(e.ToolSlow)
	case EventTypeModelProcessing:
		p = evNonNil(e.ModelProcessing)
	case EventTypeStatus:
		p = evNonNil(e.Status)
	case EventTypeWarning:
		p = evNonNil(e.Warning)
	case EventTypeRaw:
		p = evNonNil(e.Raw)
	case EventTypeNativeSessionObserved:
		p = evNonNil(e.NativeSessionObserved)
	case EventTypeSessionUpdated:
		p = evNonNil(e.SessionUpdated)
	case EventTypeInteraction:
		p = evNonNil(e.Interaction)
	case EventTypeInteractionCancel:
		p = evNonNil(e.InteractionCancel)
	case EventTypePlanSubmitted:
		p = evNonNil(e.PlanSubmitted)
	case EventTypeChildTask:
		p = evNonNil(e.ChildTask)
	}
	return p
}

// evNonNil returns p as an any, or an untyped nil for a nil pointer.
func evNonNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return p
}

// evVariants maps each event type to a constructor of its variant, for
// decoding.
var evVariants = map[string]func(e *StreamEvent) any{
	EventTypeMessagePartUpdated: func(e *StreamEvent) any {
		e.MessagePartUpdated = new(MessagePartUpdatedEvent)
		return e.MessagePartUpdated
	},
	EventTypeToolHeartbeat: func(e *StreamEvent) any { e.ToolHeartbeat = new(ToolHeartbeatEvent); return e.ToolHeartbeat },
	EventTypeToolSlow:      func(e *StreamEvent) any { e.ToolSlow = new(ToolSlowEvent); return e.ToolSlow },
	EventTypeModelProcessing: func(e *StreamEvent) any {
		e.ModelProcessing = new(ModelProcessingEvent)
		return e.ModelProcessing
	},
	EventTypeStatus:  func(e *StreamEvent) any { e.Status = new(StatusEvent); return e.Status },
	EventTypeWarning: func(e *StreamEvent) any { e.Warning = new(WarningEvent); return e.Warning },
	EventTypeRaw:     func(e *StreamEvent) any { e.Raw = new(RawEvent); return e.Raw },
	EventTypeNativeSessionObserved: func(e *StreamEvent) any {
		e.NativeSessionObserved = new(NativeSessionObserved)
		return e.NativeSessionObserved
	},
	EventTypeSessionUpdated: func(e *StreamEvent) any { e.SessionUpdated = new(SessionUpdatedEvent); return e.SessionUpdated },
	EventTypeInteraction:    func(e *StreamEvent) any { e.Interaction = new(InteractionEvent); return e.Interaction },
	EventTypeInteractionCancel: func(e *StreamEvent) any {
		e.InteractionCancel = new(InteractionCancelEvent)
		return e.InteractionCancel
	},
	EventTypePlanSubmitted: func(e *StreamEvent) any { e.PlanSubmitted = new(PlanSubmittedEvent); return e.PlanSubmitted },
	EventTypeChildTask:     func(e *StreamEvent) any { e.ChildTask = new(ChildTaskEvent); return e.ChildTask },
}

// MarshalValue implements canonjson.ValueMarshaler: the variant's members
// and "type".
func (e StreamEvent) MarshalValue() (canonjson.Value, error) {
	variant := e.Variant()
	if variant == nil {
		return canonjson.Value{}, fmt.Errorf("stream event of type %q has no matching variant", e.Type)
	}
	v, err := canonjson.ToValue(variant)
	if err != nil {
		return canonjson.Value{}, err
	}
	members := make([]canonjson.Member, 0, v.Len()+1)
	members = append(members, canonjson.Member{Name: "type", Value: canonjson.StringValue(e.Type)})
	members = append(members, v.Members()...)
	return canonjson.ObjectValue(members), nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (e *StreamEvent) UnmarshalValue(v canonjson.Value) error {
	*e = StreamEvent{}
	if v.Kind() != canonjson.Object {
		return fmt.Errorf("stream event must be an object, got %s", v.Kind())
	}
	t, _ := v.Get("type")
	if t.Kind() != canonjson.String {
		return errors.New("stream event has no string type")
	}
	build, ok := evVariants[t.Str()]
	if !ok {
		return fmt.Errorf("unknown stream event type %q", t.Str())
	}
	e.Type = t.Str()
	return canonjson.FromValue(withoutMember(v, "type"), build(e))
}

// TerminalKind classifies how a run ended.
type TerminalKind string

// Terminal kinds. Cancelled (caller cancellation) is never reported as
// failed.
const (
	TerminalCompleted TerminalKind = "completed"
	TerminalFailed    TerminalKind = "failed"
	TerminalCancelled TerminalKind = "cancelled"
)

// EventTerminal reports whether e ends its run, and how: a status event
// with status completed, failed or cancelled. Child-task events never end
// the run (their status is the child's).
func EventTerminal(e StreamEvent) (TerminalKind, bool) {
	if e.Type != EventTypeStatus || e.Status == nil {
		return "", false
	}
	return evTerminalStatus(e.Status.Status)
}

// evTerminalStatus maps a terminal status name to its kind.
func evTerminalStatus(status string) (TerminalKind, bool) {
	switch status {
	case StreamStatusCompleted:
		return TerminalCompleted, true
	case StreamStatusFailed:
		return TerminalFailed, true
	case StreamStatusCancelled:
		return TerminalCancelled, true
	}
	return "", false
}

// EventUsage returns the token usage a stream event reports (a child-task
// event's usage of that child), or nil when it reports none.
func EventUsage(e StreamEvent) *TokenUsage {
	if e.Type == EventTypeChildTask && e.ChildTask != nil {
		return e.ChildTask.Usage
	}
	return nil
}

var (
	evFiniteNumber     = schema.Number()
	evNonNegativeFloat = schema.Number(schema.NonNegative)

	evToolTimeSchema = schema.Object(
		schema.Req("start", evFiniteNumber),
		schema.Opt("end", evFiniteNumber),
	)

	// ToolStateSchema is the tool part state shape, discriminated by
	// status; "failed" is accepted as a synonym of "error".
	ToolStateSchema = schema.Discriminated("status", map[string]schema.Node{
		ToolStatusPending: evRequireJSON(schema.Object(
			schema.Req("status", schema.LiteralString(ToolStatusPending)),
			schema.Opt("input", BoundedJSONRecord),
			schema.Opt("raw", BoundedString),
		), "input"),
		ToolStatusRunning: evRequireJSON(schema.Object(
			schema.Req("status", schema.LiteralString(ToolStatusRunning)),
			schema.Opt("input", BoundedJSONRecord),
			schema.Opt("title", BoundedString),
			schema.Opt("metadata", BoundedJSONRecord),
			schema.Opt("time", schema.Object(schema.Req("start", evFiniteNumber))),
		), "input"),
		ToolStatusCompleted: evRequireJSON(schema.Object(
			schema.Req("status", schema.LiteralString(ToolStatusCompleted)),
			schema.Opt("input", BoundedJSONRecord),
			schema.Opt("output", BoundedJSON),
			schema.Opt("title", BoundedString),
			schema.Opt("metadata", BoundedJSONRecord),
			schema.Opt("time", schema.Object(schema.Req("start", evFiniteNumber), schema.Req("end", evFiniteNumber))),
		), "input", "output"),
		ToolStatusError:  evToolErrorState,
		ToolStatusFailed: evToolErrorState,
	})

	evToolErrorState = evRequireJSON(schema.Object(
		schema.Req("status", schema.Enum(ToolStatusError, ToolStatusFailed)),
		schema.Opt("input", BoundedJSONRecord),
		schema.Opt("error", BoundedString),
		schema.Opt("output", BoundedJSON),
		schema.Opt("metadata", BoundedJSONRecord),
		schema.Opt("time", evToolTimeSchema),
	), "input")

	// PartSchema is the shape of a runner-reported message part,
	// discriminated by type.
	PartSchema = schema.Discriminated("type", map[string]schema.Node{
		PartTypeText: evPart(PartTypeText, schema.Req("text", BoundedString)),
		PartTypeTool: evPart(PartTypeTool,
			schema.Opt("callID", BoundedIdentifier),
			schema.Req("tool", BoundedIdentifier),
			schema.Req("state", ToolStateSchema),
			schema.Opt("metadata", BoundedJSONRecord),
		),
		PartTypeReasoning: evPart(PartTypeReasoning, schema.Req("text", BoundedString)),
		PartTypeFile: evPart(PartTypeFile,
			schema.Opt("filename", BoundedString),
			schema.Opt("mediaType", BoundedString),
			schema.Opt("url", BoundedString),
		),
		PartTypeSubtask: evPart(PartTypeSubtask,
			schema.Req("prompt", BoundedString),
			schema.Req("description", BoundedString),
			schema.Req("agent", BoundedIdentifier),
		),
	})

	// CanonicalStreamEventSchema validates every variant of the canonical
	// stream event union, discriminated by type.
	CanonicalStreamEventSchema = schema.Discriminated("type", map[string]schema.Node{
		EventTypeMessagePartUpdated: evVariant(EventTypeMessagePartUpdated,
			schema.Req("part", PartSchema),
			schema.Opt("delta", BoundedString),
		),
		EventTypeToolHeartbeat: evVariant(EventTypeToolHeartbeat,
			schema.Req("toolName", BoundedIdentifier),
			schema.Req("partId", BoundedIdentifier),
			schema.Req("elapsedMs", evNonNegativeFloat),
		),
		EventTypeToolSlow: evVariant(EventTypeToolSlow,
			schema.Req("toolName", BoundedIdentifier),
			schema.Req("partId", BoundedIdentifier),
			schema.Req("elapsedMs", evNonNegativeFloat),
			schema.Req("thresholdMs", evNonNegativeFloat),
		),
		EventTypeModelProcessing: evVariant(EventTypeModelProcessing,
			schema.Req("phase", schema.Enum(ModelPhaseToolResult, ModelPhaseGenerating, ModelPhaseThinking)),
			schema.Opt("toolName", BoundedIdentifier),
			schema.Opt("elapsedMs", evNonNegativeFloat),
		),
		EventTypeStatus: evVariant(EventTypeStatus,
			schema.Req("status", schema.Enum(StreamStatusStarted, StreamStatusProcessing, StreamStatusCompleted,
				StreamStatusFailed, StreamStatusCancelled)),
			schema.Opt("detail", BoundedString),
		),
		EventTypeWarning: evVariant(EventTypeWarning,
			schema.Req("code", BoundedIdentifier),
			schema.Req("message", BoundedString),
		),
		EventTypeRaw: evRequireJSON(evVariant(EventTypeRaw,
			schema.Req("backend", BoundedIdentifier),
			schema.Opt("event", BoundedJSON),
		), "event"),
		EventTypeNativeSessionObserved: NativeSessionObservedEventSchema,
		EventTypeSessionUpdated: evVariant(EventTypeSessionUpdated,
			schema.Req("sessionId", BoundedIdentifier),
			schema.Opt("title", BoundedString),
			schema.Opt("time", schema.Object(
				schema.Opt("created", evFiniteNumber),
				schema.Opt("updated", evFiniteNumber),
			)),
		),
		EventTypeInteraction: evVariant(EventTypeInteraction,
			schema.Req("request", InteractionRequestSchema),
		),
		EventTypeInteractionCancel: evVariant(EventTypeInteractionCancel,
			schema.Req("id", BoundedIdentifier),
			schema.Opt("reason", BoundedString),
		),
		EventTypePlanSubmitted: evVariant(EventTypePlanSubmitted,
			schema.Req("plan", DurablePlanSchema),
		),
		EventTypeChildTask: ChildTaskEventSchema,
	})
)

// evPart is a strict part object of type t with the shared identity
// members and fields.
func evPart(t string, fields ...schema.Field) *schema.ObjectNode {
	return schema.Object(append([]schema.Field{
		schema.Req("id", BoundedIdentifier),
		schema.Req("sessionID", BoundedIdentifier),
		schema.Req("messageID", BoundedIdentifier),
		schema.Req("type", schema.LiteralString(t)),
	}, fields...)...)
}

// evRequireJSON makes the named members of o, which o declares optional,
// required the way the contract requires a bounded-JSON member: a missing
// member is a failed check at its path, not a shape error, so the
// refinements of enclosing objects still run and an enclosing union still
// counts the shape as matched. (A local facility: a "required, checked
// only" field belongs in schema.)
func evRequireJSON(o *schema.ObjectNode, names ...string) schema.Node {
	return schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		out := o.Check(c, v)
		if v.Kind() == canonjson.Object {
			for _, name := range names {
				if _, ok := v.Get(name); !ok {
					c.Custom("is required", name)
				}
			}
		}
		return out
	})
}

// evVariant is a strict stream event object of type t with fields.
func evVariant(t string, fields ...schema.Field) *schema.ObjectNode {
	return schema.Object(append([]schema.Field{schema.Req("type", schema.LiteralString(t))}, fields...)...)
}

// ParseStreamEvent decodes and validates one canonical stream event.
func ParseStreamEvent(data []byte) (*StreamEvent, error) {
	return Parse[StreamEvent](KindCanonicalStreamEvent, CanonicalStreamEventSchema, data)
}

// ParsePart decodes and validates one runner-reported message part.
func ParsePart(data []byte) (*Part, error) {
	return Parse[Part](KindPart, PartSchema, data)
}
