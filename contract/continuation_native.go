package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of native same-session continuation.
const (
	KindNativeContextBoundary                    = "NativeContextBoundary"
	KindNativeContextBoundaryProof               = "NativeContextBoundaryProof"
	KindNativeContextContinuationTurn            = "NativeContextContinuationTurn"
	KindNativeContextContinuationRequest         = "NativeContextContinuationRequest"
	KindNativeContextContinuationAcknowledgement = "NativeContextContinuationAcknowledgement"
)

// Kinds of native context boundary: an opaque provider token, a history
// revision, a digest of the history, or the exact message ids with their
// digest.
const (
	BoundaryKindToken    = "token"
	BoundaryKindRevision = "revision"
	BoundaryKindDigest   = "digest"
	BoundaryKindMessages = "messages"
)

// Native continuation acknowledgement statuses. accepted and replayed
// mean the continuation was (or had already been) admitted at the
// expected boundary; conflict means the operation id is bound to another
// request; boundary_mismatch means the session moved past the expected
// boundary; unverified means the provider could not prove the boundary;
// unknown_session means the session is gone; transport_failure means the
// outcome is unknown.
const (
	ContinuationStatusAccepted         = "accepted"
	ContinuationStatusReplayed         = "replayed"
	ContinuationStatusConflict         = "conflict"
	ContinuationStatusBoundaryMismatch = "boundary_mismatch"
	ContinuationStatusUnverified       = "unverified"
	ContinuationStatusUnknownSession   = "unknown_session"
	ContinuationStatusTransportFailure = "transport_failure"
)

// NativeContextBoundary is the recorded point of a provider session's
// native history. Kind selects the field: Token, Revision, Digest, or
// MessageIDs with Digest.
type NativeContextBoundary struct {
	Kind       string   `json:"kind"`
	Token      *string  `json:"token,omitzero"`
	Revision   *string  `json:"revision,omitzero"`
	MessageIDs []string `json:"messageIds,omitzero"`
	Digest     *string  `json:"digest,omitzero"`
}

// NativeContextBoundaryProof is a provider's observation of a session's
// native boundary, bound to the exact run it was observed in (run,
// provider, environment, session, execution and admission digest).
type NativeContextBoundaryProof struct {
	RunID         string                `json:"runId"`
	Provider      string                `json:"provider"`
	EnvironmentID string                `json:"environmentId"`
	SessionID     string                `json:"sessionId"`
	ExecutionID   string                `json:"executionId"`
	RequestDigest string                `json:"requestDigest"`
	Boundary      NativeContextBoundary `json:"boundary"`
	ObservedAt    string                `json:"observedAt"`
}

// NativeContextContinuationTurn is the exact new user turn of a native
// continuation: JSON-stable content only. Timeout and abort controls are
// not part of it (they are options of the call), so they never change the
// turn digest.
type NativeContextContinuationTurn struct {
	Prompt          *string                    `json:"prompt,omitzero"`
	Parts           []InputPart                `json:"parts,omitzero"`
	Model           *string                    `json:"model,omitzero"`
	Context         map[string]canonjson.Value `json:"context,omitzero"`
	ProviderOptions map[string]canonjson.Value `json:"providerOptions,omitzero"`
}

// NativeContextContinuationRequest asks a provider to continue the
// retained session of Run with one new turn (bound by TurnDigest) at
// ExpectedBoundary, sending no copied history. RequestDigest covers the
// turn digest, operation id, run and expected boundary.
type NativeContextContinuationRequest struct {
	OperationID      string                     `json:"operationId"`
	RequestDigest    string                     `json:"requestDigest"`
	TurnDigest       string                     `json:"turnDigest"`
	Run              ExactRunControlRef         `json:"run"`
	ExpectedBoundary NativeContextBoundaryProof `json:"expectedBoundary"`
}

// NativeContextContinuationAcknowledgement is a provider's answer to a
// continuation request: the status, how many history messages it sent
// (zero for a native continuation), and, by status, the existing request
// digest (conflict), the boundary it observed (accepted, replayed,
// boundary_mismatch), and a message with retry safety (transport_failure).
type NativeContextContinuationAcknowledgement struct {
	OperationID           string                      `json:"operationId"`
	RequestDigest         string                      `json:"requestDigest"`
	Status                string                      `json:"status"`
	HistoryMessagesSent   int64                       `json:"historyMessagesSent"`
	ExistingRequestDigest *string                     `json:"existingRequestDigest,omitzero"`
	ActualBoundary        *NativeContextBoundaryProof `json:"actualBoundary,omitzero"`
	Message               *string                     `json:"message,omitzero"`
	Retryable             *bool                       `json:"retryable,omitzero"`
}

var (
	// NativeContextBoundarySchema is the boundary shape; message ids are
	// unique.
	NativeContextBoundarySchema = schema.Refined(schema.Discriminated("kind", map[string]schema.Node{
		BoundaryKindToken: schema.Object(
			schema.Req("kind", schema.LiteralString(BoundaryKindToken)),
			schema.Req("token", BoundedIdentifier),
		),
		BoundaryKindRevision: schema.Object(
			schema.Req("kind", schema.LiteralString(BoundaryKindRevision)),
			schema.Req("revision", BoundedIdentifier),
		),
		BoundaryKindDigest: schema.Object(
			schema.Req("kind", schema.LiteralString(BoundaryKindDigest)),
			schema.Req("digest", Digest),
		),
		BoundaryKindMessages: schema.Object(
			schema.Req("kind", schema.LiteralString(BoundaryKindMessages)),
			schema.Req("messageIds", schema.Array(BoundedIdentifier).MaxItems(MaxArrayLength)),
			schema.Req("digest", Digest),
		),
	}), func(c *schema.Context, v canonjson.Value) {
		if pcStr(v, "kind") == BoundaryKindMessages && !pcUnique(pcStrings(v, "messageIds")) {
			c.Custom("native context boundary message ids must be unique", "messageIds")
		}
	})

	// NativeContextBoundaryProofSchema is the boundary proof shape.
	NativeContextBoundaryProofSchema = schema.Object(
		schema.Req("runId", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Req("sessionId", BoundedIdentifier),
		schema.Req("executionId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Req("boundary", NativeContextBoundarySchema),
		schema.Req("observedAt", pcTimestamp),
	)

	// NativeContextContinuationTurnSchema is the turn shape.
	NativeContextContinuationTurnSchema = schema.Object(
		schema.Opt("prompt", BoundedString),
		schema.Opt("parts", schema.Array(InputPartSchema).MaxItems(MaxArrayLength)),
		schema.Opt("model", BoundedIdentifier),
		schema.Opt("context", BoundedJSONRecord),
		schema.Opt("providerOptions", BoundedJSONRecord),
	)

	natRequestMaterialSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("turnDigest", Digest),
		schema.Req("run", ExactRunControlRefSchema),
		schema.Req("expectedBoundary", NativeContextBoundaryProofSchema),
	)

	// NativeContextContinuationRequestSchema is the request shape: the
	// expected boundary was observed in the run being continued, and the
	// request digest matches its content.
	NativeContextContinuationRequestSchema = natRequestMaterialSchema.
						Extend(schema.Req("requestDigest", Digest)).
						Refine(natCheckRequest)

	// NativeContextContinuationAcknowledgementSchema is the
	// acknowledgement shape with its status rules.
	NativeContextContinuationAcknowledgementSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Req("status", schema.Enum(ContinuationStatusAccepted, ContinuationStatusReplayed, ContinuationStatusConflict,
			ContinuationStatusBoundaryMismatch, ContinuationStatusUnverified, ContinuationStatusUnknownSession, ContinuationStatusTransportFailure)),
		schema.Req("historyMessagesSent", schema.Number(schema.Int, schema.NonNegative, schema.Max(MaxArrayLength))),
		schema.Opt("existingRequestDigest", Digest),
		schema.Opt("actualBoundary", NativeContextBoundaryProofSchema),
		schema.Opt("message", pcText),
		schema.Opt("retryable", schema.Bool()),
	).Refine(natCheckAcknowledgement)
)

// natProofCoordinates are the run coordinates a boundary proof and an
// exact run reference share.
var natProofCoordinates = []string{"runId", "provider", "environmentId", "sessionId", "executionId", "requestDigest"}

func natCheckRequest(c *schema.Context, v canonjson.Value) {
	if pcIssuesWithin(c, "requestDigest") {
		pcAtRoot(c, "the native continuation request material is invalid, so its digest cannot be computed")
		return
	}
	run, _ := v.Get("run")
	proof, _ := v.Get("expectedBoundary")
	for _, name := range natProofCoordinates {
		if pcStr(run, name) != pcStr(proof, name) {
			c.Custom("the boundary proof must match the continued run", "expectedBoundary")
			break
		}
	}
	want, err := pcWireDigest(withoutMember(v, "requestDigest"))
	if err != nil {
		pcAtRoot(c, "the native continuation request material exceeds the contract bounds or is not canonical JSON")
		return
	}
	if pcStr(v, "requestDigest") != want {
		c.Custom("native continuation request digest does not match its content", "requestDigest")
	}
}

func natCheckAcknowledgement(c *schema.Context, v canonjson.Value) {
	status := pcStr(v, "status")
	existing, hasExisting := v.Get("existingRequestDigest")
	if status == ContinuationStatusConflict && !hasExisting {
		c.Custom("a continuation conflict must include the existing digest", "existingRequestDigest")
	}
	if status == ContinuationStatusConflict && hasExisting && existing.Str() == pcStr(v, "requestDigest") {
		c.Custom("a continuation conflict must identify a different request", "existingRequestDigest")
	}
	if status != ContinuationStatusConflict && hasExisting {
		c.Custom("only a continuation conflict may include an existing digest", "existingRequestDigest")
	}
	if status == ContinuationStatusTransportFailure {
		if _, ok := v.Get("message"); !ok {
			c.Custom("a continuation transport failure must include a message", "message")
		}
		if _, ok := v.Get("retryable"); !ok {
			c.Custom("a continuation transport failure must state whether retry is safe", "retryable")
		}
	}
	switch status {
	case ContinuationStatusAccepted, ContinuationStatusReplayed, ContinuationStatusBoundaryMismatch:
		if _, ok := v.Get("actualBoundary"); !ok {
			c.Custom(status+" must include the observed boundary", "actualBoundary")
		}
	}
}

// NativeContextContinuationTurnDigest validates a turn and returns the
// digest that binds a continuation to it.
func NativeContextContinuationTurnDigest(turn NativeContextContinuationTurn) (string, error) {
	out, err := Validate(KindNativeContextContinuationTurn, NativeContextContinuationTurnSchema, turn)
	if err != nil {
		return "", err
	}
	return pcWireDigest(out)
}

// NewNativeContextContinuationRequest binds operationID to one exact turn
// of the retained session of run at the expected boundary, and returns the
// validated request with its turn and request digests.
func NewNativeContextContinuationRequest(operationID string, turn NativeContextContinuationTurn, run ExactRunControlRef, expected NativeContextBoundaryProof) (*NativeContextContinuationRequest, error) {
	turnDigest, err := NativeContextContinuationTurnDigest(turn)
	if err != nil {
		return nil, err
	}
	r := &NativeContextContinuationRequest{OperationID: operationID, TurnDigest: turnDigest, Run: run, ExpectedBoundary: expected}
	if r.RequestDigest, err = pcMaterialDigest(KindNativeContextContinuationRequest, natRequestMaterialSchema, r, "requestDigest"); err != nil {
		return nil, err
	}
	return pcFromValueOf[NativeContextContinuationRequest](KindNativeContextContinuationRequest, NativeContextContinuationRequestSchema, r)
}

// ParseNativeContextBoundaryProof decodes and validates a boundary proof.
func ParseNativeContextBoundaryProof(data []byte) (*NativeContextBoundaryProof, error) {
	return Parse[NativeContextBoundaryProof](KindNativeContextBoundaryProof, NativeContextBoundaryProofSchema, data)
}

// ParseNativeContextContinuationTurn decodes and validates a turn.
func ParseNativeContextContinuationTurn(data []byte) (*NativeContextContinuationTurn, error) {
	return Parse[NativeContextContinuationTurn](KindNativeContextContinuationTurn, NativeContextContinuationTurnSchema, data)
}

// ParseNativeContextContinuationRequest decodes and validates a request.
func ParseNativeContextContinuationRequest(data []byte) (*NativeContextContinuationRequest, error) {
	return Parse[NativeContextContinuationRequest](KindNativeContextContinuationRequest, NativeContextContinuationRequestSchema, data)
}

// ParseNativeContextContinuationAcknowledgement decodes and validates an
// acknowledgement.
func ParseNativeContextContinuationAcknowledgement(data []byte) (*NativeContextContinuationAcknowledgement, error) {
	return Parse[NativeContextContinuationAcknowledgement](KindNativeContextContinuationAcknowledgement, NativeContextContinuationAcknowledgementSchema, data)
}

// BoundaryProofMatchesRun reports whether a boundary proof was observed in
// exactly the run run names (same run, provider, environment, session,
// execution and admission digest).
func BoundaryProofMatchesRun(run ExactRunControlRef, proof *NativeContextBoundaryProof) bool {
	return proof != nil && proof.RunID == run.RunID && proof.Provider == run.Provider &&
		proof.EnvironmentID == run.EnvironmentID && proof.SessionID == run.SessionID &&
		proof.ExecutionID == run.ExecutionID && proof.RequestDigest == run.RequestDigest
}

// NativeContextContinuationAcknowledgementMatches is the exact cross-check
// a caller makes before accepting a continuation outcome: both valid, the
// same operation id and request digest, zero history messages sent,
// status accepted or replayed, and an observed boundary from the continued
// run, observed no earlier than the expected one and equal to it.
func NativeContextContinuationAcknowledgementMatches(req *NativeContextContinuationRequest, ack *NativeContextContinuationAcknowledgement) bool {
	if req == nil || ack == nil {
		return false
	}
	if _, err := Validate(KindNativeContextContinuationRequest, NativeContextContinuationRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindNativeContextContinuationAcknowledgement, NativeContextContinuationAcknowledgementSchema, ack); err != nil {
		return false
	}
	if ack.OperationID != req.OperationID || ack.RequestDigest != req.RequestDigest || ack.HistoryMessagesSent != 0 ||
		(ack.Status != ContinuationStatusAccepted && ack.Status != ContinuationStatusReplayed) {
		return false
	}
	actual := ack.ActualBoundary
	if !BoundaryProofMatchesRun(req.Run, actual) {
		return false
	}
	observed, ok1 := pcEpochMillis(actual.ObservedAt)
	expected, ok2 := pcEpochMillis(req.ExpectedBoundary.ObservedAt)
	return ok1 && ok2 && observed >= expected && pcSameWire(actual.Boundary, req.ExpectedBoundary.Boundary)
}
