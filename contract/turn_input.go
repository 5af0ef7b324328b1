package contract

import (
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of turns.
const (
	KindTurnInput        = "AgentTurnInput"
	KindTurnResult       = "AgentTurnResult"
	KindEnvironmentEvent = "AgentEnvironmentEvent"
)

// TurnInput is one turn a caller sends to an environment.
//
// Profile, when present, is the exact agent profile for this turn: a
// provider honors it or refuses the turn before dispatch, and callers must
// not assume every provider supports per-turn profile changes. Mounted
// resources and behavior travel here, never in ProviderOptions, which is
// bounded metadata. Interactions is the per-turn interaction posture (nil
// leaves provider defaults; an empty map enables no interaction kind).
// ControlRef names an existing retained run; ContextTransfer carries
// approved portable history into a fresh session; NativeContinuation is a
// verified same-session continuation that never carries duplicate
// history. Cancellation is the caller's context, never part of the wire
// value.
type TurnInput struct {
	Profile            *profile.Profile                  `json:"profile,omitzero"`
	Prompt             *string                           `json:"prompt,omitzero"`
	Parts              []InputPart                       `json:"parts,omitzero"`
	SessionID          *string                           `json:"sessionId,omitzero"`
	Model              *string                           `json:"model,omitzero"`
	TimeoutMs          *int64                            `json:"timeoutMs,omitzero"`
	ExecutionID        *string                           `json:"executionId,omitzero"`
	LastEventID        *string                           `json:"lastEventId,omitzero"`
	TurnID             *string                           `json:"turnId,omitzero"`
	Detach             *bool                             `json:"detach,omitzero"`
	ControlRef         *RunControlRef                    `json:"controlRef,omitzero"`
	ContextTransfer    *ContextTransferRequest           `json:"contextTransfer,omitzero"`
	NativeContinuation *NativeContextContinuationRequest `json:"nativeContinuation,omitzero"`
	Context            map[string]canonjson.Value        `json:"context,omitzero"`
	Interactions       RequestedInteractions             `json:"interactions,omitzero"`
	ProviderOptions    map[string]canonjson.Value        `json:"providerOptions,omitzero"`
	// Credential is the seat stage's credential request (nil without
	// seats). It is not part of the input's canonical form.
	Credential *CredentialRequest `json:"-"`
}

// TurnResult is the outcome of one turn: the final text, whether the turn
// succeeded, an error message, the provider session, the turn's usage
// (absent when not reported, never zero-filled), metadata, the turn's
// events, and, for a turn that admitted portable context, its receipt.
type TurnResult struct {
	Text                   string                     `json:"text"`
	Success                bool                       `json:"success"`
	Error                  *string                    `json:"error,omitzero"`
	SessionID              *string                    `json:"sessionId,omitzero"`
	Usage                  *TokenUsage                `json:"usage,omitzero"`
	Metadata               map[string]canonjson.Value `json:"metadata,omitzero"`
	Events                 []EnvironmentEvent         `json:"events,omitzero"`
	ContextTransferReceipt *ContextTransferReceipt    `json:"contextTransferReceipt,omitzero"`
}

// UsageMode says how an event's token usage aggregates within one turn.
// The empty mode (absent on the wire) means the aggregation semantics are
// unknown.
type UsageMode string

// Usage modes. A delta contributes new usage; a cumulative total includes
// every earlier contribution of the turn and replaces the prior turn total,
// so repeating it adds no spend.
const (
	UsageDelta      UsageMode = "delta"
	UsageCumulative UsageMode = "cumulative"
)

// Known reports whether m is a usage mode of the contract.
func (m UsageMode) Known() bool { return m == UsageDelta || m == UsageCumulative }

// EnvironmentEvent is one event a provider streams for a turn: Type is the
// provider-native type, Data its bounded payload, ID a stable id (needed
// for replay), Normalized the canonical stream event when the adapter can
// map it, Usage the token usage it reports with UsageMode saying how that
// usage aggregates, and ProviderEvent the untouched provider event.
type EnvironmentEvent struct {
	Type          string                     `json:"type"`
	Data          map[string]canonjson.Value `json:"data"`
	ID            *string                    `json:"id,omitzero"`
	Normalized    *StreamEvent               `json:"normalized,omitzero"`
	Usage         *TokenUsage                `json:"usage,omitzero"`
	UsageMode     UsageMode                  `json:"usageMode,omitzero"`
	ProviderEvent canonjson.Value            `json:"providerEvent,omitzero"`
}

// UsageReport returns the event's usage and how it aggregates; ok is false
// when the event reports no usage. An empty mode means unknown
// aggregation: the usage must not be summed blindly.
func (e EnvironmentEvent) UsageReport() (usage *TokenUsage, mode UsageMode, ok bool) {
	if e.Usage == nil {
		return nil, "", false
	}
	return e.Usage, e.UsageMode, true
}

var (
	// EnvironmentEventSchema is the strict AgentEnvironmentEvent shape.
	EnvironmentEventSchema = evRequireJSON(schema.Object(
		schema.Req("type", BoundedIdentifier),
		schema.Opt("data", BoundedJSONRecord),
		schema.Opt("id", BoundedIdentifier),
		schema.Opt("normalized", CanonicalStreamEventSchema),
		schema.Opt("usage", TokenUsageSchema),
		schema.Opt("usageMode", schema.Enum(string(UsageDelta), string(UsageCumulative))),
		schema.Opt("providerEvent", BoundedJSON),
	), "data")

	// TurnInputSchema is the strict AgentTurnInput shape. The profile is
	// validated by the canonical profile schema.
	TurnInputSchema = schema.Object(
		schema.Opt("profile", profile.Schema),
		schema.Opt("prompt", BoundedString),
		schema.Opt("parts", schema.Array(InputPartSchema).MaxItems(MaxArrayLength)),
		schema.Opt("sessionId", BoundedIdentifier),
		schema.Opt("model", BoundedIdentifier),
		schema.Opt("timeoutMs", schema.Number(schema.Int, schema.Positive, schema.Max(1<<53-1))),
		schema.Opt("executionId", BoundedIdentifier),
		schema.Opt("lastEventId", BoundedIdentifier),
		schema.Opt("turnId", BoundedIdentifier),
		schema.Opt("detach", schema.Bool()),
		schema.Opt("controlRef", RunControlRefSchema),
		schema.Opt("contextTransfer", ContextTransferRequestSchema),
		schema.Opt("nativeContinuation", NativeContextContinuationRequestSchema),
		schema.Opt("context", BoundedJSONRecord),
		schema.Opt("interactions", RequestedInteractionsSchema),
		schema.Opt("providerOptions", BoundedJSONRecord),
	)

	// TurnResultSchema is the strict AgentTurnResult shape.
	TurnResultSchema = schema.Object(
		schema.Req("text", BoundedString),
		schema.Req("success", schema.Bool()),
		schema.Opt("error", BoundedString),
		schema.Opt("sessionId", BoundedIdentifier),
		schema.Opt("usage", TokenUsageSchema),
		schema.Opt("metadata", BoundedJSONRecord),
		schema.Opt("events", schema.Array(EnvironmentEventSchema).MaxItems(MaxArrayLength)),
		schema.Opt("contextTransferReceipt", ContextTransferReceiptSchema),
	)
)

// ParseTurnInput decodes and validates one turn input.
func ParseTurnInput(data []byte) (*TurnInput, error) {
	return Parse[TurnInput](KindTurnInput, TurnInputSchema, data)
}

// ParseTurnResult decodes and validates one turn result.
func ParseTurnResult(data []byte) (*TurnResult, error) {
	return Parse[TurnResult](KindTurnResult, TurnResultSchema, data)
}

// ParseEnvironmentEvent decodes and validates one environment event.
func ParseEnvironmentEvent(data []byte) (*EnvironmentEvent, error) {
	return Parse[EnvironmentEvent](KindEnvironmentEvent, EnvironmentEventSchema, data)
}

// EnvironmentEventTerminal reports whether a provider event ends its turn,
// and how. A normalized status event decides when present. Otherwise the
// provider type does: "result", "done" and "final" end the turn (failed
// when data.status says failed or data.success is false, cancelled when
// data.status says cancelled); a type ending in ".completed", ".failed" or
// ".cancelled" ends it with that outcome; and a "status" event ends it
// when data.status is completed, failed or cancelled. Cancellation is
// never reported as failure.
func EnvironmentEventTerminal(e EnvironmentEvent) (TerminalKind, bool) {
	if e.Normalized != nil {
		if kind, ok := EventTerminal(*e.Normalized); ok {
			return kind, true
		}
	}
	status := ""
	if s, ok := e.Data["status"]; ok && s.Kind() == canonjson.String {
		status = s.Str()
	}
	switch {
	case e.Type == "result" || e.Type == "done" || e.Type == "final":
		if kind, ok := evTerminalStatus(status); ok {
			return kind, true
		}
		if s, ok := e.Data["success"]; ok && s.Kind() == canonjson.Bool && !s.Bool() {
			return TerminalFailed, true
		}
		return TerminalCompleted, true
	case strings.HasSuffix(e.Type, ".completed"):
		return TerminalCompleted, true
	case strings.HasSuffix(e.Type, ".failed"):
		return TerminalFailed, true
	case strings.HasSuffix(e.Type, ".cancelled"):
		return TerminalCancelled, true
	case e.Type == EventTypeStatus:
		return evTerminalStatus(status)
	}
	return "", false
}
