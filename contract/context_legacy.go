package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// The legacy (pre-Interface 5) portable context contract, for the
// versioned recovery path only. Interface 5 changed the plan digest
// algorithm, the transfer request shape (it carried the complete local
// plan) and let a destination leave its environment unbound. A receiver
// that upgrades must first preserve or settle the operation records it
// holds in the legacy shape: it reads them with these schemas, which are
// never used to admit a new transfer, and never reinterprets them as
// Interface 5 values.

// Kind names of the legacy contract.
const (
	KindLegacyPortableContextPlan    = "LegacyPortableContextPlan"
	KindLegacyContextTransferRequest = "LegacyContextTransferRequest"
)

// LegacyContextTransferRequest is a pre-Interface 5 transfer request: the
// operation id bound to the complete local plan and its acceptance;
// RequestDigest covers the operation id, the plan digest and the
// acceptance.
type LegacyContextTransferRequest struct {
	OperationID   string                `json:"operationId"`
	RequestDigest string                `json:"requestDigest"`
	Plan          PortableContextPlan   `json:"plan"`
	Acceptance    ContextPlanAcceptance `json:"acceptance"`
}

var (
	// LegacyPortableContextDestinationSchema is the legacy destination
	// (environmentId required).
	LegacyPortableContextDestinationSchema = pcLegacy.destination

	// LegacyPortableContextPlanSchema is the legacy plan: attachments of
	// the derived context keep their source index, and the digest covers
	// the whole plan.
	LegacyPortableContextPlanSchema = pcLegacy.plan

	// LegacyPortableContextPlanRequestSchema is the legacy plan request.
	LegacyPortableContextPlanRequestSchema = pcLegacy.planRequest

	// LegacyPortableContextPlanResultSchema is the legacy plan result.
	LegacyPortableContextPlanResultSchema = pcLegacy.planResult

	// LegacyContextTransferReceiptSchema is the legacy receipt.
	LegacyContextTransferReceiptSchema = pcLegacy.receipt

	// LegacyContextTransferResultSchema is the legacy transfer result.
	LegacyContextTransferResultSchema = pcLegacy.result

	// LegacyContextTransferRequestSchema is the legacy transfer request.
	LegacyContextTransferRequestSchema = schema.Object(
		schema.Req("operationId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Req("plan", pcLegacy.plan),
		schema.Req("acceptance", ContextPlanAcceptanceSchema),
	).Refine(pcCheckLegacyTransferRequest)
)

func pcCheckLegacyTransferRequest(c *schema.Context, v canonjson.Value) {
	if pcIssuesWithin(c, "requestDigest") {
		pcAtRoot(c, "the context transfer request material is invalid, so its digest cannot be computed")
		return
	}
	plan, _ := v.Get("plan")
	acceptance, _ := v.Get("acceptance")
	if pcStr(acceptance, "planDigest") != pcStr(plan, "digest") {
		c.Custom("accepted plan digest must match the executed plan", "acceptance", "planDigest")
	}
	planDigest, _ := plan.Get("digest")
	want, err := pcWireDigest(canonjson.ObjectValue([]canonjson.Member{
		{Name: "operationId", Value: canonjson.StringValue(pcStr(v, "operationId"))},
		{Name: "planDigest", Value: planDigest},
		{Name: "acceptance", Value: acceptance},
	}))
	if err != nil {
		pcAtRoot(c, "the context transfer request material exceeds the contract bounds or is not canonical JSON")
		return
	}
	if pcStr(v, "requestDigest") != want {
		c.Custom("context transfer request digest does not match its content", "requestDigest")
	}
	if required, _ := plan.Get("requiresAcceptance"); required.Bool() && pcStr(acceptance, "acceptedBy") == AcceptedBySystem {
		c.Custom("a transformed or partial plan requires user or policy acceptance", "acceptance", "acceptedBy")
	}
}

// ParseLegacyContextTransferRequest reads a stored pre-Interface 5
// transfer request for the recovery path.
func ParseLegacyContextTransferRequest(data []byte) (*LegacyContextTransferRequest, error) {
	return Parse[LegacyContextTransferRequest](KindLegacyContextTransferRequest, LegacyContextTransferRequestSchema, data)
}

// ParseLegacyContextTransferResult reads a stored pre-Interface 5
// transfer result for the recovery path.
func ParseLegacyContextTransferResult(data []byte) (*ContextTransferResult, error) {
	return Parse[ContextTransferResult](KindContextTransferResult, LegacyContextTransferResultSchema, data)
}

// LegacyContextTransferResultMatchesRequest applies the pre-Interface 5
// cross-check to a stored legacy request and result: the same operation id
// and request digest, and for a receipt the legacy receipt rules (bound
// destination, omitted ids equal to the plan's omitted messages).
func LegacyContextTransferResultMatchesRequest(req *LegacyContextTransferRequest, res *ContextTransferResult) bool {
	if req == nil || res == nil {
		return false
	}
	if _, err := Validate(KindLegacyContextTransferRequest, LegacyContextTransferRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindContextTransferResult, LegacyContextTransferResultSchema, res); err != nil {
		return false
	}
	op, digest := res.Binding()
	if op != req.OperationID || digest != req.RequestDigest {
		return false
	}
	r := res.Receipt
	if r == nil {
		return true
	}
	var included, omitted []string
	for _, mp := range req.Plan.Messages {
		if mp.Action == ContextActionInclude {
			included = append(included, mp.MessageID)
		} else if mp.Action == ContextActionOmit {
			omitted = append(omitted, mp.MessageID)
		}
	}
	dest := req.Plan.Destination
	return dest.EnvironmentID != nil && r.EnvironmentID == *dest.EnvironmentID &&
		pcReceiptCommon(r, req.OperationID, req.RequestDigest, req.Plan.Digest, req.Plan.Context.Digest, req.Acceptance.AcceptedAt, req.Plan.Source.Source, dest) &&
		pcSameStringSet(r.TransferredMessageIDs, included) && pcSameStringSet(r.OmittedMessageIDs, omitted)
}
