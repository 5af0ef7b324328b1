package contract

import (
	"github.com/agentrt/agentrt/schema"
)

// Kind name of the runtime event envelope.
const KindEventEnvelope = "RuntimeEventEnvelope"

// EventEnvelope is the ordered, replayable envelope around one canonical
// stream event of a run: the run id, the stable event id, the event's
// sequence number within the run, an optional resume cursor, when the
// event happened (when known) and when the runtime received it. Replaying
// a run yields the same envelopes (ids, sequence, cursor).
type EventEnvelope struct {
	RunID      string      `json:"runId"`
	EventID    string      `json:"eventId"`
	Sequence   int64       `json:"sequence"`
	Cursor     *string     `json:"cursor,omitzero"`
	OccurredAt *string     `json:"occurredAt,omitzero"`
	ReceivedAt string      `json:"receivedAt"`
	Event      StreamEvent `json:"event"`
}

var (
	evEnvelopeTimestamp = schema.String(schema.ISODateTime, schema.MaxLen(64))

	// EventEnvelopeSchema is the strict RuntimeEventEnvelope shape; its
	// event is validated as any canonical stream event variant.
	EventEnvelopeSchema = schema.Object(
		schema.Req("runId", BoundedIdentifier),
		schema.Req("eventId", BoundedIdentifier),
		schema.Req("sequence", schema.Number(schema.Int, schema.NonNegative, schema.Max(1<<53-1))),
		schema.Opt("cursor", BoundedIdentifier),
		schema.Opt("occurredAt", evEnvelopeTimestamp),
		schema.Req("receivedAt", evEnvelopeTimestamp),
		schema.Req("event", CanonicalStreamEventSchema),
	)
)

// ParseEventEnvelope decodes and validates one runtime event envelope.
func ParseEventEnvelope(data []byte) (*EventEnvelope, error) {
	return Parse[EventEnvelope](KindEventEnvelope, EventEnvelopeSchema, data)
}

// Terminal reports whether the enveloped event ends its run, and how.
func (e *EventEnvelope) Terminal() (TerminalKind, bool) { return EventTerminal(e.Event) }

// Private reports whether the enveloped event must never appear on a
// public stream.
func (e *EventEnvelope) Private() bool { return IsPrivateEvent(e.Event) }
