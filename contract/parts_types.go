package contract

import (
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of message parts and backend messages.
const (
	KindInputPart      = "InputPart"
	KindBackendMessage = "BackendMessage"
)

// Part types. Runner-reported parts (Part) use text, tool, reasoning, file
// and subtask; caller input parts (InputPart) use text, file and image.
const (
	PartTypeText      = "text"
	PartTypeTool      = "tool"
	PartTypeReasoning = "reasoning"
	PartTypeFile      = "file"
	PartTypeSubtask   = "subtask"
	PartTypeImage     = "image"
)

// Tool states a ToolPart reports. ToolStatusFailed is a synonym of
// ToolStatusError that some runners send.
const (
	ToolStatusPending   = "pending"
	ToolStatusRunning   = "running"
	ToolStatusCompleted = "completed"
	ToolStatusError     = "error"
	ToolStatusFailed    = "failed"
)

// Part is one part of a message as a runner reports it in a
// message.part.updated event. Every part names itself, its session and its
// message; Type selects which of the other fields apply:
//
//   - text and reasoning: Text;
//   - tool: CallID (optional), Tool, State, Metadata (optional);
//   - file: Filename, MediaType, URL (all optional);
//   - subtask: Prompt, Description, Agent.
type Part struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type"`

	Text *string `json:"text,omitzero"`

	CallID   *string                    `json:"callID,omitzero"`
	Tool     *string                    `json:"tool,omitzero"`
	State    *ToolState                 `json:"state,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`

	Filename  *string `json:"filename,omitzero"`
	MediaType *string `json:"mediaType,omitzero"`
	URL       *string `json:"url,omitzero"`

	Prompt      *string `json:"prompt,omitzero"`
	Description *string `json:"description,omitzero"`
	Agent       *string `json:"agent,omitzero"`
}

// IsText reports whether p is a text part.
func (p Part) IsText() bool { return p.Type == PartTypeText }

// IsTool reports whether p is a tool part.
func (p Part) IsTool() bool { return p.Type == PartTypeTool }

// IsReasoning reports whether p is a reasoning part.
func (p Part) IsReasoning() bool { return p.Type == PartTypeReasoning }

// IsFile reports whether p is a file part.
func (p Part) IsFile() bool { return p.Type == PartTypeFile }

// IsSubtask reports whether p is a subtask part.
func (p Part) IsSubtask() bool { return p.Type == PartTypeSubtask }

// ToolState is the lifecycle state of a tool part. Status selects the
// fields: pending carries Input and Raw; running adds Title, Metadata and
// Time.Start; completed carries Output and Time.Start/End; error (or
// failed) carries Error, Output and Time.
type ToolState struct {
	Status   string                     `json:"status"`
	Input    map[string]canonjson.Value `json:"input"`
	Raw      *string                    `json:"raw,omitzero"`
	Title    *string                    `json:"title,omitzero"`
	Metadata map[string]canonjson.Value `json:"metadata,omitzero"`
	Time     *ToolTime                  `json:"time,omitzero"`
	Output   canonjson.Value            `json:"output,omitzero"`
	Error    *string                    `json:"error,omitzero"`
}

// ToolTime is when a tool call started and, once it ended, when it ended,
// in epoch milliseconds.
type ToolTime struct {
	Start float64  `json:"start"`
	End   *float64 `json:"end,omitzero"`
}

// InputPart is one part of caller input: a turn prompt part, a transformed
// part of a portable context, or a part of a native continuation turn.
// Type selects the fields: text carries Text; file carries Filename,
// MediaType, URL, Path and Content (all optional); image carries Filename,
// MediaType, URL and Path (all optional).
type InputPart struct {
	Type      string  `json:"type"`
	Text      *string `json:"text,omitzero"`
	Filename  *string `json:"filename,omitzero"`
	MediaType *string `json:"mediaType,omitzero"`
	URL       *string `json:"url,omitzero"`
	Path      *string `json:"path,omitzero"`
	Content   *string `json:"content,omitzero"`
}

// TextInputPart returns a text input part.
func TextInputPart(text string) InputPart { return InputPart{Type: PartTypeText, Text: &text} }

// IsText reports whether p is a text part.
func (p InputPart) IsText() bool { return p.Type == PartTypeText }

// IsFile reports whether p is a file part.
func (p InputPart) IsFile() bool { return p.Type == PartTypeFile }

// IsImage reports whether p is an image part.
func (p InputPart) IsImage() bool { return p.Type == PartTypeImage }

// NormalizeInputParts returns the parts of a caller input given either as
// parts or as a plain message: the parts when there are any, else one text
// part holding a non-empty message, else none.
func NormalizeInputParts(message string, parts []InputPart) []InputPart {
	if len(parts) > 0 {
		return parts
	}
	if message != "" {
		return []InputPart{TextInputPart(message)}
	}
	return []InputPart{}
}

// RenderInputPartsAsText flattens input parts into one prompt for a runner
// that only takes text: the non-empty texts joined by blank lines, then an
// "Attached files:" block naming every file or image part by its path,
// file name or URL.
func RenderInputPartsAsText(parts []InputPart) string {
	var texts, refs []string
	for _, p := range parts {
		if p.Type == PartTypeText {
			if p.Text != nil && *p.Text != "" {
				texts = append(texts, *p.Text)
			}
			continue
		}
		label := ""
		for _, s := range []*string{p.Path, p.Filename, p.URL} {
			if s != nil && *s != "" {
				label = *s
				break
			}
		}
		kind := "File"
		if label == "" {
			label = "file attachment"
			if p.Type == PartTypeImage {
				label = "image attachment"
			}
		}
		if p.Type == PartTypeImage {
			kind = "Image"
		}
		refs = append(refs, "["+kind+": "+label+"]")
	}
	text := canonjson.TrimJS(strings.Join(texts, "\n\n"))
	if len(refs) == 0 {
		return text
	}
	block := "Attached files:\n" + strings.Join(refs, "\n")
	if text == "" {
		return block
	}
	return text + "\n\n" + block
}

// Message roles.
const (
	MessageRoleUser      = "user"
	MessageRoleAssistant = "assistant"
	MessageRoleSystem    = "system"
)

// BackendMessage is one message of a conversation history as a backend
// stores it. Parts are bounded JSON values: runner parts, input parts, or
// anything else a backend recorded. Portable context transfer carries
// messages in this format and no other.
type BackendMessage struct {
	ID        string                     `json:"id"`
	Role      string                     `json:"role"`
	Parts     []canonjson.Value          `json:"parts"`
	Timestamp string                     `json:"timestamp"`
	Metadata  map[string]canonjson.Value `json:"metadata,omitzero"`
}

var (
	// InputPartSchema is the InputPart shape: a strict text, file or
	// image part.
	InputPartSchema = schema.Discriminated("type", map[string]schema.Node{
		PartTypeText: schema.Object(
			schema.Req("type", schema.LiteralString(PartTypeText)),
			schema.Req("text", BoundedString),
		),
		PartTypeFile: schema.Object(
			schema.Req("type", schema.LiteralString(PartTypeFile)),
			schema.Opt("filename", BoundedString),
			schema.Opt("mediaType", BoundedString),
			schema.Opt("url", BoundedString),
			schema.Opt("path", BoundedString),
			schema.Opt("content", BoundedString),
		),
		PartTypeImage: schema.Object(
			schema.Req("type", schema.LiteralString(PartTypeImage)),
			schema.Opt("filename", BoundedString),
			schema.Opt("mediaType", BoundedString),
			schema.Opt("url", BoundedString),
			schema.Opt("path", BoundedString),
		),
	})

	// BackendMessageSchema is the BackendMessage shape: at most
	// MaxArrayLength bounded JSON parts.
	BackendMessageSchema = schema.Object(
		schema.Req("id", BoundedIdentifier),
		schema.Req("role", schema.Enum(MessageRoleUser, MessageRoleAssistant, MessageRoleSystem)),
		schema.Req("parts", schema.Array(BoundedJSON).MaxItems(MaxArrayLength)),
		schema.Req("timestamp", pcTimestamp),
		schema.Opt("metadata", BoundedJSONRecord),
	)
)

// ParseInputPart decodes and validates one input part.
func ParseInputPart(data []byte) (*InputPart, error) {
	return Parse[InputPart](KindInputPart, InputPartSchema, data)
}

// ParseBackendMessage decodes and validates one backend message.
func ParseBackendMessage(data []byte) (*BackendMessage, error) {
	return Parse[BackendMessage](KindBackendMessage, BackendMessageSchema, data)
}

// AsInputPart reports whether a message part is a valid input part and
// returns it as the contract accepts it.
func AsInputPart(part canonjson.Value) (canonjson.Value, bool) {
	out, err := schema.Run(KindInputPart, InputPartSchema, part)
	return out, err == nil
}
