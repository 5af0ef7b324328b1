package contract

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// NativeSessionReporter is a session (a detached run's, opened by
// SessionOpener) that tells its execution owner the provider's own
// conversation identity of the run it is bound to (NSO-01): the detached
// counterpart of OwnedStreamer's private native.session.observed event.
// ok is false while the provider has observed none. The owner binds it
// to its execution (NSO-02) and never forwards it (NSO-03).
type NativeSessionReporter interface {
	ObservedNativeSession(ctx context.Context) (obs *NativeSessionObserved, ok bool, err error)
}

// Kind name of the native session observation.
const KindNativeSessionObservedEvent = "NativeSessionObservedEvent"

// MaxNativeSessionIDLength bounds a native session id, in UTF-16 units.
const MaxNativeSessionIDLength = 512

// NativeSessionObserved is an adapter's private observation of the
// provider's own conversation (resume) identity: Provider names the
// provider and NativeSessionID is the id the adapter obtained from its
// bound provider process or API. Caller keys, execution ids, storage paths
// and public session.updated events are not evidence of it.
//
// The execution owner binds the observation to its own execution and keeps
// it private: it never appears on a public stream (see IsPrivateEvent).
// Native identity says nothing about whether native artifacts were
// captured completely.
type NativeSessionObserved struct {
	Provider        string `json:"provider"`
	NativeSessionID string `json:"nativeSessionId"`
}

var (
	// NativeSessionObservedEventSchema is the strict native.session.observed
	// event: a lower-case provider name and a native session id of 1..512
	// units without any whitespace.
	NativeSessionObservedEventSchema = evVariant(EventTypeNativeSessionObserved,
		schema.Req("provider", schema.String(schema.Matches("must be a lower-case provider name", evIsProviderName))),
		schema.Req("nativeSessionId", schema.String(
			schema.MinLen(1),
			schema.MaxLen(MaxNativeSessionIDLength),
			schema.Matches("must not contain whitespace", func(s string) bool {
				return s != "" && !canonjson.ContainsJSWhitespace(s)
			}),
		)),
	)
)

// evIsProviderName reports whether s is a lower-case ASCII letter followed
// by at most 127 lower-case letters, digits or hyphens.
func evIsProviderName(s string) bool {
	if len(s) == 0 || len(s) > 128 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Event returns o as a canonical stream event.
func (o NativeSessionObserved) Event() StreamEvent {
	return StreamEvent{Type: EventTypeNativeSessionObserved, NativeSessionObserved: &o}
}

// NewNativeSessionObserved validates an observation: a malformed provider
// name or a padded, empty or over-long native session id is refused.
func NewNativeSessionObserved(provider, nativeSessionID string) (*NativeSessionObserved, error) {
	e, err := FromValue[StreamEvent](KindNativeSessionObservedEvent, NativeSessionObservedEventSchema,
		canonjson.ObjectValue([]canonjson.Member{
			{Name: "type", Value: canonjson.StringValue(EventTypeNativeSessionObserved)},
			{Name: "provider", Value: canonjson.StringValue(provider)},
			{Name: "nativeSessionId", Value: canonjson.StringValue(nativeSessionID)},
		}))
	if err != nil {
		return nil, err
	}
	return e.NativeSessionObserved, nil
}

// ParseNativeSessionObserved decodes and validates one
// native.session.observed event (with its "type" member).
func ParseNativeSessionObserved(data []byte) (*NativeSessionObserved, error) {
	e, err := Parse[StreamEvent](KindNativeSessionObservedEvent, NativeSessionObservedEventSchema, data)
	if err != nil {
		return nil, err
	}
	return e.NativeSessionObserved, nil
}

// IsPrivateEvent reports whether e must never appear on a public stream
// (public SSE, user-visible event logs): the native.session.observed
// control event, which only the execution owner may see.
func IsPrivateEvent(e StreamEvent) bool {
	return e.Type == EventTypeNativeSessionObserved
}

// IsPrivateEnvironmentEvent reports whether an environment event must
// never appear on a public stream: its provider type or its normalized
// form is the private native session observation.
func IsPrivateEnvironmentEvent(e EnvironmentEvent) bool {
	return e.Type == EventTypeNativeSessionObserved || e.Normalized != nil && IsPrivateEvent(*e.Normalized)
}

// ErrPrivateEvent is returned when a private event is offered to a public
// transport.
var ErrPrivateEvent = errors.New("private native identity event cannot be published on a public stream")

// CheckPublicEvent returns an error wrapping ErrPrivateEvent when e is
// private; a public transport calls it before forwarding an event.
func CheckPublicEvent(e StreamEvent) error {
	if IsPrivateEvent(e) {
		return fmt.Errorf("%w (%s)", ErrPrivateEvent, e.Type)
	}
	return nil
}

// CheckPublicEnvironmentEvent is CheckPublicEvent for an environment
// event.
func CheckPublicEnvironmentEvent(e EnvironmentEvent) error {
	if IsPrivateEnvironmentEvent(e) {
		return fmt.Errorf("%w (%s)", ErrPrivateEvent, e.Type)
	}
	return nil
}

// ObservedNativeSession returns the valid native session observation a
// private environment event carries, in its normalized form or else its
// data, or nil when it carries none: a public event, or a malformed
// observation (NSO-01's strict shape), is none. It is the one reading of
// an observation for every execution owner (the kernel, the sidecar).
func ObservedNativeSession(e EnvironmentEvent) *NativeSessionObserved {
	if !IsPrivateEnvironmentEvent(e) {
		return nil
	}
	provider, id := e.Data["provider"].Str(), e.Data["nativeSessionId"].Str()
	if n := e.Normalized; n != nil && n.NativeSessionObserved != nil {
		provider, id = n.NativeSessionObserved.Provider, n.NativeSessionObserved.NativeSessionID
	}
	obs, err := NewNativeSessionObserved(provider, id)
	if err != nil {
		return nil
	}
	return obs
}
