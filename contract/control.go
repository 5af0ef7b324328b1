package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of run control.
const (
	KindRunControlRef                  = "AgentRunControlRef"
	KindExactRunControlRef             = "AgentExactRunControlRef"
	KindRunCancellationRequest         = "AgentRunCancellationRequest"
	KindRunCancellationAcknowledgement = "AgentRunCancellationAcknowledgement"
)

// RunControlRef identifies a retained run without depending on a live
// object: enough coordinates to recreate control of one run. RequestDigest
// is the provider's admission digest, so reconstruction can refuse a reuse
// with changed input.
type RunControlRef struct {
	RunID         string  `json:"runId"`
	Provider      string  `json:"provider"`
	EnvironmentID string  `json:"environmentId"`
	SessionID     *string `json:"sessionId,omitzero"`
	ExecutionID   *string `json:"executionId,omitzero"`
	RequestDigest *string `json:"requestDigest,omitzero"`
}

// ExactRunControlRef is a run reference complete enough for a retryable,
// state-changing action: session, execution and admission digest are all
// known.
type ExactRunControlRef struct {
	RunID         string `json:"runId"`
	Provider      string `json:"provider"`
	EnvironmentID string `json:"environmentId"`
	SessionID     string `json:"sessionId"`
	ExecutionID   string `json:"executionId"`
	RequestDigest string `json:"requestDigest"`
}

// Ref returns r as a RunControlRef.
func (r ExactRunControlRef) Ref() RunControlRef {
	return RunControlRef{RunID: r.RunID, Provider: r.Provider, EnvironmentID: r.EnvironmentID,
		SessionID: &r.SessionID, ExecutionID: &r.ExecutionID, RequestDigest: &r.RequestDigest}
}

var (
	runControlRefFields = []schema.Field{
		schema.Req("runId", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Opt("sessionId", BoundedIdentifier),
		schema.Opt("executionId", BoundedIdentifier),
		schema.Opt("requestDigest", Digest),
	}

	// RunControlRefSchema is the AgentRunControlRef shape.
	RunControlRefSchema = schema.Object(runControlRefFields...)

	// ExactRunControlRefSchema is the AgentExactRunControlRef shape.
	ExactRunControlRefSchema = RunControlRefSchema.Extend(
		schema.Req("sessionId", BoundedIdentifier),
		schema.Req("executionId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
	)
)

// SameRunControlRef reports whether two references name the same run. It
// compares canonical forms, not a list of fields, so a field added later
// is compared too.
func SameRunControlRef(a, b any) bool {
	da, err := DigestOf(a)
	if err != nil {
		return false
	}
	db, err := DigestOf(b)
	return err == nil && da == db
}

// Cancellation statuses and effects.
const (
	StatusAccepted = "accepted"
	StatusReplayed = "replayed"
	StatusConflict = "conflict"
	StatusUnknown  = "unknown"

	EffectCancelRequested = "cancel_requested"
	EffectCancelled       = "cancelled"
	EffectNotLive         = "not_live"
	EffectUnknown         = "unknown"
)

// RunCancellationRequest asks a provider to cancel one exact run. The
// request digest binds the operation id, run and reason, so a caller that
// lost the first acknowledgement can safely send the same request again.
type RunCancellationRequest struct {
	OperationID   string             `json:"operationId"`
	Run           ExactRunControlRef `json:"run"`
	Reason        *string            `json:"reason,omitzero"`
	RequestDigest string             `json:"requestDigest"`
}

// NewRunCancellationRequest builds a request with its digest.
func NewRunCancellationRequest(operationID string, run ExactRunControlRef, reason *string) (*RunCancellationRequest, error) {
	r := &RunCancellationRequest{OperationID: operationID, Run: run, Reason: reason}
	digest, err := materialDigest(KindRunCancellationRequest, cancellationMaterialSchema, r, "requestDigest")
	if err != nil {
		return nil, err
	}
	r.RequestDigest = digest
	return r, nil
}

// RunCancellationAcknowledgement answers a cancellation request. Status
// accepted or replayed comes with a known Effect; conflict (with the
// digest of the different request already bound to the operation) and
// unknown (with a message and Retryable false) come with effect unknown.
type RunCancellationAcknowledgement struct {
	OperationID           string             `json:"operationId"`
	RequestDigest         string             `json:"requestDigest"`
	Run                   ExactRunControlRef `json:"run"`
	Status                string             `json:"status"`
	Effect                string             `json:"effect"`
	Message               *string            `json:"message,omitzero"`
	Retryable             *bool              `json:"retryable,omitzero"`
	ExistingRequestDigest *string            `json:"existingRequestDigest,omitzero"`
}

var (
	cancellationMaterialSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("run", ExactRunControlRefSchema),
		schema.Opt("reason", schema.String(schema.MaxLen(MaxStringLength), schema.MinLen(1), schema.MaxLen(2048))),
	)

	// RunCancellationRequestSchema is the AgentRunCancellationRequest
	// shape; its requestDigest must match its content.
	RunCancellationRequestSchema = cancellationMaterialSchema.
					Extend(schema.Req("requestDigest", Digest)).
					Refine(checkMaterialDigest("requestDigest", "the run cancellation request digest does not match its content"))

	// RunCancellationAcknowledgementSchema is the
	// AgentRunCancellationAcknowledgement shape with its status rules.
	RunCancellationAcknowledgementSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Req("run", ExactRunControlRefSchema),
		schema.Req("status", schema.Enum(StatusAccepted, StatusReplayed, StatusConflict, StatusUnknown)),
		schema.Req("effect", schema.Enum(EffectCancelRequested, EffectCancelled, EffectNotLive, EffectUnknown)),
		schema.Opt("message", schema.String(schema.MaxLen(MaxStringLength), schema.MinLen(1))),
		schema.Opt("retryable", schema.Bool()),
		schema.Opt("existingRequestDigest", Digest),
	).Refine(checkCancellationAcknowledgement)
)

func checkCancellationAcknowledgement(c *schema.Context, v canonjson.Value) {
	status, effect := str(v, "status"), str(v, "effect")
	known := effect != EffectUnknown
	if (status == StatusAccepted || status == StatusReplayed) && !known || (status == StatusConflict || status == StatusUnknown) && known {
		c.Custom("cancellation status and effect certainty do not agree", "effect")
	}
	existing, hasExisting := v.Get("existingRequestDigest")
	switch {
	case status == StatusConflict && !hasExisting:
		c.Custom("a cancellation conflict must include the existing request digest", "existingRequestDigest")
	case status == StatusConflict && existing.Str() == str(v, "requestDigest"):
		c.Custom("a cancellation conflict must identify a different request", "existingRequestDigest")
	case status != StatusConflict && hasExisting:
		c.Custom("only a cancellation conflict may include an existing request digest", "existingRequestDigest")
	}
	_, hasMessage := v.Get("message")
	retryable, hasRetryable := v.Get("retryable")
	if status == StatusUnknown && (!hasMessage || !hasRetryable || retryable.Bool()) {
		c.Custom("an unknown cancellation outcome must be explained and marked not retryable", "retryable")
	}
}

// str returns the string member name of v, or "".
func str(v canonjson.Value, name string) string {
	m, _ := v.Get(name)
	return m.Str()
}

// ParseRunCancellationRequest decodes and validates a cancellation request.
func ParseRunCancellationRequest(data []byte) (*RunCancellationRequest, error) {
	return Parse[RunCancellationRequest](KindRunCancellationRequest, RunCancellationRequestSchema, data)
}

// ParseRunCancellationAcknowledgement decodes and validates an
// acknowledgement.
func ParseRunCancellationAcknowledgement(data []byte) (*RunCancellationAcknowledgement, error) {
	return Parse[RunCancellationAcknowledgement](KindRunCancellationAcknowledgement, RunCancellationAcknowledgementSchema, data)
}

// CancellationAcknowledgementMatchesRequest reports whether ack answers
// exactly req: both valid, same operation id, same request digest and the
// same run.
func CancellationAcknowledgementMatchesRequest(req *RunCancellationRequest, ack *RunCancellationAcknowledgement) bool {
	if req == nil || ack == nil {
		return false
	}
	if _, err := Validate(KindRunCancellationRequest, RunCancellationRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindRunCancellationAcknowledgement, RunCancellationAcknowledgementSchema, ack); err != nil {
		return false
	}
	return ack.OperationID == req.OperationID && ack.RequestDigest == req.RequestDigest && SameRunControlRef(ack.Run, req.Run)
}

func controlKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindRunControlRef, Node: RunControlRefSchema},
		{Name: KindExactRunControlRef, Node: ExactRunControlRefSchema},
		{Name: KindRunCancellationRequest, Node: RunCancellationRequestSchema},
		{Name: KindRunCancellationAcknowledgement, Node: RunCancellationAcknowledgementSchema},
	}
}
