package wire

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Routes. {id} is an environment id, {turn} a turn id chosen by the
// client.
const (
	PathHealth       = "/healthz"
	PathCapabilities = "/v1/capabilities"
	PathEnvironments = "/v1/environments"
	// RouteEnvironment is GET (read) and DELETE (destroy).
	RouteEnvironment = "/v1/environments/{id}"
	// RouteTurns is POST: start (or, for a known turn id with the same
	// input, resume) a turn and stream its events as SSE.
	RouteTurns = "/v1/environments/{id}/turns"
	// RouteTurnEvents is GET: resume a known turn's event stream.
	RouteTurnEvents = "/v1/environments/{id}/turns/{turn}/events"
	// RouteTurnCancel is POST: cancel a turn, acknowledged with its effect.
	RouteTurnCancel = "/v1/environments/{id}/turns/{turn}/cancel"
	// RouteTurnNativeSession is GET: the native session an ended turn
	// observed (a TurnNativeSession), for the turn's execution owner
	// only; the observation never travels on the public event stream
	// (NSO-03). A live turn is answered CodeTurnNotEnded.
	RouteTurnNativeSession = "/v1/environments/{id}/turns/{turn}/native-session"
	// RouteInteractions is POST: answer an interaction request of one of
	// the environment's turns (a contract.InteractionResponseCommand),
	// acknowledged with a contract.InteractionAcknowledgement.
	RouteInteractions = "/v1/environments/{id}/interactions"
	// RouteObservation is GET: the environment's normalized observation
	// (a contract.EnvironmentObservation).
	RouteObservation = "/v1/environments/{id}/observation"
)

// Headers and media types.
const (
	HeaderLastEventID = "Last-Event-ID"
	ContentTypeJSON   = "application/json"
	ContentTypeSSE    = "text/event-stream"
)

// MaxBodyBytes bounds every request and response body and every SSE
// event's data, except the bodies MaxProfileBodyBytes bounds.
const MaxBodyBytes = 1 << 20

// MaxProfileBodyBytes bounds the bodies that carry a whole profile: a
// profile validation request, a create input and a context transfer
// request. The contract sets no
// size limit on an AgentProfile (its JSON limits are not applied to
// profile fields, spec profile.md A.12), so a profile may be larger than
// MaxBodyBytes; the wire still bounds it, at 16 MiB.
const MaxProfileBodyBytes = 16 << 20

// SSE event names. An environment event is an unnamed ("message") event
// whose id is its sequence number; a stream that ends without EventEnd or
// EventError was cut and may be resumed.
const (
	EventError = "error"
	EventEnd   = "end"
)

// Error codes of ErrorBody, each with one HTTP status (Status).
const (
	CodeInvalidRequest      = "invalid_request"
	CodeTooLarge            = "request_too_large"
	CodeUnauthorized        = "unauthorized"
	CodeNotFound            = "not_found"
	CodeMethodNotAllowed    = "method_not_allowed"
	CodeUnsupportedMedia    = "unsupported_media_type"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeTurnConflict        = "turn_conflict"
	CodeCreateInDoubt       = "create_in_doubt"
	// CodeSpawnInDoubt: the exact spawn of this operation id started
	// earlier and the process it started cannot be told (its server
	// died before recording it, or the provider no longer knows it). It
	// is final: no second process is started under the id.
	CodeSpawnInDoubt = "spawn_in_doubt"
	// CodeSessionRefused: the provider refused to open the session with
	// the given reference (no such session, or a reference naming
	// another run). It is final: the same call cannot succeed later.
	CodeSessionRefused = "session_refused"
	CodeResumeGone     = "resume_window_passed"
	// CodeTurnNotEnded: the turn is still live, so what it observed is
	// not settled yet (RouteTurnNativeSession). Ask again once its
	// stream ended.
	CodeTurnNotEnded = "turn_not_ended"
	// CodeFileNotFound: the workspace has no file at the path asked for.
	// It is final (a retry reads the same absence) and matches
	// fs.ErrNotExist, the contract's not-found error for a file.
	CodeFileNotFound = "file_not_found"
	CodeUnsupported  = "unsupported"
	CodeUnavailable  = "unavailable"
	CodeProvider     = "provider_error"
	// CodeQuotaRefused: the provider's account owner refused the stage
	// for quota (a *contract.QuotaRefusalError; ErrorDetail.Quota says
	// more). Nothing was dispatched under it; a seated run moves on to
	// its next authored stage.
	CodeQuotaRefused = "quota_refused"
	CodeInternal     = "internal"
)

var codeStatus = map[string]int{
	CodeInvalidRequest:      400,
	CodeTooLarge:            413,
	CodeUnauthorized:        401,
	CodeNotFound:            404,
	CodeMethodNotAllowed:    405,
	CodeUnsupportedMedia:    415,
	CodeIdempotencyConflict: 409,
	CodeTurnConflict:        409,
	CodeCreateInDoubt:       409,
	CodeSpawnInDoubt:        409,
	CodeSessionRefused:      409,
	CodeResumeGone:          410,
	CodeTurnNotEnded:        409,
	CodeFileNotFound:        404,
	CodeUnsupported:         422,
	CodeUnavailable:         503,
	CodeProvider:            502,
	CodeQuotaRefused:        429,
	CodeInternal:            500,

	CodeDestroyed:             410,
	CodeOutOfScope:            403,
	CodeCreateInput:           400,
	CodeNotCanonical:          400,
	CodeBranchingMaterial:     422,
	CodeLegacyContextTransfer: 422,
	CodeFileTooLarge:          422,
	CodeFileMode:              400,
	CodeObservationCredential: 422,
	CodePrivateEvent:          422,
	CodeCwdBase:               422,
}

// Status is the HTTP status that goes with code (500 for an unknown one).
func Status(code string) int {
	if s, ok := codeStatus[code]; ok {
		return s
	}
	return 500
}

// ErrorBody is every error response: {error:{code,message,path?}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong; Path is the JSON pointer of the
// offending value in the request body, when one is to blame.
type ErrorDetail struct {
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Path    *string `json:"path,omitzero"`
	// Quota is set exactly on a quota_refused error.
	Quota *QuotaDetail `json:"quota,omitzero"`
	// CwdBase is set on a cwd_base_refused error.
	CwdBase *CwdBaseDetail `json:"cwdBase,omitzero"`
	// FileTooLarge is set on a file_too_large error.
	FileTooLarge *FileTooLargeDetail `json:"fileTooLarge,omitzero"`
}

// Error is an ErrorBody received (or about to be sent) as a Go error.
type Error struct {
	Status int
	ErrorDetail
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s (%d): %s", e.Code, e.Status, e.Message)
	if e.Path != nil {
		msg += " at " + *e.Path
	}
	return msg
}

// HTTPStatus is the status the server answered with: what a caller
// reporting a transport failure names (taskstream's backend_error).
func (e *Error) HTTPStatus() int { return e.Status }

// Is maps wire codes onto the contract's sentinel errors, so a client's
// caller matches a remote refusal as it would a local one.
func (e *Error) Is(target error) bool {
	if target == ErrNotFound {
		return e.Code == CodeNotFound
	}
	for _, r := range refusals {
		if r.code == e.Code {
			return target == r.err
		}
	}
	return false
}

// As lets errors.As find the typed contract error a refusal stands for:
// the *contract.QuotaRefusalError of a quota_refused answer (so a seated
// run sees a served provider's quota refusal as it would a local one),
// the *contract.CwdBaseError of a cwd_base_refused one and the
// *contract.FileTooLargeError of a file_too_large one.
func (e *Error) As(target any) bool {
	switch t := target.(type) {
	case **contract.QuotaRefusalError:
		if e.Code != CodeQuotaRefused {
			return false
		}
		*t = e.quotaRefusal()
		return true
	case **contract.CwdBaseError:
		if e.Code != CodeCwdBase || e.CwdBase == nil {
			return false
		}
		*t = &contract.CwdBaseError{Label: e.CwdBase.Label, Want: e.CwdBase.Want, Got: e.CwdBase.Got}
		return true
	case **contract.FileTooLargeError:
		if e.Code != CodeFileTooLarge || e.FileTooLarge == nil {
			return false
		}
		d := e.FileTooLarge
		*t = &contract.FileTooLargeError{Path: d.Path, Size: -1, MaxBytes: d.MaxBytes}
		if d.Size != nil {
			(*t).Size = *d.Size
		}
		return true
	}
	return false
}

// ErrNotFound is matched by a not_found error.
var ErrNotFound = errors.New("not found")

// Capabilities is GET /v1/capabilities: the served provider's name and
// the capability document of what the server serves.
type Capabilities struct {
	Provider     string                `json:"provider"`
	Capabilities contract.Capabilities `json:"capabilities"`
}

// Environment is one environment as the server describes it.
type Environment struct {
	ID           string                     `json:"id"`
	Provider     string                     `json:"provider"`
	Name         string                     `json:"name"`
	Status       contract.EnvironmentStatus `json:"status,omitzero"`
	Metadata     map[string]canonjson.Value `json:"metadata,omitzero"`
	Capabilities *contract.Capabilities     `json:"capabilities,omitzero"`
}

// CreateResult answers POST /v1/environments (201 created, 200 replayed).
type CreateResult struct {
	Environment Environment       `json:"environment"`
	Creation    contract.Creation `json:"creation,omitzero"`
}

// TurnRequest is POST /v1/environments/{id}/turns. TurnID is the
// client's: sending the same id and input again resumes the turn (after
// Last-Event-ID) instead of starting a second one.
type TurnRequest struct {
	TurnID string             `json:"turnId"`
	Input  contract.TurnInput `json:"input"`
}

// CancelRequest is POST /v1/environments/{id}/turns/{turn}/cancel. The
// same OperationID sent again is acknowledged as replayed.
type CancelRequest struct {
	OperationID string  `json:"operationId"`
	Reason      *string `json:"reason,omitzero"`
}

// CancelAcknowledgement answers a cancel with the contract's statuses
// (accepted, replayed) and effects (cancel_requested, not_live).
type CancelAcknowledgement struct {
	OperationID string `json:"operationId"`
	TurnID      string `json:"turnId"`
	Status      string `json:"status"`
	Effect      string `json:"effect"`
}

// Health is GET /healthz.
type Health struct {
	Status string `json:"status"`
}

// Kind names, for errors.
const (
	KindErrorBody             = "SidecarErrorBody"
	KindCapabilities          = "SidecarCapabilities"
	KindEnvironment           = "SidecarEnvironment"
	KindCreateResult          = "SidecarCreateResult"
	KindTurnRequest           = "SidecarTurnRequest"
	KindCancelRequest         = "SidecarCancelRequest"
	KindCancelAcknowledgement = "SidecarCancelAcknowledgement"
	KindHealth                = "SidecarHealth"
)

var (
	errorDetailSchema = schema.Object(
		schema.Req("code", contract.BoundedIdentifier),
		schema.Req("message", contract.BoundedString),
		schema.Opt("path", contract.BoundedString),
		schema.Opt("quota", quotaDetailSchema),
		schema.Opt("cwdBase", cwdBaseDetailSchema),
		schema.Opt("fileTooLarge", fileTooLargeDetailSchema),
	)
	// ErrorBodySchema is the strict ErrorBody shape.
	ErrorBodySchema = schema.Object(schema.Req("error", errorDetailSchema))
	// CapabilitiesResponseSchema is the strict Capabilities shape.
	CapabilitiesResponseSchema = schema.Object(
		schema.Req("provider", contract.BoundedIdentifier),
		schema.Req("capabilities", contract.CapabilitiesSchema),
	)
	// EnvironmentSchema is the strict Environment shape.
	EnvironmentSchema = schema.Object(
		schema.Req("id", contract.BoundedIdentifier),
		schema.Req("provider", contract.BoundedIdentifier),
		schema.Req("name", contract.BoundedString),
		schema.Opt("status", contract.EnvironmentStatusSchema),
		schema.Opt("metadata", contract.BoundedJSONRecord),
		schema.Opt("capabilities", contract.CapabilitiesSchema),
	)
	// CreateResultSchema is the strict CreateResult shape.
	CreateResultSchema = schema.Object(
		schema.Req("environment", EnvironmentSchema),
		schema.Opt("creation", schema.Enum(string(contract.CreationCreated), string(contract.CreationReplayed))),
	)
	// TurnRequestSchema is the strict TurnRequest shape.
	TurnRequestSchema = schema.Object(
		schema.Req("turnId", contract.BoundedIdentifier),
		schema.Req("input", contract.TurnInputSchema),
	)
	// CancelRequestSchema is the strict CancelRequest shape.
	CancelRequestSchema = schema.Object(
		schema.Req("operationId", contract.BoundedIdentifier),
		schema.Opt("reason", schema.String(schema.MinLen(1), schema.MaxLen(2048))),
	)
	// CancelAcknowledgementSchema is the strict CancelAcknowledgement shape.
	CancelAcknowledgementSchema = schema.Object(
		schema.Req("operationId", contract.BoundedIdentifier),
		schema.Req("turnId", contract.BoundedIdentifier),
		schema.Req("status", schema.Enum(contract.StatusAccepted, contract.StatusReplayed)),
		schema.Req("effect", schema.Enum(contract.EffectCancelRequested, contract.EffectNotLive)),
	)
	// HealthSchema is the strict Health shape.
	HealthSchema = schema.Object(schema.Req("status", schema.Enum("ok")))
)

// parse refuses a body over MaxBodyBytes, then decodes it strictly
// against node. Every refusal is a *schema.Error with JSON-pointer paths.
func parse[T any](kind string, node schema.Node, data []byte) (*T, error) {
	return parseWithin[T](kind, node, data, MaxBodyBytes)
}

// parseWithin is parse with the body limit max.
func parseWithin[T any](kind string, node schema.Node, data []byte, max int) (*T, error) {
	if len(data) > max {
		return nil, &schema.Error{Kind: kind, Issues: []schema.Issue{{Code: schema.CodeTooBig,
			Message: fmt.Sprintf("the body is larger than %d bytes", max)}}}
	}
	return contract.Parse[T](kind, node, data)
}

// ParseCreateInput decodes a create request body (at most
// MaxProfileBodyBytes: it may carry an inline profile).
func ParseCreateInput(data []byte) (*contract.CreateInput, error) {
	return parseWithin[contract.CreateInput](contract.KindCreateInput, contract.CreateInputSchema, data, MaxProfileBodyBytes)
}

// ParseTurnRequest decodes a turn request body.
func ParseTurnRequest(data []byte) (*TurnRequest, error) {
	return parse[TurnRequest](KindTurnRequest, TurnRequestSchema, data)
}

// ParseCancelRequest decodes a cancel request body.
func ParseCancelRequest(data []byte) (*CancelRequest, error) {
	return parse[CancelRequest](KindCancelRequest, CancelRequestSchema, data)
}

// ParseCapabilities decodes a capabilities response.
func ParseCapabilities(data []byte) (*Capabilities, error) {
	return parse[Capabilities](KindCapabilities, CapabilitiesResponseSchema, data)
}

// ParseEnvironment decodes an environment response.
func ParseEnvironment(data []byte) (*Environment, error) {
	return parse[Environment](KindEnvironment, EnvironmentSchema, data)
}

// ParseCreateResult decodes a create response.
func ParseCreateResult(data []byte) (*CreateResult, error) {
	return parse[CreateResult](KindCreateResult, CreateResultSchema, data)
}

// ParseCancelAcknowledgement decodes a cancel response.
func ParseCancelAcknowledgement(data []byte) (*CancelAcknowledgement, error) {
	return parse[CancelAcknowledgement](KindCancelAcknowledgement, CancelAcknowledgementSchema, data)
}

// ParseInteractionResponseCommand decodes an interaction answer body.
func ParseInteractionResponseCommand(data []byte) (*contract.InteractionResponseCommand, error) {
	return parse[contract.InteractionResponseCommand](contract.KindInteractionResponseCommand, contract.InteractionResponseCommandSchema, data)
}

// ParseInteractionAcknowledgement decodes an interaction answer's
// acknowledgement.
func ParseInteractionAcknowledgement(data []byte) (*contract.InteractionAcknowledgement, error) {
	return parse[contract.InteractionAcknowledgement](contract.KindInteractionAcknowledgement, contract.InteractionAcknowledgementSchema, data)
}

// ParseEnvironmentObservation decodes an observation response.
func ParseEnvironmentObservation(data []byte) (*contract.EnvironmentObservation, error) {
	return parse[contract.EnvironmentObservation](contract.KindEnvironmentObservation, contract.EnvironmentObservationSchema, data)
}

// ParseErrorBody decodes an error response.
func ParseErrorBody(data []byte) (*ErrorBody, error) {
	return parse[ErrorBody](KindErrorBody, ErrorBodySchema, data)
}

// ParseHealth decodes a health response.
func ParseHealth(data []byte) (*Health, error) {
	return parse[Health](KindHealth, HealthSchema, data)
}

// ParseEnvironmentEvent decodes one SSE event's data.
func ParseEnvironmentEvent(data []byte) (*contract.EnvironmentEvent, error) {
	return parse[contract.EnvironmentEvent](contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, data)
}

// Marshal encodes a wire value as JSON.
func Marshal(x any) ([]byte, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return nil, err
	}
	return canonjson.Marshal(v), nil
}

// FromSchemaError turns a decoding refusal into the ErrorBody detail that
// names its first issue's path.
func FromSchemaError(err error) ErrorDetail {
	d := ErrorDetail{Code: CodeInvalidRequest, Message: err.Error()}
	var se *schema.Error
	if errors.As(err, &se) && len(se.Issues) > 0 {
		p := se.Issues[0].Path
		d.Path = &p
		if se.Issues[0].Code == schema.CodeTooBig && p == "" {
			d.Code = CodeTooLarge
		}
	}
	return d
}

// Served is the part of c the wire carries: profile handling, streaming
// (live, replay, detach, turn idempotency), session continuation,
// retained control (exact runs, digest-bound cancellation), usage,
// exact processes, create options, cwd bases, workspace read, write and exec, profile
// validation, interactions (on turns and sessions) and observation, each
// only as far as c declares it. Every ability the wire does not carry
// (native continuation, context transfer, workspace git/upload/download,
// branching, placement) is declared absent, so a
// client's exposure matches its document. The server serves
// this document and a client trusts no more than it.
func Served(c *contract.Capabilities) contract.Capabilities {
	out := contract.Capabilities{
		Profile: c.Profile,
		Streaming: contract.StreamingCapabilities{Live: c.Streaming.Live, Replay: c.Streaming.Replay,
			Detach: c.Streaming.Detach, TurnIdempotency: c.Streaming.TurnIdempotency},
		Sessions: contract.SessionCapabilities{Continue: c.Sessions.Continue},
		Workspace: contract.WorkspaceCapabilities{Read: c.Workspace.Read, Write: c.Workspace.Write,
			Exec: c.Workspace.Exec, CwdBases: c.Workspace.CwdBases},
		Usage: c.Usage,
	}
	if rc := c.RetainedControl; rc != nil {
		kept := *rc
		out.RetainedControl = &kept
	}
	if c.Interactions != nil {
		ic := *c.Interactions
		ic.Kinds = slices.Clone(ic.Kinds)
		ic.AnswerFieldTypes = slices.Clone(ic.AnswerFieldTypes)
		ic.ResponseScopes = slices.Clone(ic.ResponseScopes)
		out.Interactions = &ic
	}
	if c.Observation != nil {
		oc := *c.Observation
		out.Observation = &oc
	}
	out.Branching = c.Branching
	if ep := c.ExactProcess; ep != nil {
		kept := *ep
		kept.Egress = slices.Clone(ep.Egress)
		out.ExactProcess = &kept
	}
	if ct := c.ContextTransfer; ct != nil {
		kept := *ct
		out.ContextTransfer = &kept
	}
	if nc := c.NativeContinuation; nc != nil {
		// admissionControl is not served: one request and its answer
		// cannot announce the new run before its result is awaited.
		out.NativeContinuation = &contract.NativeContinuationCapabilities{AtomicBoundary: nc.AtomicBoundary, RequestIdempotency: nc.RequestIdempotency}
	}
	if cr := c.Create; cr != nil && (len(cr.Egress) > 0 || cr.BillingOwner != nil || cr.RuntimeAttachments != nil) {
		out.Create = &contract.CreateCapabilities{Egress: cr.Egress, BillingOwner: cr.BillingOwner, RuntimeAttachments: cr.RuntimeAttachments}
	}
	return out
}
