package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of portable conversation contexts.
const (
	KindPortableConversationContext = "PortableConversationContext"
)

// Completeness of a portable conversation context.
const (
	CompletenessComplete = "complete"
	CompletenessPartial  = "partial"
)

// PortableContextSourceBoundary identifies where a portable context was
// cut: the exact source run (provider, environment, session, execution and
// admission digest) and the last message it includes.
type PortableContextSourceBoundary struct {
	RunID         string  `json:"runId"`
	MessageID     string  `json:"messageId"`
	Provider      string  `json:"provider"`
	EnvironmentID string  `json:"environmentId"`
	SessionID     string  `json:"sessionId"`
	ExecutionID   string  `json:"executionId"`
	RequestDigest string  `json:"requestDigest"`
	BranchID      *string `json:"branchId,omitzero"`
}

// PortableContextAttachmentRef names the content digest of one message
// part that is an attachment: the message and the part's index in it.
type PortableContextAttachmentRef struct {
	MessageID string  `json:"messageId"`
	PartIndex int64   `json:"partIndex"`
	Digest    string  `json:"digest"`
	Name      *string `json:"name,omitzero"`
	MediaType *string `json:"mediaType,omitzero"`
}

// PortableConversationContext is an immutable conversation history cut at
// a source boundary, in the backend message format, with its attachments
// and a digest of all of it. Completeness says whether it holds the whole
// history up to the boundary.
type PortableConversationContext struct {
	Source       PortableContextSourceBoundary  `json:"source"`
	Completeness string                         `json:"completeness"`
	Messages     []BackendMessage               `json:"messages"`
	Attachments  []PortableContextAttachmentRef `json:"attachments"`
	Digest       string                         `json:"digest"`
}

var (
	// PortableContextSourceBoundarySchema is the source boundary shape.
	PortableContextSourceBoundarySchema = schema.Object(
		schema.Req("runId", BoundedIdentifier),
		schema.Req("messageId", BoundedIdentifier),
		schema.Req("provider", BoundedIdentifier),
		schema.Req("environmentId", BoundedIdentifier),
		schema.Req("sessionId", BoundedIdentifier),
		schema.Req("executionId", BoundedIdentifier),
		schema.Req("requestDigest", Digest),
		schema.Opt("branchId", BoundedIdentifier),
	)

	// PortableContextAttachmentRefSchema is the attachment reference
	// shape.
	PortableContextAttachmentRefSchema = schema.Object(
		schema.Req("messageId", BoundedIdentifier),
		schema.Req("partIndex", pcIndex),
		schema.Req("digest", Digest),
		schema.Opt("name", BoundedIdentifier),
		schema.Opt("mediaType", BoundedIdentifier),
	)

	pcContextFields = []schema.Field{
		schema.Req("source", PortableContextSourceBoundarySchema),
		schema.Req("completeness", schema.Enum(CompletenessComplete, CompletenessPartial)),
		schema.Req("messages", schema.Array(BackendMessageSchema).MaxItems(MaxArrayLength)),
		schema.Req("attachments", schema.Array(PortableContextAttachmentRefSchema).MaxItems(MaxArrayLength)),
	}

	// pcContextMaterialSchema is a context without its digest.
	pcContextMaterialSchema = schema.Object(pcContextFields...).Refine(pcCheckContextReferences)

	// PortableConversationContextSchema is the PortableConversationContext
	// shape: unique message ids, attachments that point at existing parts,
	// and a digest that matches the rest.
	PortableConversationContextSchema = schema.Object(pcContextFields...).
						Extend(schema.Req("digest", Digest)).
						Refine(pcCheckContextReferences).
						Refine(pcCheckContextDigest)
)

// pcCheckContextReferences checks message id uniqueness and that every
// attachment names a part of a listed message.
func pcCheckContextReferences(c *schema.Context, v canonjson.Value) {
	messages, _ := v.Get("messages")
	ids := make([]string, 0, messages.Len())
	parts := make(map[string]int, messages.Len())
	for _, m := range messages.Items() {
		id := pcStr(m, "id")
		ids = append(ids, id)
		if _, seen := parts[id]; !seen {
			p, _ := m.Get("parts")
			parts[id] = p.Len()
		}
	}
	if !pcUnique(ids) {
		c.Custom("portable context message ids must be unique", "messages")
	}
	attachments, _ := v.Get("attachments")
	for _, a := range attachments.Items() {
		n, ok := parts[pcStr(a, "messageId")]
		index, _ := a.Get("partIndex")
		if !ok || !(index.Float() < float64(n)) {
			c.Custom("an attachment must reference a part in the portable context", "attachments")
		}
	}
}

// pcCheckContextDigest checks the context digest against its content.
func pcCheckContextDigest(c *schema.Context, v canonjson.Value) {
	want, err := pcWireDigest(withoutMember(v, "digest"))
	if err != nil {
		pcAtRoot(c, "portable context material exceeds the contract bounds or is not canonical JSON")
		return
	}
	if pcStr(v, "digest") != want {
		c.Custom("portable context digest does not match its content", "digest")
	}
}

// NewPortableConversationContext validates a context's content and returns
// it with its digest.
func NewPortableConversationContext(source PortableContextSourceBoundary, completeness string, messages []BackendMessage, attachments []PortableContextAttachmentRef) (*PortableConversationContext, error) {
	if messages == nil {
		messages = []BackendMessage{}
	}
	if attachments == nil {
		attachments = []PortableContextAttachmentRef{}
	}
	ctx := &PortableConversationContext{Source: source, Completeness: completeness, Messages: messages, Attachments: attachments}
	digest, err := pcMaterialDigest(KindPortableConversationContext, pcContextMaterialSchema, ctx, "digest")
	if err != nil {
		return nil, err
	}
	ctx.Digest = digest
	return pcFromValueOf[PortableConversationContext](KindPortableConversationContext, PortableConversationContextSchema, ctx)
}

// ParsePortableConversationContext decodes and validates a context.
func ParsePortableConversationContext(data []byte) (*PortableConversationContext, error) {
	return Parse[PortableConversationContext](KindPortableConversationContext, PortableConversationContextSchema, data)
}

// pcMaterialDigest validates x without its member digestName against
// material and returns the pcWireDigest of the accepted material.
func pcMaterialDigest(kind string, material schema.Node, x any, digestName string) (string, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return "", err
	}
	out, err := schema.Run(kind, material, withoutMember(v, digestName))
	if err != nil {
		return "", err
	}
	return pcWireDigest(out)
}

// pcFromValueOf validates a Go value against node and returns the accepted
// value as a fresh T: how constructors hand back exactly what a receiver
// would parse.
func pcFromValueOf[T any](kind string, node schema.Node, x any) (*T, error) {
	out, err := Validate(kind, node, x)
	if err != nil {
		return nil, err
	}
	t := new(T)
	if err := canonjson.FromValue(out, t); err != nil {
		return nil, err
	}
	return t, nil
}
