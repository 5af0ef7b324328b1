package wire

import (
	"bytes"
	"errors"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Routes of detached runs and sessions. {session} is a provider session
// id. Every session route is POST with a body naming the run the caller
// holds (ControlRef): the server opens the session with it on every call
// and holds no session state, so any client (a new process, after the
// old one died) can take control of a run again from its reference.
const (
	// RouteDispatch starts a detached run from a contract.TurnInput and
	// answers its contract.SessionRef.
	RouteDispatch = "/v1/environments/{id}/dispatch"
	// RouteSession opens a session (SessionRequest) and answers Session:
	// the run it is bound to. A reference naming another run of the
	// session is refused with CodeSessionRefused.
	RouteSession = "/v1/environments/{id}/sessions/{session}"
	// RouteSessionStatus answers the bound run's SessionStatus.
	RouteSessionStatus = "/v1/environments/{id}/sessions/{session}/status"
	// RouteSessionEvents streams the session's events
	// (SessionEventsRequest) as SSE. Each event's SSE id is its own
	// stable event id; Last-Event-ID, when sent, replaces Since.
	RouteSessionEvents = "/v1/environments/{id}/sessions/{session}/events"
	// RouteSessionResult answers the bound run's result once it ended
	// (SessionResultRequest, SessionResult).
	RouteSessionResult = "/v1/environments/{id}/sessions/{session}/result"
	// RouteSessionPrompt continues the session with another turn
	// (SessionPromptRequest, PromptResult).
	RouteSessionPrompt = "/v1/environments/{id}/sessions/{session}/prompt"
	// RouteSessionCancel is the legacy best-effort cancel of the bound
	// run (SessionRequest; 204).
	RouteSessionCancel = "/v1/environments/{id}/sessions/{session}/cancel"
	// RouteSessionCancelRun cancels one exact run
	// (SessionCancelRunRequest), answered with the provider's
	// contract.RunCancellationAcknowledgement.
	RouteSessionCancelRun = "/v1/environments/{id}/sessions/{session}/cancel-run"
	// RouteSessionInteractions answers an interaction request through the
	// session (SessionInteractionRequest), answered with the provider's
	// contract.InteractionAcknowledgement.
	RouteSessionInteractions = "/v1/environments/{id}/sessions/{session}/interactions"
	// RouteSessionBoundary observes the bound run's native context
	// boundary (SessionRequest), answered with the provider's
	// contract.NativeContextBoundaryProof (nativeContinuation). It has
	// no effect, so a client re-sends it after a lost answer.
	RouteSessionBoundary = "/v1/environments/{id}/sessions/{session}/boundary"
	// RouteSessionContinue continues the session natively
	// (SessionContinueRequest), answered with the provider's
	// contract.NativeContinuationResult (nativeContinuation). The
	// request's operation id and digest make it idempotent at the
	// provider: a client re-sends it after a lost answer and is answered
	// replayed with the original run, never a second continuation. The
	// server runs it to its end even when the client goes away.
	RouteSessionContinue = "/v1/environments/{id}/sessions/{session}/continue"
)

// MaxResultWaitMs bounds SessionResultRequest.WaitMs.
const MaxResultWaitMs = 120_000

// SessionRequest names the run a session call is about: ControlRef as
// Dispatch or an earlier call returned it; absent means the session's
// latest run.
type SessionRequest struct {
	ControlRef *contract.RunControlRef `json:"controlRef,omitzero"`
}

// Session answers RouteSession: the session's id and the reference of
// the run it is bound to (absent when the provider gives none).
type Session struct {
	ID         string                  `json:"id"`
	ControlRef *contract.RunControlRef `json:"controlRef,omitzero"`
}

// SessionStatus answers RouteSessionStatus; Status is absent when the
// provider cannot tell.
type SessionStatus struct {
	Status *contract.SessionStatus `json:"status,omitzero"`
}

// SessionEventsRequest asks for the session's events after the event id
// Since ("" or absent: from the start) of the execution ExecutionID
// (absent: the bound run's).
type SessionEventsRequest struct {
	ControlRef  *contract.RunControlRef `json:"controlRef,omitzero"`
	Since       *string                 `json:"since,omitzero"`
	ExecutionID *string                 `json:"executionId,omitzero"`
}

// SessionResultRequest asks for the bound run's result, waiting at most
// WaitMs (absent: the server's bound) for the run to end.
type SessionResultRequest struct {
	ControlRef *contract.RunControlRef `json:"controlRef,omitzero"`
	WaitMs     *int64                  `json:"waitMs,omitzero"`
}

// SessionResult answers RouteSessionResult: the result, or Pending when
// the run had not ended within the wait (ask again).
type SessionResult struct {
	Result  *contract.TurnResult `json:"result,omitzero"`
	Pending *bool                `json:"pending,omitzero"`
}

// SessionPromptRequest continues the session with Input.
type SessionPromptRequest struct {
	ControlRef *contract.RunControlRef `json:"controlRef,omitzero"`
	Input      contract.TurnInput      `json:"input"`
}

// PromptResult answers RouteSessionPrompt: the turn's result and the
// reference of the run the session is now bound to.
type PromptResult struct {
	Result     contract.TurnResult     `json:"result"`
	ControlRef *contract.RunControlRef `json:"controlRef,omitzero"`
}

// SessionCancelRunRequest carries a digest-bound cancellation.
type SessionCancelRunRequest struct {
	ControlRef *contract.RunControlRef         `json:"controlRef,omitzero"`
	Request    contract.RunCancellationRequest `json:"request"`
}

// SessionInteractionRequest carries an interaction answer for the
// session's responder.
type SessionInteractionRequest struct {
	ControlRef *contract.RunControlRef             `json:"controlRef,omitzero"`
	Command    contract.InteractionResponseCommand `json:"command"`
}

// SessionContinueRequest carries a native continuation: the
// digest-bound request and the exact turn its turnDigest names (the
// request carries only the digest).
type SessionContinueRequest struct {
	ControlRef *contract.RunControlRef                   `json:"controlRef,omitzero"`
	Request    contract.NativeContextContinuationRequest `json:"request"`
	Turn       contract.NativeContextContinuationTurn    `json:"turn"`
}

// Kind names of the session bodies, for errors.
const (
	KindSessionContinueRequest    = "SidecarSessionContinueRequest"
	KindSessionRequest            = "SidecarSessionRequest"
	KindSession                   = "SidecarSession"
	KindSessionStatus             = "SidecarSessionStatus"
	KindSessionEventsRequest      = "SidecarSessionEventsRequest"
	KindSessionResultRequest      = "SidecarSessionResultRequest"
	KindSessionResult             = "SidecarSessionResult"
	KindSessionPromptRequest      = "SidecarSessionPromptRequest"
	KindPromptResult              = "SidecarPromptResult"
	KindSessionCancelRunRequest   = "SidecarSessionCancelRunRequest"
	KindSessionInteractionRequest = "SidecarSessionInteractionRequest"
)

var (
	controlRefField = schema.Opt("controlRef", contract.RunControlRefSchema)

	// SessionRequestSchema is the strict SessionRequest shape.
	SessionRequestSchema = schema.Object(controlRefField)
	// SessionSchema is the strict Session shape.
	SessionSchema = schema.Object(schema.Req("id", contract.BoundedIdentifier), controlRefField)
	// SessionStatusSchema is the strict SessionStatus shape.
	SessionStatusSchema = schema.Object(schema.Opt("status", contract.SessionStatusSchema))
	// SessionEventsRequestSchema is the strict SessionEventsRequest shape.
	SessionEventsRequestSchema = schema.Object(controlRefField,
		schema.Opt("since", contract.BoundedIdentifier),
		schema.Opt("executionId", contract.BoundedIdentifier))
	// SessionResultRequestSchema is the strict SessionResultRequest shape.
	SessionResultRequestSchema = schema.Object(controlRefField,
		schema.Opt("waitMs", schema.Number(schema.Int, schema.NonNegative, schema.Max(MaxResultWaitMs))))
	// SessionResultSchema is the strict SessionResult shape: exactly one
	// of result and pending (true).
	SessionResultSchema = schema.Object(
		schema.Opt("result", contract.TurnResultSchema),
		schema.Opt("pending", schema.Bool()),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		_, hasResult := v.Get("result")
		pending, hasPending := v.Get("pending")
		if hasResult == hasPending || hasPending && !pending.Bool() {
			c.Custom("a session result carries either its result or pending: true")
		}
	})
	// SessionPromptRequestSchema is the strict SessionPromptRequest shape.
	SessionPromptRequestSchema = schema.Object(controlRefField, schema.Req("input", contract.TurnInputSchema))
	// PromptResultSchema is the strict PromptResult shape.
	PromptResultSchema = schema.Object(schema.Req("result", contract.TurnResultSchema), controlRefField)
	// SessionCancelRunRequestSchema is the strict SessionCancelRunRequest
	// shape; the cancellation's digest must match its content.
	SessionCancelRunRequestSchema = schema.Object(controlRefField, schema.Req("request", contract.RunCancellationRequestSchema))
	// SessionInteractionRequestSchema is the strict
	// SessionInteractionRequest shape.
	SessionInteractionRequestSchema = schema.Object(controlRefField, schema.Req("command", contract.InteractionResponseCommandSchema))
	// SessionContinueRequestSchema is the strict SessionContinueRequest
	// shape; the request's digest must match its content.
	SessionContinueRequestSchema = schema.Object(controlRefField,
		schema.Req("request", contract.NativeContextContinuationRequestSchema),
		schema.Req("turn", contract.NativeContextContinuationTurnSchema))
)

// ParseSessionContinueRequest decodes a native continuation body.
func ParseSessionContinueRequest(data []byte) (*SessionContinueRequest, error) {
	return parse[SessionContinueRequest](KindSessionContinueRequest, SessionContinueRequestSchema, data)
}

// ParseNativeContextBoundaryProof decodes a boundary answer.
func ParseNativeContextBoundaryProof(data []byte) (*contract.NativeContextBoundaryProof, error) {
	return parse[contract.NativeContextBoundaryProof](contract.KindNativeContextBoundaryProof, contract.NativeContextBoundaryProofSchema, data)
}

// ParseNativeContinuationResult decodes a native continuation answer.
func ParseNativeContinuationResult(data []byte) (*contract.NativeContinuationResult, error) {
	return parse[contract.NativeContinuationResult](contract.KindNativeContinuationResult, contract.NativeContinuationResultSchema, data)
}

// ParseTurnInput decodes a dispatch body.
func ParseTurnInput(data []byte) (*contract.TurnInput, error) {
	return parse[contract.TurnInput](contract.KindTurnInput, contract.TurnInputSchema, data)
}

// ParseSessionRef decodes a dispatch answer.
func ParseSessionRef(data []byte) (*contract.SessionRef, error) {
	return parse[contract.SessionRef](contract.KindSessionRef, contract.SessionRefSchema, data)
}

// ParseSessionRequest decodes an open, status or cancel body.
func ParseSessionRequest(data []byte) (*SessionRequest, error) {
	return parse[SessionRequest](KindSessionRequest, SessionRequestSchema, data)
}

// ParseSession decodes an open answer.
func ParseSession(data []byte) (*Session, error) {
	return parse[Session](KindSession, SessionSchema, data)
}

// ParseSessionStatus decodes a status answer.
func ParseSessionStatus(data []byte) (*SessionStatus, error) {
	return parse[SessionStatus](KindSessionStatus, SessionStatusSchema, data)
}

// ParseSessionEventsRequest decodes an events body.
func ParseSessionEventsRequest(data []byte) (*SessionEventsRequest, error) {
	return parse[SessionEventsRequest](KindSessionEventsRequest, SessionEventsRequestSchema, data)
}

// ParseSessionResultRequest decodes a result body.
func ParseSessionResultRequest(data []byte) (*SessionResultRequest, error) {
	return parse[SessionResultRequest](KindSessionResultRequest, SessionResultRequestSchema, data)
}

// ParseSessionResult decodes a result answer.
func ParseSessionResult(data []byte) (*SessionResult, error) {
	return parse[SessionResult](KindSessionResult, SessionResultSchema, data)
}

// ParseSessionPromptRequest decodes a prompt body.
func ParseSessionPromptRequest(data []byte) (*SessionPromptRequest, error) {
	return parse[SessionPromptRequest](KindSessionPromptRequest, SessionPromptRequestSchema, data)
}

// ParsePromptResult decodes a prompt answer.
func ParsePromptResult(data []byte) (*PromptResult, error) {
	return parse[PromptResult](KindPromptResult, PromptResultSchema, data)
}

// ParseSessionCancelRunRequest decodes a cancel-run body.
func ParseSessionCancelRunRequest(data []byte) (*SessionCancelRunRequest, error) {
	return parse[SessionCancelRunRequest](KindSessionCancelRunRequest, SessionCancelRunRequestSchema, data)
}

// ParseRunCancellationAcknowledgement decodes a cancel-run answer.
func ParseRunCancellationAcknowledgement(data []byte) (*contract.RunCancellationAcknowledgement, error) {
	return parse[contract.RunCancellationAcknowledgement](contract.KindRunCancellationAcknowledgement, contract.RunCancellationAcknowledgementSchema, data)
}

// ParseSessionInteractionRequest decodes a session interaction body.
func ParseSessionInteractionRequest(data []byte) (*SessionInteractionRequest, error) {
	return parse[SessionInteractionRequest](KindSessionInteractionRequest, SessionInteractionRequestSchema, data)
}

// ErrSSEID is returned by AppendSSEID for an id a frame cannot carry.
var ErrSSEID = errors.New("sse: an event id contains a line break or NUL")

// SSEIDSafe reports whether id can be an SSE id line and a Last-Event-ID
// header value unchanged: no line break, no NUL, no outer space.
func SSEIDSafe(id string) bool {
	return id != "" && !strings.ContainsAny(id, "\r\n\x00") && strings.TrimSpace(id) == id
}

// AppendSSEID appends one event frame whose id is an opaque string (a
// session event's own id); an id that is not SSEIDSafe is refused, and
// "" frames the event without an id.
func AppendSSEID(b []byte, id, event string, data []byte) ([]byte, error) {
	if id != "" && !SSEIDSafe(id) {
		return b, ErrSSEID
	}
	if bytes.ContainsAny(data, "\r\n") || strings.ContainsAny(event, "\r\n") {
		return b, errSSELineBreak
	}
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	return AppendSSE(b, 0, event, data)
}
