package contract

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of portable context plans.
const (
	KindPortableContextDestination = "PortableContextDestination"
	KindPortableContextPartPlan    = "PortableContextPartPlan"
	KindPortableContextMessagePlan = "PortableContextMessagePlan"
	KindPortableContextPlan        = "PortableContextPlan"
)

// Plan decisions. A message is included or omitted; a part is included as
// it is, transformed into a portable output, or omitted.
const (
	ContextActionInclude   = "include"
	ContextActionTransform = "transform"
	ContextActionOmit      = "omit"
)

// PortableContextDestination names the fresh session that is to receive a
// portable context: its runner, provider, session, run and execution, the
// model if one is chosen, and the digest of the agent profile it runs.
// EnvironmentID is absent when the provider allocates the environment at
// transfer time (an unbound destination); the receipt then reports the
// environment it created.
type PortableContextDestination struct {
	Runner        string  `json:"runner"`
	Provider      string  `json:"provider"`
	EnvironmentID *string `json:"environmentId,omitzero"`
	SessionID     string  `json:"sessionId"`
	RunID         string  `json:"runId"`
	ExecutionID   string  `json:"executionId"`
	Model         *string `json:"model,omitzero"`
	ProfileDigest string  `json:"profileDigest"`
}

// Bound reports whether the destination names its environment.
func (d PortableContextDestination) Bound() bool { return d.EnvironmentID != nil }

// PortableContextPartPlan is the decision about one source part: include
// it as it is (it must then be a valid InputPart), transform it into
// Output, or omit it. A transformed or omitted part says why in Reason.
type PortableContextPartPlan struct {
	PartIndex int64      `json:"partIndex"`
	Action    string     `json:"action"`
	Output    *InputPart `json:"output,omitzero"`
	Reason    *string    `json:"reason,omitzero"`
}

// PortableContextMessagePlan is the decision about one source message and
// every one of its parts. An omitted message says why and omits every
// part.
type PortableContextMessagePlan struct {
	MessageID string                    `json:"messageId"`
	Action    string                    `json:"action"`
	Parts     []PortableContextPartPlan `json:"parts"`
	Reason    *string                   `json:"reason,omitzero"`
}

// PortableContextPlan is the complete local plan of a fresh-session
// transfer: the immutable source, every message and part decision, the
// destination, the exact context those decisions derive, an optional
// token estimate, whether a user or policy must accept it, and its digest.
// It stays with the caller; only its projection, a
// PortableContextTransferPlan, travels to the destination.
//
// The derived context lists included messages in source order with their
// kept parts; its attachments are those of included parts, indexed by the
// part's position in the derived message. Digest is the Interface 5 plan
// digest: the digest of the projection's header, commitments and review
// digest (see PortableContextTransferPlan), so the destination can verify
// it without the omitted content.
type PortableContextPlan struct {
	PlanID             string                       `json:"planId"`
	Source             PortableConversationContext  `json:"source"`
	Destination        PortableContextDestination   `json:"destination"`
	Messages           []PortableContextMessagePlan `json:"messages"`
	Context            PortableConversationContext  `json:"context"`
	EstimatedTokens    *int64                       `json:"estimatedTokens,omitzero"`
	RequiresAcceptance bool                         `json:"requiresAcceptance"`
	Digest             string                       `json:"digest"`
}

// pcVersion selects the interface generation of the plan and transfer
// rules: pcV5 is the current contract, pcV4 the legacy (1.x–4.x) one that
// only the recovery path reads.
type pcVersion int

const (
	pcV4 pcVersion = 4
	pcV5 pcVersion = 5
)

var (
	// PortableContextPartPlanSchema is the part decision shape: a
	// transform has an output, only a transform has one, and a transform
	// or omission has a reason.
	PortableContextPartPlanSchema = schema.Object(
		schema.Req("partIndex", pcIndex),
		schema.Req("action", schema.Enum(ContextActionInclude, ContextActionTransform, ContextActionOmit)),
		schema.Opt("output", InputPartSchema),
		schema.Opt("reason", pcText),
	).Refine(pcCheckPartPlan)

	// PortableContextMessagePlanSchema is the message decision shape.
	PortableContextMessagePlanSchema = schema.Object(
		schema.Req("messageId", BoundedIdentifier),
		schema.Req("action", schema.Enum(ContextActionInclude, ContextActionOmit)),
		schema.Req("parts", schema.Array(PortableContextPartPlanSchema).MaxItems(MaxArrayLength)),
		schema.Opt("reason", pcText),
	).Refine(pcCheckMessagePlan)

	// PortableContextDestinationSchema is the Interface 5 destination
	// shape (environmentId optional).
	PortableContextDestinationSchema = pcCurrent.destination

	// PortableContextPlanSchema is the Interface 5 local plan shape with
	// every decision rule and the Interface 5 plan digest.
	PortableContextPlanSchema = pcCurrent.plan
)

func pcCheckPartPlan(c *schema.Context, v canonjson.Value) {
	action := pcStr(v, "action")
	_, hasOutput := v.Get("output")
	_, hasReason := v.Get("reason")
	if action == ContextActionTransform && !hasOutput {
		c.Custom("a transformed part must include its portable output", "output")
	}
	if action != ContextActionTransform && hasOutput {
		c.Custom("only a transformed part may include portable output", "output")
	}
	if action != ContextActionInclude && !hasReason {
		c.Custom("a transformed or omitted part must include a reason", "reason")
	}
}

func pcCheckMessagePlan(c *schema.Context, v canonjson.Value) {
	parts, _ := v.Get("parts")
	seen := make(map[float64]struct{}, parts.Len())
	unique := true
	for _, p := range parts.Items() {
		i, _ := p.Get("partIndex")
		if _, dup := seen[i.Float()]; dup {
			unique = false
		}
		seen[i.Float()] = struct{}{}
	}
	if !unique {
		c.Custom("part indexes must be unique within a message plan", "parts")
	}
	if pcStr(v, "action") != ContextActionOmit {
		return
	}
	if _, ok := v.Get("reason"); !ok {
		c.Custom("an omitted message must include a reason", "reason")
	}
	for _, p := range parts.Items() {
		if pcStr(p, "action") != ContextActionOmit {
			c.Custom("every part of an omitted message must be omitted", "parts")
			break
		}
	}
}

// pcSchemaSet holds the schemas whose rules differ between interface
// generations.
type pcSchemaSet struct {
	version             pcVersion
	destination         *schema.ObjectNode
	plan                *schema.ObjectNode
	planRequestMaterial *schema.ObjectNode
	planRequest         *schema.ObjectNode
	planResult          schema.Node
	receipt             schema.Node
	result              schema.Node
}

var (
	pcCurrent = pcBuildSchemas(pcV5)
	pcLegacy  = pcBuildSchemas(pcV4)
)

func pcBuildSchemas(version pcVersion) pcSchemaSet {
	s := pcSchemaSet{version: version}
	environment := schema.Opt("environmentId", BoundedIdentifier)
	if version == pcV4 {
		environment = schema.Req("environmentId", BoundedIdentifier)
	}
	s.destination = schema.Object(
		schema.Req("runner", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
		environment,
		schema.Req("sessionId", BoundedIdentifier),
		schema.Req("runId", BoundedIdentifier),
		schema.Req("executionId", BoundedIdentifier),
		schema.Opt("model", BoundedIdentifier),
		schema.Req("profileDigest", Digest),
	)
	s.plan = schema.Object(
		schema.Req("planId", BoundedIdentifier),
		schema.Req("source", PortableConversationContextSchema),
		schema.Req("destination", s.destination),
		schema.Req("messages", schema.Array(PortableContextMessagePlanSchema).MaxItems(MaxArrayLength)),
		schema.Req("context", PortableConversationContextSchema),
		schema.Opt("estimatedTokens", pcIndex),
		schema.Req("requiresAcceptance", schema.Bool()),
		schema.Req("digest", Digest),
	).Refine(pcCheckPlan(version))
	s.planRequestMaterial = schema.Object(
		schema.Req("requestId", BoundedIdentifier),
		schema.Req("source", PortableConversationContextSchema),
		schema.Req("destination", s.destination),
		schema.Opt("maxInputTokens", pcPositive),
	)
	s.planRequest = s.planRequestMaterial.
		Extend(schema.Req("requestDigest", Digest)).
		Refine(pcCheckRequestDigest("requestDigest", "portable context plan request digest does not match its content"))
	s.planResult = pcPlanResultSchema(s.plan)
	s.receipt, s.result = pcReceiptSchemas(s.destination)
	return s
}

// pcCheckRequestDigest is the refinement of a request whose digest is the
// pcWireDigest of every other member. When the material was itself
// refused, the digest cannot be computed and the whole document is
// refused.
func pcCheckRequestDigest(digestName, message string) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		if pcIssuesWithin(c, digestName) {
			pcAtRoot(c, "the request material is invalid, so its digest cannot be computed")
			return
		}
		want, err := pcWireDigest(withoutMember(v, digestName))
		if err != nil {
			pcAtRoot(c, "the request material exceeds the contract bounds or is not canonical JSON")
			return
		}
		if pcStr(v, digestName) != want {
			c.Custom(message, digestName)
		}
	}
}

// pcProblem is one rule a plan breaks, at a path relative to the plan.
type pcProblem struct {
	path    []string
	message string
}

func pcCheckPlan(version pcVersion) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		if pcIssuesWithin(c, "digest") {
			pcAtRoot(c, "the context plan material is invalid, so its digest cannot be computed")
			return
		}
		var plan PortableContextPlan
		if err := canonjson.FromValue(v, &plan); err != nil {
			c.Custom("the context plan does not fit its shape: " + err.Error())
			return
		}
		problems, err := pcPlanProblems(&plan, version)
		if err != nil {
			pcAtRoot(c, "the context plan material exceeds the contract bounds or is not canonical JSON")
			return
		}
		for _, p := range problems {
			c.Custom(p.message, p.path...)
		}
		want, err := pcPlanDigest(&plan, version)
		if err != nil {
			pcAtRoot(c, "the context plan material exceeds the contract bounds or is not canonical JSON")
			return
		}
		if plan.Digest != want {
			c.Custom("portable context plan digest does not match its content", "digest")
		}
	}
}

// pcDerivation is what a source and its decisions derive.
type pcDerivation struct {
	messages       []BackendMessage
	attachments    []PortableContextAttachmentRef
	problems       []pcProblem
	changesContent bool
}

func pcFindMessagePlan(decisions []PortableContextMessagePlan, id string) *PortableContextMessagePlan {
	for i := range decisions {
		if decisions[i].MessageID == id {
			return &decisions[i]
		}
	}
	return nil
}

func pcFindPartPlan(parts []PortableContextPartPlan, index int64) *PortableContextPartPlan {
	for i := range parts {
		if parts[i].PartIndex == index {
			return &parts[i]
		}
	}
	return nil
}

// pcDerive applies decisions to source. In Interface 5 the attachments of
// the derived context are indexed by the part's position in the derived
// message; before, they kept the source index.
func pcDerive(source *PortableConversationContext, decisions []PortableContextMessagePlan, version pcVersion) (pcDerivation, error) {
	d := pcDerivation{messages: []BackendMessage{}, attachments: []PortableContextAttachmentRef{}}
	for _, sm := range source.Messages {
		mp := pcFindMessagePlan(decisions, sm.ID)
		if mp == nil {
			continue
		}
		decided := make([]int64, 0, len(mp.Parts))
		for _, pp := range mp.Parts {
			decided = append(decided, pp.PartIndex)
		}
		slices.Sort(decided)
		complete := len(decided) == len(sm.Parts)
		for i := 0; complete && i < len(decided); i++ {
			complete = decided[i] == int64(i)
		}
		if !complete {
			d.problems = append(d.problems, pcProblem{[]string{"messages"}, fmt.Sprintf("message %q must decide every source part exactly once", sm.ID)})
			continue
		}
		if mp.Action == ContextActionOmit {
			continue
		}
		ordered := slices.Clone(mp.Parts)
		slices.SortStableFunc(ordered, func(a, b PortableContextPartPlan) int { return cmp.Compare(a.PartIndex, b.PartIndex) })
		outputs := make([]canonjson.Value, 0, len(ordered))
		for _, pp := range ordered {
			switch pp.Action {
			case ContextActionOmit:
				continue
			case ContextActionTransform:
				if pp.Output != nil {
					out, err := canonjson.ToValue(*pp.Output)
					if err != nil {
						return d, err
					}
					outputs = append(outputs, out)
				}
				continue
			}
			part, ok := AsInputPart(sm.Parts[pp.PartIndex])
			if !ok {
				d.problems = append(d.problems, pcProblem{[]string{"messages"}, fmt.Sprintf("message %q part %d must be transformed or omitted", sm.ID, pp.PartIndex)})
				continue
			}
			outputs = append(outputs, part)
		}
		if len(outputs) == 0 {
			d.problems = append(d.problems, pcProblem{[]string{"messages"}, fmt.Sprintf("included message %q must retain at least one part", sm.ID)})
		}
		m := sm
		m.Parts = outputs
		d.messages = append(d.messages, m)
	}
	for _, a := range source.Attachments {
		mp := pcFindMessagePlan(decisions, a.MessageID)
		if mp == nil || mp.Action != ContextActionInclude {
			continue
		}
		pp := pcFindPartPlan(mp.Parts, a.PartIndex)
		if pp == nil || pp.Action != ContextActionInclude {
			continue
		}
		ref := a
		if version >= pcV5 {
			ref.PartIndex = 0
			for _, other := range mp.Parts {
				if other.Action != ContextActionOmit && other.PartIndex < a.PartIndex {
					ref.PartIndex++
				}
			}
		}
		d.attachments = append(d.attachments, ref)
	}
	for _, mp := range decisions {
		if mp.Action == ContextActionOmit {
			d.changesContent = true
		}
		for _, pp := range mp.Parts {
			if pp.Action != ContextActionInclude {
				d.changesContent = true
			}
		}
	}
	return d, nil
}

// pcPlanProblems lists the decision rules plan breaks. An error means the
// material could not be digested at all.
func pcPlanProblems(plan *PortableContextPlan, version pcVersion) ([]pcProblem, error) {
	var out []pcProblem
	ids := make([]string, 0, len(plan.Messages))
	for _, mp := range plan.Messages {
		ids = append(ids, mp.MessageID)
	}
	if !pcUnique(ids) {
		out = append(out, pcProblem{[]string{"messages"}, "message ids must be unique within a context plan"})
	}
	sourceIDs := make([]string, 0, len(plan.Source.Messages))
	for _, m := range plan.Source.Messages {
		sourceIDs = append(sourceIDs, m.ID)
	}
	if !pcSameStringSet(ids, sourceIDs) {
		out = append(out, pcProblem{[]string{"messages"}, "a context plan must decide every source message exactly once"})
	}
	sameSource, err := pcSameDigest(plan.Context.Source, plan.Source.Source)
	if err != nil {
		return nil, err
	}
	if !sameSource {
		out = append(out, pcProblem{[]string{"context", "source"}, "output context source must match the immutable source"})
	}
	d, err := pcDerive(&plan.Source, plan.Messages, version)
	if err != nil {
		return nil, err
	}
	out = append(out, d.problems...)
	sameMessages, err := pcSameDigest(d.messages, plan.Context.Messages)
	if err != nil {
		return nil, err
	}
	if !sameMessages {
		out = append(out, pcProblem{[]string{"context", "messages"}, "output messages do not exactly match the source decisions"})
	}
	sameAttachments, err := pcSameDigest(d.attachments, plan.Context.Attachments)
	if err != nil {
		return nil, err
	}
	if !sameAttachments {
		out = append(out, pcProblem{[]string{"context", "attachments"}, "output attachments do not exactly match included source parts"})
	}
	sourcePartial := plan.Source.Completeness == CompletenessPartial
	if want := d.changesContent || sourcePartial || plan.Context.Completeness == CompletenessPartial; plan.RequiresAcceptance != want {
		out = append(out, pcProblem{[]string{"requiresAcceptance"}, "requiresAcceptance must be true when content changes or either context is partial"})
	}
	want := CompletenessComplete
	if d.changesContent || sourcePartial {
		want = CompletenessPartial
	}
	if plan.Context.Completeness != want {
		out = append(out, pcProblem{[]string{"context", "completeness"}, "output context completeness must be " + want})
	}
	return out, nil
}

// pcSameDigest compares the pcWireDigests of two values.
func pcSameDigest(a, b any) (bool, error) {
	da, err := pcDigestOf(a)
	if err != nil {
		return false, err
	}
	db, err := pcDigestOf(b)
	if err != nil {
		return false, err
	}
	return da == db, nil
}

// pcPlanDigest computes a plan's digest: in Interface 5 through its
// projection, before that over the whole plan.
func pcPlanDigest(plan *PortableContextPlan, version pcVersion) (string, error) {
	if version == pcV4 {
		v, err := canonjson.ToValue(plan)
		if err != nil {
			return "", err
		}
		return pcWireDigest(withoutMember(v, "digest"))
	}
	tp, err := pcProject(plan)
	if err != nil {
		return "", err
	}
	return tp.PlanDigest, nil
}

// DerivePortableContext applies plan decisions to a source context and
// returns the exact derived context, its digest included, and whether a
// user or policy must accept the result. It reports a decision rule the
// plan breaks as a *schema.Error.
func DerivePortableContext(source *PortableConversationContext, decisions []PortableContextMessagePlan) (*PortableConversationContext, bool, error) {
	if source == nil {
		return nil, false, errors.New("portable context: no source")
	}
	d, err := pcDerive(source, decisions, pcV5)
	if err != nil {
		return nil, false, err
	}
	if len(d.problems) > 0 {
		se := &schema.Error{Kind: KindPortableContextPlan}
		for _, p := range d.problems {
			se.Issues = append(se.Issues, schema.Issue{Path: canonjson.Pointer(p.path...), Code: schema.CodeCustom, Message: p.message})
		}
		return nil, false, se
	}
	completeness := CompletenessComplete
	if d.changesContent || source.Completeness == CompletenessPartial {
		completeness = CompletenessPartial
	}
	ctx, err := NewPortableConversationContext(source.Source, completeness, d.messages, d.attachments)
	if err != nil {
		return nil, false, err
	}
	return ctx, completeness == CompletenessPartial, nil
}

// NewPortableContextPlan decides a transfer: it derives the context that
// decisions leave of source, marks whether acceptance is required, and
// returns the validated plan with its Interface 5 digest. Planning has no
// side effects.
func NewPortableContextPlan(planID string, source *PortableConversationContext, destination PortableContextDestination, decisions []PortableContextMessagePlan, estimatedTokens *int64) (*PortableContextPlan, error) {
	derived, requiresAcceptance, err := DerivePortableContext(source, decisions)
	if err != nil {
		return nil, err
	}
	if decisions == nil {
		decisions = []PortableContextMessagePlan{}
	}
	plan := &PortableContextPlan{PlanID: planID, Source: *source, Destination: destination, Messages: decisions,
		Context: *derived, EstimatedTokens: estimatedTokens, RequiresAcceptance: requiresAcceptance}
	if plan.Digest, err = pcPlanDigest(plan, pcV5); err != nil {
		return nil, err
	}
	return pcFromValueOf[PortableContextPlan](KindPortableContextPlan, PortableContextPlanSchema, plan)
}

// PortableContextPlanDigest returns the Interface 5 digest of a plan's
// content (its Digest member is ignored).
func PortableContextPlanDigest(plan *PortableContextPlan) (string, error) {
	if plan == nil {
		return "", errors.New("portable context: no plan")
	}
	return pcPlanDigest(plan, pcV5)
}

// ParsePortableContextPartPlan decodes and validates a part decision.
func ParsePortableContextPartPlan(data []byte) (*PortableContextPartPlan, error) {
	return Parse[PortableContextPartPlan](KindPortableContextPartPlan, PortableContextPartPlanSchema, data)
}

// ParsePortableContextPlan decodes and validates a local plan.
func ParsePortableContextPlan(data []byte) (*PortableContextPlan, error) {
	return Parse[PortableContextPlan](KindPortableContextPlan, PortableContextPlanSchema, data)
}
