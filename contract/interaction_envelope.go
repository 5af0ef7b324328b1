package contract

import (
	"errors"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of interaction requests, responses and their envelopes.
const (
	KindInteractionSubject            = "InteractionSubject"
	KindInteractionRequestBinding     = "InteractionRequestBinding"
	KindInteractionExecutionBinding   = "InteractionExecutionBinding"
	KindInteractionBinding            = "InteractionBinding"
	KindInteractionRequest            = "InteractionRequest"
	KindInteractionResponse           = "InteractionResponse"
	KindInteractionResponseCommand    = "InteractionResponseCommand"
	KindInteractionAcknowledgement    = "InteractionAcknowledgement"
	intKindInteractionRequestMaterial = "InteractionRequestMaterial"
)

// Subject types: what an interaction request is about.
const (
	InteractionSubjectTool     = "tool"
	InteractionSubjectCommand  = "command"
	InteractionSubjectFile     = "file"
	InteractionSubjectResource = "resource"
)

// InteractionSubject says what a request is about, for preview and
// permission display. Type selects the members: tool (ToolName, Input?),
// command (Command), file (Path, Preview?) or resource (URI).
type InteractionSubject struct {
	Type     string          `json:"type"`
	ToolName *string         `json:"toolName,omitzero"`
	Input    canonjson.Value `json:"input,omitzero"`
	Command  *string         `json:"command,omitzero"`
	Path     *string         `json:"path,omitzero"`
	Preview  *string         `json:"preview,omitzero"`
	URI      *string         `json:"uri,omitzero"`
}

// InteractionExecutionBinding is the exact execution coordinates shared
// by every interaction one provider turn originates.
type InteractionExecutionBinding struct {
	RunID         string `json:"runId"`
	Provider      string `json:"provider"`
	EnvironmentID string `json:"environmentId"`
	SessionID     string `json:"sessionId"`
	ExecutionID   string `json:"executionId"`
}

// ForInteraction returns the binding of one interaction of this execution.
func (b InteractionExecutionBinding) ForInteraction(interactionID string) InteractionRequestBinding {
	return InteractionRequestBinding{RunID: b.RunID, Provider: b.Provider, EnvironmentID: b.EnvironmentID,
		SessionID: b.SessionID, ExecutionID: b.ExecutionID, InteractionID: interactionID}
}

// InteractionRequestBinding is the execution coordinates of one request
// plus its interaction id (which equals the request id).
type InteractionRequestBinding struct {
	RunID         string `json:"runId"`
	Provider      string `json:"provider"`
	EnvironmentID string `json:"environmentId"`
	SessionID     string `json:"sessionId"`
	ExecutionID   string `json:"executionId"`
	InteractionID string `json:"interactionId"`
}

// Execution returns the execution part of the binding.
func (b InteractionRequestBinding) Execution() InteractionExecutionBinding {
	return InteractionExecutionBinding{RunID: b.RunID, Provider: b.Provider, EnvironmentID: b.EnvironmentID,
		SessionID: b.SessionID, ExecutionID: b.ExecutionID}
}

// InteractionBinding binds a response command (and its acknowledgement)
// to one outstanding request: its run, provider, environment, execution,
// interaction, optionally its provider session, and the request's digest.
// Because RequestDigest covers the request's own binding, a binding that
// omits SessionID still names exactly one request.
type InteractionBinding struct {
	RunID         string  `json:"runId"`
	Provider      string  `json:"provider"`
	EnvironmentID string  `json:"environmentId"`
	SessionID     *string `json:"sessionId,omitzero"`
	ExecutionID   string  `json:"executionId"`
	InteractionID string  `json:"interactionId"`
	RequestDigest string  `json:"requestDigest"`
}

// OnTimeout policies of a request.
const (
	OnTimeoutDefault = "default"
	OnTimeoutFail    = "fail"
	OnTimeoutWait    = "wait"
)

// InteractionRequest is a typed question a provider puts to the user
// during a turn. RequestDigest is the digest of everything else, so a
// response can be bound to this exact request.
type InteractionRequest struct {
	ID         string                `json:"id"`
	Kind       string                `json:"kind"`
	Title      string                `json:"title"`
	Body       *string               `json:"body,omitzero"`
	Subject    *InteractionSubject   `json:"subject,omitzero"`
	AnswerSpec InteractionAnswerSpec `json:"answerSpec"`
	// ResponseScopes lists how far an accepted answer may be reused; nil
	// permits a one-time answer only.
	ResponseScopes  []InteractionResponseScope `json:"responseScopes,omitzero"`
	AllowedOutcomes []InteractionOutcome       `json:"allowedOutcomes,omitzero"`
	// Default is the resolution applied on timeout when OnTimeout is
	// "default". It never carries a secret answer.
	Default       *InteractionResolution    `json:"default,omitzero"`
	TimeoutMs     *int64                    `json:"timeoutMs,omitzero"`
	OnTimeout     *string                   `json:"onTimeout,omitzero"`
	Binding       InteractionRequestBinding `json:"binding"`
	RequestDigest string                    `json:"requestDigest"`
}

// ResponseBinding returns the binding a response command to r carries.
func (r *InteractionRequest) ResponseBinding() InteractionBinding {
	session := r.Binding.SessionID
	return InteractionBinding{RunID: r.Binding.RunID, Provider: r.Binding.Provider, EnvironmentID: r.Binding.EnvironmentID,
		SessionID: &session, ExecutionID: r.Binding.ExecutionID, InteractionID: r.Binding.InteractionID, RequestDigest: r.RequestDigest}
}

// InteractionResponse answers one request: its id, outcome and, for an
// accepted outcome, the answer data. Secret answers in it are ephemeral
// provider input: whoever persists responses must redact them first.
type InteractionResponse struct {
	ID      string             `json:"id"`
	Outcome InteractionOutcome `json:"outcome"`
	Data    InteractionData    `json:"data,omitzero"`
}

// InteractionResponseCommand is the retryable command that delivers a
// response to an environment or session. CommandDigest binds Binding and
// Response, so a repeated operation id with changed content is detected.
type InteractionResponseCommand struct {
	OperationID   string              `json:"operationId"`
	Binding       InteractionBinding  `json:"binding"`
	CommandDigest string              `json:"commandDigest"`
	Response      InteractionResponse `json:"response"`
}

// InteractionAcknowledgementStatus is the durable result of one response
// command.
type InteractionAcknowledgementStatus string

// Acknowledgement statuses.
const (
	// InteractionAckAccepted: the response was applied.
	InteractionAckAccepted InteractionAcknowledgementStatus = "accepted"
	// InteractionAckAlreadyResolvedSame: an equal response was applied before.
	InteractionAckAlreadyResolvedSame InteractionAcknowledgementStatus = "already_resolved_same"
	// InteractionAckAlreadyResolvedDifferent: a different response was applied before.
	InteractionAckAlreadyResolvedDifferent InteractionAcknowledgementStatus = "already_resolved_different"
	InteractionAckExpired                  InteractionAcknowledgementStatus = "expired"
	InteractionAckCancelled                InteractionAcknowledgementStatus = "cancelled"
	InteractionAckUnknownInteraction       InteractionAcknowledgementStatus = "unknown_interaction"
	InteractionAckUnknownRun               InteractionAcknowledgementStatus = "unknown_run"
	// InteractionAckBindingMismatch: the environment or session does not match.
	InteractionAckBindingMismatch InteractionAcknowledgementStatus = "binding_mismatch"
	// InteractionAckInvalidResponse comes with a Message.
	InteractionAckInvalidResponse InteractionAcknowledgementStatus = "invalid_response"
	// InteractionAckTransportFailure comes with a Message and Retryable.
	InteractionAckTransportFailure InteractionAcknowledgementStatus = "transport_failure"
)

// InteractionAcknowledgement is the durable answer to a response command.
// It echoes the command's operation id, binding and digest, and carries no
// answer value and no digest of the answer alone: either could disclose a
// low-entropy secret answer.
type InteractionAcknowledgement struct {
	OperationID   string                           `json:"operationId"`
	Binding       InteractionBinding               `json:"binding"`
	CommandDigest string                           `json:"commandDigest"`
	Status        InteractionAcknowledgementStatus `json:"status"`
	Message       *string                          `json:"message,omitzero"`
	Retryable     *bool                            `json:"retryable,omitzero"`
}

var (
	intAckStatuses = []string{string(InteractionAckAccepted), string(InteractionAckAlreadyResolvedSame),
		string(InteractionAckAlreadyResolvedDifferent), string(InteractionAckExpired), string(InteractionAckCancelled),
		string(InteractionAckUnknownInteraction), string(InteractionAckUnknownRun), string(InteractionAckBindingMismatch),
		string(InteractionAckInvalidResponse), string(InteractionAckTransportFailure)}

	// InteractionSubjectSchema is the InteractionSubject shape.
	InteractionSubjectSchema = schema.Discriminated("type", map[string]schema.Node{
		InteractionSubjectTool: schema.Object(schema.Req("type", schema.LiteralString(InteractionSubjectTool)),
			schema.Req("toolName", BoundedIdentifier), schema.Opt("input", BoundedJSON)),
		InteractionSubjectCommand: schema.Object(schema.Req("type", schema.LiteralString(InteractionSubjectCommand)),
			schema.Req("command", BoundedString)),
		InteractionSubjectFile: schema.Object(schema.Req("type", schema.LiteralString(InteractionSubjectFile)),
			schema.Req("path", BoundedString), schema.Opt("preview", BoundedString)),
		InteractionSubjectResource: schema.Object(schema.Req("type", schema.LiteralString(InteractionSubjectResource)),
			schema.Req("uri", BoundedString)),
	})

	// InteractionRequestBindingSchema is the InteractionRequestBinding
	// shape.
	InteractionRequestBindingSchema = schema.Object(
		schema.Req("runId", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Req("sessionId", BoundedIdentifier),
		schema.Req("executionId", BoundedIdentifier),
		schema.Req("interactionId", BoundedIdentifier),
	)

	// InteractionExecutionBindingSchema is the InteractionExecutionBinding
	// shape.
	InteractionExecutionBindingSchema = InteractionRequestBindingSchema.Omit("interactionId")

	// InteractionBindingSchema is the InteractionBinding shape; its
	// sessionId is optional (seed 000: an "optional provider session").
	InteractionBindingSchema = InteractionRequestBindingSchema.Extend(
		schema.Opt("sessionId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
	)

	intRequestMaterialSchema = schema.Object(
		schema.Req("id", BoundedIdentifier),
		schema.Req("kind", BoundedIdentifier),
		schema.Req("title", intLabel),
		schema.Opt("body", BoundedString),
		schema.Opt("subject", InteractionSubjectSchema),
		schema.Req("answerSpec", InteractionAnswerSpecSchema),
		schema.Opt("responseScopes", schema.Array(schema.Enum(intResponseScopes...)).MinItems(1).MaxItems(MaxArrayLength)),
		schema.Opt("allowedOutcomes", schema.Array(schema.Enum(intOutcomes...)).MinItems(1).MaxItems(len(intOutcomes))),
		schema.Opt("default", InteractionResolutionSchema),
		schema.Opt("timeoutMs", intInteger(schema.Positive, schema.Max(canonjson.MaxSafeInteger))),
		schema.Opt("onTimeout", schema.Enum(OnTimeoutDefault, OnTimeoutFail, OnTimeoutWait)),
		schema.Req("binding", InteractionRequestBindingSchema),
	)

	// InteractionRequestSchema is the InteractionRequest shape with its
	// consistency rules and digest check.
	InteractionRequestSchema = intRequestMaterialSchema.
					Extend(schema.Req("requestDigest", Digest)).
					Refine(intCheckRequest)

	// InteractionResponseSchema is the InteractionResponse shape.
	InteractionResponseSchema = schema.Discriminated("outcome", intOutcomeVariants(schema.Req("id", BoundedIdentifier)))

	// InteractionResponseCommandSchema is the InteractionResponseCommand
	// shape; its response must answer the bound interaction and its digest
	// must match its binding and response.
	InteractionResponseCommandSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("binding", InteractionBindingSchema),
		schema.Req("commandDigest", Digest),
		schema.Req("response", InteractionResponseSchema),
	).Refine(intCheckCommand)

	// InteractionAcknowledgementSchema is the InteractionAcknowledgement
	// shape with its status rules.
	InteractionAcknowledgementSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("binding", InteractionBindingSchema),
		schema.Req("commandDigest", Digest),
		schema.Req("status", schema.Enum(intAckStatuses...)),
		schema.Opt("message", intLabel),
		schema.Opt("retryable", schema.Bool()),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		status := str(v, "status")
		_, hasMessage := v.Get("message")
		_, hasRetryable := v.Get("retryable")
		if (status == string(InteractionAckInvalidResponse) || status == string(InteractionAckTransportFailure)) && !hasMessage {
			c.Custom(status+" must include a message", "message")
		}
		if status == string(InteractionAckTransportFailure) && !hasRetryable {
			c.Custom("transport_failure must state whether retry is safe", "retryable")
		}
	})
)

// intSecretFields returns the names of the secret fields of an answer
// spec value.
func intSecretFields(spec canonjson.Value) map[string]bool {
	fields, _ := spec.Get("fields")
	out := map[string]bool{}
	for _, f := range fields.Items() {
		if str(f, "type") == string(InteractionFieldTypeSecret) {
			out[str(f, "name")] = true
		}
	}
	return out
}

func intCheckRequest(c *schema.Context, v canonjson.Value) {
	binding, _ := v.Get("binding")
	if str(binding, "interactionId") != str(v, "id") {
		c.Custom("interaction binding must name the request id", "binding", "interactionId")
	}
	scopes, hasScopes := v.Get("responseScopes")
	if hasScopes && !intUniqueStrings(scopes.Items()) {
		c.Custom("interaction response scopes must be unique", "responseScopes")
	}
	outcomes, hasOutcomes := v.Get("allowedOutcomes")
	if hasOutcomes && !intUniqueStrings(outcomes.Items()) {
		c.Custom("interaction outcomes must be unique", "allowedOutcomes")
	}
	def, hasDefault := v.Get("default")
	if str(v, "onTimeout") == OnTimeoutDefault && !hasDefault {
		c.Custom("onTimeout=default requires a default resolution", "default")
	}
	if hasDefault && hasOutcomes && !intContainsString(outcomes.Items(), str(def, "outcome")) {
		c.Custom("default outcome is not allowed by the request", "default", "outcome")
	}
	secretDefault := false
	if hasDefault {
		for _, e := range intResolutionErrors(v, def) {
			c.Custom(e, "default")
		}
		spec, _ := v.Get("answerSpec")
		secret := intSecretFields(spec)
		data, _ := def.Get("data")
		for _, m := range data.Members() {
			if secret[m.Name] {
				c.Custom("secret answers cannot be embedded in interaction defaults", "default", "data", m.Name)
				secretDefault = true
			}
		}
	}
	if secretDefault {
		return // the reference computes no digest of a request with a secret default
	}
	digest, err := intDigestMaterial(withoutMember(v, "requestDigest"))
	switch {
	case err != nil:
		c.Custom("the interaction request digest cannot be computed: " + err.Error())
	case digest != str(v, "requestDigest"):
		c.Custom("interaction request digest does not match its content", "requestDigest")
	}
}

// intDigestMaterial validates request material on its own and returns its
// digest. Material that does not validate alone has no digest; the
// reference fails the whole validation then, so callers report it at the
// root.
func intDigestMaterial(material canonjson.Value) (string, error) {
	out, err := schema.Run(intKindInteractionRequestMaterial, intRequestMaterialSchema, material)
	if err != nil {
		return "", err
	}
	return DigestOf(out)
}

func intCheckCommand(c *schema.Context, v canonjson.Value) {
	binding, _ := v.Get("binding")
	response, _ := v.Get("response")
	if str(binding, "interactionId") != str(response, "id") {
		c.Custom("response id must match the bound interaction id", "response", "id")
	}
	digest, err := intCommandDigest(binding, response)
	switch {
	case err != nil:
		c.Custom("the interaction response command digest cannot be computed: " + err.Error())
	case digest != str(v, "commandDigest"):
		c.Custom("interaction response command digest does not match its content", "commandDigest")
	}
}

// intCommandDigest validates a binding and a response on their own and
// returns the digest of {binding, response}.
func intCommandDigest(binding, response canonjson.Value) (string, error) {
	b, err := schema.Run(KindInteractionBinding, InteractionBindingSchema, binding)
	if err != nil {
		return "", err
	}
	r, err := schema.Run(KindInteractionResponse, InteractionResponseSchema, response)
	if err != nil {
		return "", err
	}
	return DigestOf(canonjson.ObjectValue([]canonjson.Member{{Name: "binding", Value: b}, {Name: "response", Value: r}}))
}

func intContainsString(items []canonjson.Value, s string) bool {
	for _, it := range items {
		if it.Kind() == canonjson.String && it.Str() == s {
			return true
		}
	}
	return false
}

// InteractionRequestDigest returns the digest of a request's content (all
// of it but RequestDigest). A request whose default embeds a secret answer
// has no digest.
func InteractionRequestDigest(r *InteractionRequest) (string, error) {
	if r == nil {
		return "", errors.New("no interaction request")
	}
	v, err := canonjson.ToValue(r)
	if err != nil {
		return "", err
	}
	material, err := schema.Run(intKindInteractionRequestMaterial, intRequestMaterialSchema, withoutMember(v, "requestDigest"))
	if err != nil {
		return "", err
	}
	if def, ok := material.Get("default"); ok {
		spec, _ := material.Get("answerSpec")
		secret := intSecretFields(spec)
		data, _ := def.Get("data")
		for _, m := range data.Members() {
			if secret[m.Name] {
				return "", errors.New("secret answers cannot be embedded in interaction defaults")
			}
		}
	}
	return DigestOf(material)
}

// NewInteractionRequest returns a copy of r with its RequestDigest set,
// after validating the whole request.
func NewInteractionRequest(r InteractionRequest) (*InteractionRequest, error) {
	digest, err := InteractionRequestDigest(&r)
	if err != nil {
		return nil, err
	}
	r.RequestDigest = digest
	if _, err := Validate(KindInteractionRequest, InteractionRequestSchema, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// InteractionResponseCommandDigest returns the digest binding a response
// command's binding and response.
func InteractionResponseCommandDigest(binding InteractionBinding, response InteractionResponse) (string, error) {
	b, err := canonjson.ToValue(binding)
	if err != nil {
		return "", err
	}
	r, err := canonjson.ToValue(response)
	if err != nil {
		return "", err
	}
	return intCommandDigest(b, r)
}

// NewInteractionResponseCommand builds a validated response command with
// its digest.
func NewInteractionResponseCommand(operationID string, binding InteractionBinding, response InteractionResponse) (*InteractionResponseCommand, error) {
	digest, err := InteractionResponseCommandDigest(binding, response)
	if err != nil {
		return nil, err
	}
	cmd := &InteractionResponseCommand{OperationID: operationID, Binding: binding, CommandDigest: digest, Response: response}
	if _, err := Validate(KindInteractionResponseCommand, InteractionResponseCommandSchema, cmd); err != nil {
		return nil, err
	}
	return cmd, nil
}

// NewInteractionAcknowledgement builds a validated acknowledgement of cmd
// with status (message and retryable as the status requires).
func NewInteractionAcknowledgement(cmd *InteractionResponseCommand, status InteractionAcknowledgementStatus, message *string, retryable *bool) (*InteractionAcknowledgement, error) {
	if cmd == nil {
		return nil, errors.New("no interaction response command")
	}
	ack := &InteractionAcknowledgement{OperationID: cmd.OperationID, Binding: cmd.Binding, CommandDigest: cmd.CommandDigest,
		Status: status, Message: message, Retryable: retryable}
	if _, err := Validate(KindInteractionAcknowledgement, InteractionAcknowledgementSchema, ack); err != nil {
		return nil, err
	}
	return ack, nil
}

// InteractionAcknowledgementMatchesCommand reports whether ack answers
// exactly cmd: both valid, and the same operation id, command digest and
// binding.
func InteractionAcknowledgementMatchesCommand(cmd *InteractionResponseCommand, ack *InteractionAcknowledgement) bool {
	if cmd == nil || ack == nil {
		return false
	}
	if _, err := Validate(KindInteractionResponseCommand, InteractionResponseCommandSchema, cmd); err != nil {
		return false
	}
	if _, err := Validate(KindInteractionAcknowledgement, InteractionAcknowledgementSchema, ack); err != nil {
		return false
	}
	return ack.OperationID == cmd.OperationID && ack.CommandDigest == cmd.CommandDigest && intSameCanonical(ack.Binding, cmd.Binding)
}

// intSameCanonical reports whether a and b have the same canonical form.
func intSameCanonical(a, b any) bool {
	da, err := DigestOf(a)
	if err != nil {
		return false
	}
	db, err := DigestOf(b)
	return err == nil && da == db
}

// ParseInteractionBinding decodes and validates a response binding.
func ParseInteractionBinding(data []byte) (*InteractionBinding, error) {
	return Parse[InteractionBinding](KindInteractionBinding, InteractionBindingSchema, data)
}

// ParseInteractionExecutionBinding decodes and validates execution
// coordinates.
func ParseInteractionExecutionBinding(data []byte) (*InteractionExecutionBinding, error) {
	return Parse[InteractionExecutionBinding](KindInteractionExecutionBinding, InteractionExecutionBindingSchema, data)
}

// ParseInteractionRequest decodes and validates a request, including its
// digest.
func ParseInteractionRequest(data []byte) (*InteractionRequest, error) {
	return Parse[InteractionRequest](KindInteractionRequest, InteractionRequestSchema, data)
}

// ParseInteractionResponse decodes and validates a response (its shape
// only; ValidateInteractionResponse checks it against its request).
func ParseInteractionResponse(data []byte) (*InteractionResponse, error) {
	return Parse[InteractionResponse](KindInteractionResponse, InteractionResponseSchema, data)
}

// ParseInteractionResponseCommand decodes and validates a response
// command, including its digest.
func ParseInteractionResponseCommand(data []byte) (*InteractionResponseCommand, error) {
	return Parse[InteractionResponseCommand](KindInteractionResponseCommand, InteractionResponseCommandSchema, data)
}

// ParseInteractionAcknowledgement decodes and validates an
// acknowledgement.
func ParseInteractionAcknowledgement(data []byte) (*InteractionAcknowledgement, error) {
	return Parse[InteractionAcknowledgement](KindInteractionAcknowledgement, InteractionAcknowledgementSchema, data)
}
