package contract

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of context transfer.
const (
	KindContextPlanAcceptance  = "ContextPlanAcceptance"
	KindContextTransferRequest = "ContextTransferRequest"
	KindContextTransferReceipt = "ContextTransferReceipt"
	KindContextTransferResult  = "ContextTransferResult"
)

// Who accepted a context plan. A plan that changes content or carries a
// partial context needs a user or policy; system acceptance is only for a
// complete, unchanged transfer.
const (
	AcceptedByUser   = "user"
	AcceptedByPolicy = "policy"
	AcceptedBySystem = "system"
)

// Transfer outcomes: first admission, exact replay of an admitted
// request, a different request under the same operation id, and outcomes
// the caller cannot know (unknown, transport_failure).
const (
	TransferStatusAccepted         = "accepted"
	TransferStatusReplayed         = "replayed"
	TransferStatusConflict         = "conflict"
	TransferStatusUnknown          = "unknown"
	TransferStatusTransportFailure = "transport_failure"
)

// ContextPlanAcceptance records who accepted which plan, and when.
type ContextPlanAcceptance struct {
	PlanDigest string `json:"planDigest"`
	AcceptedAt string `json:"acceptedAt"`
	AcceptedBy string `json:"acceptedBy"`
}

// ContextTransferRequest asks a provider to admit an accepted context into
// one fresh session. It binds an operation id to the accepted transfer
// plan: RequestDigest covers the operation id, the plan digest, the
// acceptance and the creation inputs, so a retry with anything changed is
// a conflict.
//
// A destination without an environment id (unbound) lets the provider
// create the environment; it then requires the inline Profile, whose
// canonical digest must be the destination's profileDigest. Workspace and
// Resources are optional creation inputs, validated as a WorkspaceRequest
// and a ResourceRequest and kept here as their JSON members; both are
// frozen into the request digest.
type ContextTransferRequest struct {
	OperationID   string                      `json:"operationId"`
	RequestDigest string                      `json:"requestDigest"`
	Plan          PortableContextTransferPlan `json:"plan"`
	Acceptance    ContextPlanAcceptance       `json:"acceptance"`
	Profile       *profile.Profile            `json:"profile,omitzero"`
	Workspace     map[string]canonjson.Value  `json:"workspace,omitzero"`
	Resources     map[string]canonjson.Value  `json:"resources,omitzero"`
}

// ContextTransferInputs are the creation inputs of a transfer: the inline
// profile (required for an unbound destination) and optional workspace and
// resource requests.
type ContextTransferInputs struct {
	Profile   *profile.Profile
	Workspace map[string]canonjson.Value
	Resources map[string]canonjson.Value
}

// ContextTransferReceipt proves that one fresh provider session admitted a
// transferred context. It repeats the exact request, plan and context
// digests, the source boundary and the destination as requested, names the
// session that was created (provider, environment, session, run,
// execution), the operation it was created for and when, which messages
// were transferred, and when the context was admitted.
//
// OmittedMessageIds is kept from the earlier contract; a destination never
// learns which messages were omitted (they do not travel), so an
// Interface 5 receipt lists none.
type ContextTransferReceipt struct {
	Status                       string                        `json:"status"`
	OperationID                  string                        `json:"operationId"`
	RequestDigest                string                        `json:"requestDigest"`
	PlanDigest                   string                        `json:"planDigest"`
	ContextDigest                string                        `json:"contextDigest"`
	Source                       PortableContextSourceBoundary `json:"source"`
	Destination                  PortableContextDestination    `json:"destination"`
	Provider                     string                        `json:"provider"`
	EnvironmentID                string                        `json:"environmentId"`
	SessionID                    string                        `json:"sessionId"`
	RunID                        string                        `json:"runId"`
	ExecutionID                  string                        `json:"executionId"`
	SessionCreatedForOperationID string                        `json:"sessionCreatedForOperationId"`
	SessionCreatedAt             string                        `json:"sessionCreatedAt"`
	TransferredMessageIDs        []string                      `json:"transferredMessageIds"`
	OmittedMessageIDs            []string                      `json:"omittedMessageIds"`
	AdmittedAt                   string                        `json:"admittedAt"`
}

// ContextTransferConflict says the operation id is already bound to a
// different request (ExistingRequestDigest); nothing was dispatched.
type ContextTransferConflict struct {
	Status                string `json:"status"`
	OperationID           string `json:"operationId"`
	RequestDigest         string `json:"requestDigest"`
	ExistingRequestDigest string `json:"existingRequestDigest"`
}

// ContextTransferFailure is an outcome the caller cannot know (status
// unknown or transport_failure), with a message and whether a retry of the
// same request is safe.
type ContextTransferFailure struct {
	Status        string `json:"status"`
	OperationID   string `json:"operationId"`
	RequestDigest string `json:"requestDigest"`
	Message       string `json:"message"`
	Retryable     bool   `json:"retryable"`
}

// ContextTransferResult is a provider's answer to a transfer request:
// exactly one of a receipt (accepted or replayed), a conflict, or a
// failure.
type ContextTransferResult struct {
	Receipt  *ContextTransferReceipt
	Conflict *ContextTransferConflict
	Failure  *ContextTransferFailure
}

// Status returns the result's status, or "" for an empty result.
func (r ContextTransferResult) Status() string {
	switch {
	case r.Receipt != nil:
		return r.Receipt.Status
	case r.Conflict != nil:
		return r.Conflict.Status
	case r.Failure != nil:
		return r.Failure.Status
	}
	return ""
}

// Binding returns the operation id and request digest the result answers.
func (r ContextTransferResult) Binding() (operationID, requestDigest string) {
	switch {
	case r.Receipt != nil:
		return r.Receipt.OperationID, r.Receipt.RequestDigest
	case r.Conflict != nil:
		return r.Conflict.OperationID, r.Conflict.RequestDigest
	case r.Failure != nil:
		return r.Failure.OperationID, r.Failure.RequestDigest
	}
	return "", ""
}

// MarshalValue implements canonjson.ValueMarshaler.
func (r ContextTransferResult) MarshalValue() (canonjson.Value, error) {
	switch {
	case r.Receipt != nil:
		return canonjson.ToValue(r.Receipt)
	case r.Conflict != nil:
		return canonjson.ToValue(r.Conflict)
	case r.Failure != nil:
		return canonjson.ToValue(r.Failure)
	}
	return canonjson.Value{}, errors.New("context transfer result has no outcome")
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (r *ContextTransferResult) UnmarshalValue(v canonjson.Value) error {
	*r = ContextTransferResult{}
	switch status := pcStr(v, "status"); status {
	case TransferStatusAccepted, TransferStatusReplayed:
		r.Receipt = new(ContextTransferReceipt)
		return canonjson.FromValue(v, r.Receipt)
	case TransferStatusConflict:
		r.Conflict = new(ContextTransferConflict)
		return canonjson.FromValue(v, r.Conflict)
	case TransferStatusUnknown, TransferStatusTransportFailure:
		r.Failure = new(ContextTransferFailure)
		return canonjson.FromValue(v, r.Failure)
	default:
		return fmt.Errorf("unknown context transfer status %q", status)
	}
}

var (
	// ContextPlanAcceptanceSchema is the acceptance record shape.
	ContextPlanAcceptanceSchema = schema.Object(
		schema.Req("planDigest", Digest),
		schema.Req("acceptedAt", pcTimestamp),
		schema.Req("acceptedBy", schema.Enum(AcceptedByUser, AcceptedByPolicy, AcceptedBySystem)),
	)

	pcTransferRequestMaterialSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("plan", PortableContextTransferPlanSchema),
		schema.Req("acceptance", ContextPlanAcceptanceSchema),
		schema.Opt("profile", profile.Schema),
		schema.Opt("workspace", WorkspaceRequestSchema),
		schema.Opt("resources", ResourceRequestSchema),
	)

	// ContextTransferRequestSchema is the Interface 5 transfer request
	// shape. It accepts only the transfer plan representation; a request
	// carrying a complete local plan is refused.
	ContextTransferRequestSchema = pcTransferRequestMaterialSchema.
					Extend(schema.Req("requestDigest", Digest)).
					Refine(pcCheckTransferRequest)

	// ContextTransferReceiptSchema is the receipt shape (accepted or
	// replayed).
	ContextTransferReceiptSchema = pcCurrent.receipt

	// ContextTransferResultSchema is the transfer result shape.
	ContextTransferResultSchema = pcCurrent.result
)

// pcTransferRequestDigest computes the digest of an accepted request
// value: operation id, plan digest, acceptance, the inline profile's
// digest, workspace and resources.
func pcTransferRequestDigest(v canonjson.Value) (string, error) {
	plan, _ := v.Get("plan")
	planDigest, _ := plan.Get("planDigest")
	acceptance, _ := v.Get("acceptance")
	members := []canonjson.Member{
		{Name: "operationId", Value: canonjson.StringValue(pcStr(v, "operationId"))},
		{Name: "planDigest", Value: planDigest},
		{Name: "acceptance", Value: acceptance},
	}
	if p, ok := v.Get("profile"); ok {
		d, err := profile.DigestValue(p)
		if err != nil {
			return "", err
		}
		members = append(members, canonjson.Member{Name: "profileDigest", Value: canonjson.StringValue(d)})
	}
	for _, name := range []string{"workspace", "resources"} {
		if x, ok := v.Get(name); ok {
			members = append(members, canonjson.Member{Name: name, Value: x})
		}
	}
	return pcWireDigest(canonjson.ObjectValue(members))
}

func pcCheckTransferRequest(c *schema.Context, v canonjson.Value) {
	if pcIssuesWithin(c, "requestDigest") {
		pcAtRoot(c, "the context transfer request material is invalid, so its digest cannot be computed")
		return
	}
	plan, _ := v.Get("plan")
	acceptance, _ := v.Get("acceptance")
	if pcStr(acceptance, "planDigest") != pcStr(plan, "planDigest") {
		c.Custom("the accepted plan digest must match the transferred plan", "acceptance", "planDigest")
	}
	if required, _ := plan.Get("requiresAcceptance"); required.Bool() && pcStr(acceptance, "acceptedBy") == AcceptedBySystem {
		c.Custom("a transformed or partial plan requires user or policy acceptance", "acceptance", "acceptedBy")
	}
	destination, _ := plan.Get("destination")
	_, bound := destination.Get("environmentId")
	p, hasProfile := v.Get("profile")
	if !bound && !hasProfile {
		c.Custom("an unbound destination requires the inline profile", "profile")
	}
	if hasProfile {
		if d, err := profile.DigestValue(p); err != nil || d != pcStr(destination, "profileDigest") {
			c.Custom("the inline profile must have the destination's accepted profile digest", "profile")
		}
	}
	want, err := pcTransferRequestDigest(v)
	if err != nil {
		pcAtRoot(c, "the context transfer request material exceeds the contract bounds or is not canonical JSON")
		return
	}
	if pcStr(v, "requestDigest") != want {
		c.Custom("context transfer request digest does not match its content", "requestDigest")
	}
}

// pcReceiptSchemas builds the receipt and result schemas around a
// destination shape.
func pcReceiptSchemas(destination schema.Node) (receipt, result schema.Node) {
	variant := func(status string) schema.Node {
		return schema.Object(
			schema.Req("status", schema.LiteralString(status)),
			schema.Req("operationId", BoundedIdentifier),
			schema.Req("requestDigest", Digest),
			schema.Req("planDigest", Digest),
			schema.Req("contextDigest", Digest),
			schema.Req("source", PortableContextSourceBoundarySchema),
			schema.Req("destination", destination),
			schema.Req("provider", BoundedIdentifier),
			schema.Req("environmentId", BoundedIdentifier),
			schema.Req("sessionId", BoundedIdentifier),
			schema.Req("runId", BoundedIdentifier),
			schema.Req("executionId", BoundedIdentifier),
			schema.Req("sessionCreatedForOperationId", BoundedIdentifier),
			schema.Req("sessionCreatedAt", pcTimestamp),
			schema.Req("transferredMessageIds", schema.Array(BoundedIdentifier).MaxItems(MaxArrayLength)),
			schema.Req("omittedMessageIds", schema.Array(BoundedIdentifier).MaxItems(MaxArrayLength)),
			schema.Req("admittedAt", pcTimestamp),
		).Refine(pcCheckReceipt)
	}
	accepted, replayed := variant(TransferStatusAccepted), variant(TransferStatusReplayed)
	receipt = schema.Discriminated("status", map[string]schema.Node{
		TransferStatusAccepted: accepted,
		TransferStatusReplayed: replayed,
	})
	failure := schema.Object(
		schema.Req("status", schema.Enum(TransferStatusUnknown, TransferStatusTransportFailure)),
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Req("message", pcText),
		schema.Req("retryable", schema.Bool()),
	)
	result = schema.Refined(schema.Discriminated("status", map[string]schema.Node{
		TransferStatusAccepted: accepted,
		TransferStatusReplayed: replayed,
		TransferStatusConflict: schema.Object(
			schema.Req("status", schema.LiteralString(TransferStatusConflict)),
			schema.Req("operationId", BoundedIdentifier),
			schema.Req("requestDigest", Digest),
			schema.Req("existingRequestDigest", Digest),
		),
		TransferStatusUnknown:          failure,
		TransferStatusTransportFailure: failure,
	}), func(c *schema.Context, v canonjson.Value) {
		if pcStr(v, "status") == TransferStatusConflict && pcStr(v, "existingRequestDigest") == pcStr(v, "requestDigest") {
			c.Custom("a transfer conflict must identify a different request", "existingRequestDigest")
		}
	})
	return receipt, result
}

func pcStrings(v canonjson.Value, name string) []string {
	a, _ := v.Get(name)
	out := make([]string, 0, a.Len())
	for _, item := range a.Items() {
		out = append(out, item.Str())
	}
	return out
}

func pcCheckReceipt(c *schema.Context, v canonjson.Value) {
	transferred, omitted := pcStrings(v, "transferredMessageIds"), pcStrings(v, "omittedMessageIds")
	if !pcUnique(transferred) {
		c.Custom("transferred message ids must be unique", "transferredMessageIds")
	}
	if !pcUnique(omitted) {
		c.Custom("omitted message ids must be unique", "omittedMessageIds")
	}
	in := make(map[string]struct{}, len(transferred))
	for _, id := range transferred {
		in[id] = struct{}{}
	}
	for _, id := range omitted {
		if _, both := in[id]; both {
			c.Custom("a message cannot be both transferred and omitted", "omittedMessageIds")
			break
		}
	}
	created, ok1 := pcEpochMillis(pcStr(v, "sessionCreatedAt"))
	admitted, ok2 := pcEpochMillis(pcStr(v, "admittedAt"))
	if ok1 && ok2 && created > admitted {
		c.Custom("the destination session must exist before context admission", "sessionCreatedAt")
	}
}

// CreateContextTransferRequest validates a local plan, projects it onto
// its transfer plan and binds operationID, the acceptance record and the
// creation inputs into a validated request. It refuses system acceptance
// of a plan that needs a user or policy, an acceptance of another plan,
// and an unbound destination without its profile.
func CreateContextTransferRequest(operationID string, plan *PortableContextPlan, acceptance ContextPlanAcceptance, inputs ContextTransferInputs) (*ContextTransferRequest, error) {
	tp, err := ProjectPortableContextPlan(plan)
	if err != nil {
		return nil, err
	}
	req := &ContextTransferRequest{OperationID: operationID, Plan: *tp, Acceptance: acceptance,
		Profile: inputs.Profile, Workspace: inputs.Workspace, Resources: inputs.Resources}
	v, err := canonjson.ToValue(req)
	if err != nil {
		return nil, err
	}
	material, err := schema.Run(KindContextTransferRequest, pcTransferRequestMaterialSchema, withoutMember(v, "requestDigest"))
	if err != nil {
		return nil, err
	}
	if req.RequestDigest, err = pcTransferRequestDigest(material); err != nil {
		return nil, err
	}
	return pcFromValueOf[ContextTransferRequest](KindContextTransferRequest, ContextTransferRequestSchema, req)
}

// ErrLegacyContextTransferRequest is matched (errors.Is) by the refusal of
// a transfer request in the pre-Interface 5 shape, which carried the
// complete local plan. Such a request is never reinterpreted: read stored
// legacy records with ParseLegacyContextTransferRequest and settle them
// through the versioned recovery path.
var ErrLegacyContextTransferRequest = errors.New("context transfer request uses the legacy (pre-Interface 5) plan representation")

// LegacyContextTransferError is the refusal of a legacy-shaped transfer
// request. It unwraps to both the *schema.Error and
// ErrLegacyContextTransferRequest.
type LegacyContextTransferError struct {
	Err *schema.Error
}

// Error describes the legacy refusal and its issues.
func (e *LegacyContextTransferError) Error() string {
	return ErrLegacyContextTransferRequest.Error() + ": " + e.Err.Error()
}

// Unwrap returns the schema refusal and ErrLegacyContextTransferRequest.
func (e *LegacyContextTransferError) Unwrap() []error {
	return []error{e.Err, ErrLegacyContextTransferRequest}
}

// pcLegacyShaped reports whether a refused request carries a complete
// local plan (the legacy representation).
func pcLegacyShaped(v canonjson.Value) bool {
	plan, ok := v.Get("plan")
	if !ok || plan.Kind() != canonjson.Object {
		return false
	}
	_, hasPlanDigest := plan.Get("planDigest")
	_, hasContext := plan.Get("context")
	_, hasDigest := plan.Get("digest")
	return !hasPlanDigest && (hasContext || hasDigest)
}

// ParseContextTransferRequest decodes and validates an Interface 5
// transfer request. A legacy-shaped request is refused with a
// *LegacyContextTransferError.
func ParseContextTransferRequest(data []byte) (*ContextTransferRequest, error) {
	v, err := schema.Decode(KindContextTransferRequest, data)
	if err != nil {
		return nil, err
	}
	req, err := FromValue[ContextTransferRequest](KindContextTransferRequest, ContextTransferRequestSchema, v)
	var se *schema.Error
	if err != nil && errors.As(err, &se) && pcLegacyShaped(v) {
		return nil, &LegacyContextTransferError{Err: se}
	}
	return req, err
}

// ParseContextTransferReceipt decodes and validates a receipt.
func ParseContextTransferReceipt(data []byte) (*ContextTransferReceipt, error) {
	return Parse[ContextTransferReceipt](KindContextTransferReceipt, ContextTransferReceiptSchema, data)
}

// ParseContextTransferResult decodes and validates a transfer result.
func ParseContextTransferResult(data []byte) (*ContextTransferResult, error) {
	return Parse[ContextTransferResult](KindContextTransferResult, ContextTransferResultSchema, data)
}

// ContextTransferReceiptMatches is the exact cross-check a caller makes
// before committing a receipt: both valid; acceptance ≤ session creation ≤
// admission; the same operation id, request digest and plan digest; the
// context digest of the context the plan delivers; the plan's source
// boundary and exactly its destination (an unbound one stays unbound); the
// destination's provider, session, run and execution, and its environment
// when it named one; a session created for this operation; an environment,
// session, run and execution all different from the source's (a fresh
// session); the plan's messages as the transferred ones, and no omitted
// ids (the destination cannot know them).
func ContextTransferReceiptMatches(req *ContextTransferRequest, receipt *ContextTransferReceipt) bool {
	if req == nil || receipt == nil {
		return false
	}
	if _, err := Validate(KindContextTransferRequest, ContextTransferRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindContextTransferReceipt, ContextTransferReceiptSchema, receipt); err != nil {
		return false
	}
	ctx, err := req.Plan.Context()
	if err != nil {
		return false
	}
	ids := make([]string, 0, len(req.Plan.Messages))
	for _, m := range req.Plan.Messages {
		ids = append(ids, m.ID)
	}
	dest := req.Plan.Destination
	if dest.EnvironmentID != nil && receipt.EnvironmentID != *dest.EnvironmentID {
		return false
	}
	return pcReceiptCommon(receipt, req.OperationID, req.RequestDigest, req.Plan.PlanDigest, ctx.Digest, req.Acceptance.AcceptedAt, req.Plan.Source, dest) &&
		pcSameStringSet(receipt.TransferredMessageIDs, ids) && len(receipt.OmittedMessageIDs) == 0
}

// pcReceiptCommon holds the receipt rules both interface generations
// share.
func pcReceiptCommon(r *ContextTransferReceipt, operationID, requestDigest, planDigest, contextDigest, acceptedAt string, source PortableContextSourceBoundary, dest PortableContextDestination) bool {
	created, ok1 := pcEpochMillis(r.SessionCreatedAt)
	accepted, ok2 := pcEpochMillis(acceptedAt)
	admitted, ok3 := pcEpochMillis(r.AdmittedAt)
	return ok1 && ok2 && ok3 && created >= accepted && created <= admitted &&
		r.OperationID == operationID && r.RequestDigest == requestDigest &&
		r.PlanDigest == planDigest && r.ContextDigest == contextDigest &&
		pcSameWire(r.Source, source) && pcSameWire(r.Destination, dest) &&
		r.Provider == dest.Provider && r.SessionID == dest.SessionID &&
		r.RunID == dest.RunID && r.ExecutionID == dest.ExecutionID &&
		r.SessionCreatedForOperationID == operationID &&
		r.EnvironmentID != source.EnvironmentID && r.SessionID != source.SessionID &&
		r.RunID != source.RunID && r.ExecutionID != source.ExecutionID
}

// ContextTransferResultMatchesRequest binds a transfer outcome to the
// exact operation before a caller accepts, retries or reports it: both
// valid, the same operation id and request digest for every outcome, and
// for accepted or replayed the full receipt check.
func ContextTransferResultMatchesRequest(req *ContextTransferRequest, res *ContextTransferResult) bool {
	if req == nil || res == nil {
		return false
	}
	if _, err := Validate(KindContextTransferRequest, ContextTransferRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindContextTransferResult, ContextTransferResultSchema, res); err != nil {
		return false
	}
	op, digest := res.Binding()
	if op != req.OperationID || digest != req.RequestDigest {
		return false
	}
	if res.Receipt != nil {
		return ContextTransferReceiptMatches(req, res.Receipt)
	}
	return true
}
