package contract

import "github.com/agentrt/agentrt/schema"

// Kind names of plan requests and results.
const (
	KindPortableContextPlanRequest = "PortableContextPlanRequest"
	KindPortableContextPlanResult  = "PortableContextPlanResult"
)

// Plan result statuses.
const (
	PlanStatusReady       = "ready"
	PlanStatusOverLimit   = "over_limit"
	PlanStatusUnsupported = "unsupported"
)

// PortableContextPlanRequest asks a planner to plan the transfer of source
// to destination, optionally within an input token budget. RequestDigest
// is the digest of every other member, so every result can name the exact
// request it answers.
type PortableContextPlanRequest struct {
	RequestID      string                      `json:"requestId"`
	RequestDigest  string                      `json:"requestDigest"`
	Source         PortableConversationContext `json:"source"`
	Destination    PortableContextDestination  `json:"destination"`
	MaxInputTokens *int64                      `json:"maxInputTokens,omitzero"`
}

// PortableContextPlanResult is a planner's answer. Every status repeats
// the request id and digest. ready carries the plan; over_limit carries
// the budget, the estimate when known, optionally a message id where a
// shorter context could start, and a message; unsupported carries a
// message.
type PortableContextPlanResult struct {
	Status                     string               `json:"status"`
	RequestID                  string               `json:"requestId"`
	RequestDigest              string               `json:"requestDigest"`
	Plan                       *PortableContextPlan `json:"plan,omitzero"`
	EstimatedTokens            *int64               `json:"estimatedTokens,omitzero"`
	MaxInputTokens             *int64               `json:"maxInputTokens,omitzero"`
	SuggestedBoundaryMessageID *string              `json:"suggestedBoundaryMessageId,omitzero"`
	Message                    *string              `json:"message,omitzero"`
}

var (
	// PortableContextPlanRequestSchema is the plan request shape; its
	// requestDigest must match its content.
	PortableContextPlanRequestSchema = pcCurrent.planRequest

	// PortableContextPlanResultSchema is the plan result shape.
	PortableContextPlanResultSchema = pcCurrent.planResult
)

func pcPlanResultSchema(plan schema.Node) schema.Node {
	binding := func(status string, fields ...schema.Field) schema.Node {
		all := append([]schema.Field{
			schema.Req("status", schema.LiteralString(status)),
			schema.Req("requestId", BoundedIdentifier),
			schema.Req("requestDigest", Digest),
		}, fields...)
		return schema.Object(all...)
	}
	return schema.Discriminated("status", map[string]schema.Node{
		PlanStatusReady: binding(PlanStatusReady, schema.Req("plan", plan)),
		PlanStatusOverLimit: binding(PlanStatusOverLimit,
			schema.Opt("estimatedTokens", pcIndex),
			schema.Req("maxInputTokens", pcPositive),
			schema.Opt("suggestedBoundaryMessageId", BoundedIdentifier),
			schema.Req("message", pcText),
		),
		PlanStatusUnsupported: binding(PlanStatusUnsupported, schema.Req("message", pcText)),
	})
}

// NewPortableContextPlanRequest builds a validated plan request with its
// digest.
func NewPortableContextPlanRequest(requestID string, source PortableConversationContext, destination PortableContextDestination, maxInputTokens *int64) (*PortableContextPlanRequest, error) {
	r := &PortableContextPlanRequest{RequestID: requestID, Source: source, Destination: destination, MaxInputTokens: maxInputTokens}
	digest, err := pcMaterialDigest(KindPortableContextPlanRequest, pcCurrent.planRequestMaterial, r, "requestDigest")
	if err != nil {
		return nil, err
	}
	r.RequestDigest = digest
	return pcFromValueOf[PortableContextPlanRequest](KindPortableContextPlanRequest, PortableContextPlanRequestSchema, r)
}

// ParsePortableContextPlanRequest decodes and validates a plan request.
func ParsePortableContextPlanRequest(data []byte) (*PortableContextPlanRequest, error) {
	return Parse[PortableContextPlanRequest](KindPortableContextPlanRequest, PortableContextPlanRequestSchema, data)
}

// ParsePortableContextPlanResult decodes and validates a plan result.
func ParsePortableContextPlanResult(data []byte) (*PortableContextPlanResult, error) {
	return Parse[PortableContextPlanResult](KindPortableContextPlanResult, PortableContextPlanResultSchema, data)
}

// PortableContextPlanResultMatchesRequest reports whether res answers
// exactly req: both valid, the same request id and digest, and
//   - ready: the plan's source and destination are the request's, and a
//     plan for a request with a budget has an estimate within it;
//   - over_limit: the request had a budget, the result repeats it, a
//     known estimate exceeds it, and a suggested boundary names a source
//     message;
//   - unsupported: nothing more.
func PortableContextPlanResultMatchesRequest(req *PortableContextPlanRequest, res *PortableContextPlanResult) bool {
	return pcPlanResultMatches(pcCurrent, req, res)
}

func pcPlanResultMatches(s pcSchemaSet, req *PortableContextPlanRequest, res *PortableContextPlanResult) bool {
	if req == nil || res == nil {
		return false
	}
	if _, err := Validate(KindPortableContextPlanRequest, s.planRequest, req); err != nil {
		return false
	}
	if _, err := Validate(KindPortableContextPlanResult, s.planResult, res); err != nil {
		return false
	}
	if res.RequestID != req.RequestID || res.RequestDigest != req.RequestDigest {
		return false
	}
	switch res.Status {
	case PlanStatusReady:
		if res.Plan == nil || !pcSameWire(res.Plan.Source, req.Source) || !pcSameWire(res.Plan.Destination, req.Destination) {
			return false
		}
		if req.MaxInputTokens == nil {
			return true
		}
		return res.Plan.EstimatedTokens != nil && *res.Plan.EstimatedTokens <= *req.MaxInputTokens
	case PlanStatusOverLimit:
		if req.MaxInputTokens == nil || res.MaxInputTokens == nil || *res.MaxInputTokens != *req.MaxInputTokens {
			return false
		}
		if res.EstimatedTokens != nil && *res.EstimatedTokens <= *req.MaxInputTokens {
			return false
		}
		if res.SuggestedBoundaryMessageID == nil {
			return true
		}
		for _, m := range req.Source.Messages {
			if m.ID == *res.SuggestedBoundaryMessageID {
				return true
			}
		}
		return false
	case PlanStatusUnsupported:
		return true
	default:
		return false
	}
}
