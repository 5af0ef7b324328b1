package contract

import "github.com/agentrt/agentrt/schema"

// eventKinds lists the wire kinds of canonical stream events and their
// envelope.
func eventKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindCanonicalStreamEvent, Node: CanonicalStreamEventSchema},
		{Name: KindEventEnvelope, Node: EventEnvelopeSchema},
		{Name: KindPart, Node: PartSchema},
		{Name: KindChildTaskEvent, Node: ChildTaskEventSchema},
		{Name: KindNativeSessionObservedEvent, Node: NativeSessionObservedEventSchema},
	}
}
