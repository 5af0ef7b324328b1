package contract

import (
	"errors"
	"slices"
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of transfer plans.
const (
	KindPortableContextTransferPlan = "PortableContextTransferPlan"
)

// PortableContextTransferPlan is what travels to the destination of a
// fresh-session transfer in Interface 5: the projection of an accepted
// local PortableContextPlan. It holds only the selected typed content —
// the included messages with their kept parts (each a valid InputPart) and
// the attachments of kept parts, indexed by position in the selected
// output — together with hash commitments:
//
//   - one commitment per selected message over its metadata (id, role,
//     timestamp, metadata) and one per selected part;
//   - one commitment per selected attachment;
//   - ReviewDigest, one combined digest of the full local source and every
//     decision (omissions and their explanations included).
//
// Omitted messages, omitted parts and decision explanations are not here
// and have no individual commitment. PlanDigest is the accepted plan's
// digest: the digest of the header (plan id, source boundary, destination,
// completeness, estimate, requiresAcceptance), the commitments and the
// review digest, under the algorithm tag "portable-context-plan-digest/v5".
// The destination recomputes every commitment from the content and the
// plan digest from the commitments. Digests bind content; they do not
// hide it.
type PortableContextTransferPlan struct {
	PlanID             string                         `json:"planId"`
	PlanDigest         string                         `json:"planDigest"`
	Source             PortableContextSourceBoundary  `json:"source"`
	Destination        PortableContextDestination     `json:"destination"`
	Completeness       string                         `json:"completeness"`
	Messages           []BackendMessage               `json:"messages"`
	Attachments        []PortableContextAttachmentRef `json:"attachments"`
	Commitments        PortableContextCommitments     `json:"commitments"`
	ReviewDigest       string                         `json:"reviewDigest"`
	EstimatedTokens    *int64                         `json:"estimatedTokens,omitzero"`
	RequiresAcceptance bool                           `json:"requiresAcceptance"`
}

// PortableContextCommitments are the hash commitments of a transfer plan's
// selected content, in the order of that content.
type PortableContextCommitments struct {
	Messages    []PortableContextMessageCommitment `json:"messages"`
	Attachments []string                           `json:"attachments"`
}

// PortableContextMessageCommitment commits to one selected message: its
// metadata and each of its selected parts, in output order.
type PortableContextMessageCommitment struct {
	MessageID string   `json:"messageId"`
	Metadata  string   `json:"metadata"`
	Parts     []string `json:"parts"`
}

// pcPlanDigestAlgorithm tags the Interface 5 plan digest material.
const pcPlanDigestAlgorithm = "portable-context-plan-digest/v5"

type pcPlanDigestMaterial struct {
	Algorithm          string                        `json:"algorithm"`
	PlanID             string                        `json:"planId"`
	Source             PortableContextSourceBoundary `json:"source"`
	Destination        PortableContextDestination    `json:"destination"`
	Completeness       string                        `json:"completeness"`
	Commitments        PortableContextCommitments    `json:"commitments"`
	ReviewDigest       string                        `json:"reviewDigest"`
	EstimatedTokens    *int64                        `json:"estimatedTokens,omitzero"`
	RequiresAcceptance bool                          `json:"requiresAcceptance"`
}

type pcMessageCommitmentMaterial struct {
	Commitment string                     `json:"commitment"`
	ID         string                     `json:"id"`
	Role       string                     `json:"role"`
	Timestamp  string                     `json:"timestamp"`
	Metadata   map[string]canonjson.Value `json:"metadata,omitzero"`
}

type pcPartCommitmentMaterial struct {
	Commitment string          `json:"commitment"`
	MessageID  string          `json:"messageId"`
	PartIndex  int             `json:"partIndex"`
	Part       canonjson.Value `json:"part"`
}

type pcAttachmentCommitmentMaterial struct {
	Commitment string                       `json:"commitment"`
	Attachment PortableContextAttachmentRef `json:"attachment"`
}

type pcReviewMaterial struct {
	Commitment   string                       `json:"commitment"`
	SourceDigest string                       `json:"sourceDigest"`
	Messages     []PortableContextMessagePlan `json:"messages"`
}

// PortableContextMessageCommitmentDigest is the commitment to one selected
// message's metadata.
func PortableContextMessageCommitmentDigest(m BackendMessage) (string, error) {
	return pcDigestOf(pcMessageCommitmentMaterial{Commitment: "message", ID: m.ID, Role: m.Role, Timestamp: m.Timestamp, Metadata: m.Metadata})
}

// PortableContextPartCommitmentDigest is the commitment to the selected
// part at index (its position in the selected output) of a message.
func PortableContextPartCommitmentDigest(messageID string, index int, part canonjson.Value) (string, error) {
	return pcDigestOf(pcPartCommitmentMaterial{Commitment: "part", MessageID: messageID, PartIndex: index, Part: part})
}

// PortableContextAttachmentCommitmentDigest is the commitment to one
// selected attachment (indexed in the selected output).
func PortableContextAttachmentCommitmentDigest(a PortableContextAttachmentRef) (string, error) {
	return pcDigestOf(pcAttachmentCommitmentMaterial{Commitment: "attachment", Attachment: a})
}

// PortableContextReviewDigest is the combined digest of a plan's full
// local source (through its content digest) and all of its decisions.
func PortableContextReviewDigest(sourceDigest string, decisions []PortableContextMessagePlan) (string, error) {
	if decisions == nil {
		decisions = []PortableContextMessagePlan{}
	}
	return pcDigestOf(pcReviewMaterial{Commitment: "review", SourceDigest: sourceDigest, Messages: decisions})
}

// pcCommit computes the commitments of selected content.
func pcCommit(messages []BackendMessage, attachments []PortableContextAttachmentRef) (PortableContextCommitments, error) {
	out := PortableContextCommitments{
		Messages:    make([]PortableContextMessageCommitment, 0, len(messages)),
		Attachments: make([]string, 0, len(attachments)),
	}
	for _, m := range messages {
		meta, err := PortableContextMessageCommitmentDigest(m)
		if err != nil {
			return out, err
		}
		parts := make([]string, 0, len(m.Parts))
		for j, p := range m.Parts {
			d, err := PortableContextPartCommitmentDigest(m.ID, j, p)
			if err != nil {
				return out, err
			}
			parts = append(parts, d)
		}
		out.Messages = append(out.Messages, PortableContextMessageCommitment{MessageID: m.ID, Metadata: meta, Parts: parts})
	}
	for _, a := range attachments {
		d, err := PortableContextAttachmentCommitmentDigest(a)
		if err != nil {
			return out, err
		}
		out.Attachments = append(out.Attachments, d)
	}
	return out, nil
}

// pcTransferPlanDigest is the plan digest of a transfer plan's header,
// commitments and review digest.
func pcTransferPlanDigest(tp *PortableContextTransferPlan) (string, error) {
	return pcDigestOf(pcPlanDigestMaterial{
		Algorithm:          pcPlanDigestAlgorithm,
		PlanID:             tp.PlanID,
		Source:             tp.Source,
		Destination:        tp.Destination,
		Completeness:       tp.Completeness,
		Commitments:        tp.Commitments,
		ReviewDigest:       tp.ReviewDigest,
		EstimatedTokens:    tp.EstimatedTokens,
		RequiresAcceptance: tp.RequiresAcceptance,
	})
}

// pcProject projects a local plan (assumed valid) onto its transfer plan.
func pcProject(plan *PortableContextPlan) (*PortableContextTransferPlan, error) {
	messages := slices.Clone(plan.Context.Messages)
	if messages == nil {
		messages = []BackendMessage{}
	}
	attachments := slices.Clone(plan.Context.Attachments)
	if attachments == nil {
		attachments = []PortableContextAttachmentRef{}
	}
	commitments, err := pcCommit(messages, attachments)
	if err != nil {
		return nil, err
	}
	review, err := PortableContextReviewDigest(plan.Source.Digest, plan.Messages)
	if err != nil {
		return nil, err
	}
	tp := &PortableContextTransferPlan{
		PlanID:             plan.PlanID,
		Source:             plan.Source.Source,
		Destination:        plan.Destination,
		Completeness:       plan.Context.Completeness,
		Messages:           messages,
		Attachments:        attachments,
		Commitments:        commitments,
		ReviewDigest:       review,
		EstimatedTokens:    plan.EstimatedTokens,
		RequiresAcceptance: plan.RequiresAcceptance,
	}
	if tp.PlanDigest, err = pcTransferPlanDigest(tp); err != nil {
		return nil, err
	}
	return tp, nil
}

// ProjectPortableContextPlan validates a local plan and projects it onto
// the transfer plan that may travel to its destination.
func ProjectPortableContextPlan(plan *PortableContextPlan) (*PortableContextTransferPlan, error) {
	if plan == nil {
		return nil, errors.New("portable context: no plan")
	}
	out, err := Validate(KindPortableContextPlan, PortableContextPlanSchema, plan)
	if err != nil {
		return nil, err
	}
	var accepted PortableContextPlan
	if err := canonjson.FromValue(out, &accepted); err != nil {
		return nil, err
	}
	tp, err := pcProject(&accepted)
	if err != nil {
		return nil, err
	}
	return pcFromValueOf[PortableContextTransferPlan](KindPortableContextTransferPlan, PortableContextTransferPlanSchema, tp)
}

// Context returns the conversation context the transfer plan delivers,
// with its digest: the context a receipt's contextDigest names.
func (tp *PortableContextTransferPlan) Context() (*PortableConversationContext, error) {
	return NewPortableConversationContext(tp.Source, tp.Completeness, tp.Messages, tp.Attachments)
}

var (
	pcTransferMessageSchema = BackendMessageSchema.Extend(
		schema.Req("parts", schema.Array(InputPartSchema).MinItems(1).MaxItems(MaxArrayLength)),
	)

	pcCommitmentsSchema = schema.Object(
		schema.Req("messages", schema.Array(schema.Object(
			schema.Req("messageId", BoundedIdentifier),
			schema.Req("metadata", Digest),
			schema.Req("parts", schema.Array(Digest).MaxItems(MaxArrayLength)),
		)).MaxItems(MaxArrayLength)),
		schema.Req("attachments", schema.Array(Digest).MaxItems(MaxArrayLength)),
	)

	// PortableContextTransferPlanSchema is the transfer plan shape: typed
	// selected content, commitments that match it, and a plan digest that
	// matches the commitments.
	PortableContextTransferPlanSchema = schema.Object(
		schema.Req("planId", BoundedIdentifier),
		schema.Req("planDigest", Digest),
		schema.Req("source", PortableContextSourceBoundarySchema),
		schema.Req("destination", PortableContextDestinationSchema),
		schema.Req("completeness", schema.Enum(CompletenessComplete, CompletenessPartial)),
		schema.Req("messages", schema.Array(pcTransferMessageSchema).MaxItems(MaxArrayLength)),
		schema.Req("attachments", schema.Array(PortableContextAttachmentRefSchema).MaxItems(MaxArrayLength)),
		schema.Req("commitments", pcCommitmentsSchema),
		schema.Req("reviewDigest", Digest),
		schema.Opt("estimatedTokens", pcIndex),
		schema.Req("requiresAcceptance", schema.Bool()),
	).Refine(pcCheckTransferPlan)
)

func pcCheckTransferPlan(c *schema.Context, v canonjson.Value) {
	if pcIssuesWithin(c, "planDigest") {
		pcAtRoot(c, "the transfer plan content is invalid, so its commitments cannot be verified")
		return
	}
	pcCheckContextReferences(c, v)
	var tp PortableContextTransferPlan
	if err := canonjson.FromValue(v, &tp); err != nil {
		c.Custom("the transfer plan does not fit its shape: " + err.Error())
		return
	}
	if tp.RequiresAcceptance != (tp.Completeness == CompletenessPartial) {
		c.Custom("a partial context requires acceptance, and a complete one does not", "requiresAcceptance")
	}
	want, err := pcCommit(tp.Messages, tp.Attachments)
	if err != nil {
		pcAtRoot(c, "the transfer plan content exceeds the contract bounds or is not canonical JSON")
		return
	}
	got := tp.Commitments
	if len(got.Messages) != len(want.Messages) {
		c.Custom("there must be one commitment per selected message", "commitments", "messages")
	} else {
		for i, w := range want.Messages {
			g, at := got.Messages[i], strconv.Itoa(i)
			if g.MessageID != w.MessageID {
				c.Custom("the commitment names another message", "commitments", "messages", at, "messageId")
			}
			if g.Metadata != w.Metadata {
				c.Custom("the message metadata commitment does not match the message", "commitments", "messages", at, "metadata")
			}
			if len(g.Parts) != len(w.Parts) {
				c.Custom("there must be one commitment per selected part", "commitments", "messages", at, "parts")
				continue
			}
			for j := range w.Parts {
				if g.Parts[j] != w.Parts[j] {
					c.Custom("the part commitment does not match the part", "commitments", "messages", at, "parts", strconv.Itoa(j))
				}
			}
		}
	}
	if len(got.Attachments) != len(want.Attachments) {
		c.Custom("there must be one commitment per selected attachment", "commitments", "attachments")
	} else {
		for i := range want.Attachments {
			if got.Attachments[i] != want.Attachments[i] {
				c.Custom("the attachment commitment does not match the attachment", "commitments", "attachments", strconv.Itoa(i))
			}
		}
	}
	digest, err := pcTransferPlanDigest(&tp)
	if err != nil {
		pcAtRoot(c, "the transfer plan material exceeds the contract bounds or is not canonical JSON")
		return
	}
	if tp.PlanDigest != digest {
		c.Custom("the plan digest does not match the transfer plan's commitments", "planDigest")
	}
}

// ParsePortableContextTransferPlan decodes and validates a transfer plan.
func ParsePortableContextTransferPlan(data []byte) (*PortableContextTransferPlan, error) {
	return Parse[PortableContextTransferPlan](KindPortableContextTransferPlan, PortableContextTransferPlanSchema, data)
}
