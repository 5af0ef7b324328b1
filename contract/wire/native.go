package wire

import (
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// TurnNativeSession answers GET RouteTurnNativeSession: the native
// session observation of an ended turn (NSO-02), read by the turn's
// execution owner (providers/remote) after the turn's terminal event.
// Observation is absent when the turn observed none: the native
// session is unknown, never empty.
type TurnNativeSession struct {
	TurnID      string                          `json:"turnId"`
	Observation *contract.NativeSessionObserved `json:"observation,omitzero"`
}

// KindTurnNativeSession names TurnNativeSession in errors.
const KindTurnNativeSession = "SidecarTurnNativeSession"

// MaxTurnNativeSessionBytes bounds a TurnNativeSession body: a turn id
// and one observation (a provider name and an id of at most
// contract.MaxNativeSessionIDLength UTF-16 units, each up to six bytes
// escaped) fit in far less.
const MaxTurnNativeSessionBytes = 16 << 10

// TurnNativeSessionSchema is the strict TurnNativeSession shape; its
// observation is checked by the contract's own rule for a
// native.session.observed event (without its "type" member).
var TurnNativeSessionSchema = schema.Object(
	schema.Req("turnId", contract.BoundedIdentifier),
	schema.Opt("observation", contract.NativeSessionObservedEventSchema.Omit("type")),
)

// ParseTurnNativeSession decodes a native session answer strictly,
// refusing a body over MaxTurnNativeSessionBytes.
func ParseTurnNativeSession(data []byte) (*TurnNativeSession, error) {
	return parseWithin[TurnNativeSession](KindTurnNativeSession, TurnNativeSessionSchema, data, MaxTurnNativeSessionBytes)
}

// RouteSessionNativeSession is POST (a SessionRequest): the native
// session of the run a detached session is bound to (a
// SessionNativeSession), for the run's execution owner (NSO-01/NSO-02:
// the detached counterpart of RouteTurnNativeSession, which the turn's
// owner asks). It is never on the session's public events (NSO-03).
const RouteSessionNativeSession = "/v1/environments/{id}/sessions/{session}/native-session"

// SessionNativeSession answers RouteSessionNativeSession. Observation
// is absent while the provider has observed none (or cannot tell): the
// native session is unknown, never empty.
type SessionNativeSession struct {
	Observation *contract.NativeSessionObserved `json:"observation,omitzero"`
}

// KindSessionNativeSession names SessionNativeSession in errors.
const KindSessionNativeSession = "SidecarSessionNativeSession"

// SessionNativeSessionSchema is the strict SessionNativeSession shape;
// its observation is checked by the contract's rule for a
// native.session.observed event (without its "type" member).
var SessionNativeSessionSchema = schema.Object(
	schema.Opt("observation", contract.NativeSessionObservedEventSchema.Omit("type")),
)

// ParseSessionNativeSession decodes a session's native session answer
// strictly, refusing a body over MaxTurnNativeSessionBytes.
func ParseSessionNativeSession(data []byte) (*SessionNativeSession, error) {
	return parseWithin[SessionNativeSession](KindSessionNativeSession, SessionNativeSessionSchema, data, MaxTurnNativeSessionBytes)
}
