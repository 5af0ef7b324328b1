package profile

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// DiffKind is the kind of every AgentProfileDiff.
const DiffKind = "agent-profile-diff"

// Diff is an AgentProfileDiff: a set of values merged into a profile and a
// set of removals applied after the merge (see ApplyDiff).
type Diff struct {
	Kind        string                     `json:"kind"`
	ID          *string                    `json:"id,omitzero"`
	Title       *string                    `json:"title,omitzero"`
	Description *string                    `json:"description,omitzero"`
	Rationale   *string                    `json:"rationale,omitzero"`
	Source      *DiffSource                `json:"source,omitzero"`
	Set         *Profile                   `json:"set,omitzero"`
	Remove      *Removal                   `json:"remove,omitzero"`
	Metadata    map[string]canonjson.Value `json:"metadata,omitzero"`
}

// DiffSource says where a diff came from. Kind is trace, frontier-author,
// human, optimizer or compound.
type DiffSource struct {
	Kind      string   `json:"kind"`
	Artifacts []string `json:"artifacts,omitzero"`
	Notes     []string `json:"notes,omitzero"`
}

// RemoveList removes a whole field (All) or the named entries of it.
type RemoveList struct {
	All   bool
	Names []string
}

// RemoveAll removes a whole field.
func RemoveAll() *RemoveList { return &RemoveList{All: true} }

// RemoveNames removes the named entries of a field.
func RemoveNames(names ...string) *RemoveList {
	return &RemoveList{Names: append([]string{}, names...)}
}

// MarshalValue implements canonjson.ValueMarshaler.
func (r RemoveList) MarshalValue() (canonjson.Value, error) {
	if r.All {
		return canonjson.BoolValue(true), nil
	}
	names := r.Names
	if names == nil {
		names = []string{}
	}
	return canonjson.ToValue(names)
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (r *RemoveList) UnmarshalValue(v canonjson.Value) error {
	*r = RemoveList{}
	if v.Kind() == canonjson.Bool {
		r.All = v.Bool()
		return nil
	}
	return canonjson.FromValue(v, &r.Names)
}

// Removal lists what a diff removes. Boolean fields remove when true.
type Removal struct {
	// Identity removes name, description and version.
	Identity     bool             `json:"identity,omitzero"`
	Tags         *RemoveList      `json:"tags,omitzero"`
	Prompt       *PromptRemoval   `json:"prompt,omitzero"`
	Model        *RemoveList      `json:"model,omitzero"`
	Harness      bool             `json:"harness,omitzero"`
	Seats        bool             `json:"seats,omitzero"`
	Permissions  *RemoveList      `json:"permissions,omitzero"`
	Tools        *RemoveList      `json:"tools,omitzero"`
	MCP          *RemoveList      `json:"mcp,omitzero"`
	Connections  *RemoveList      `json:"connections,omitzero"`
	Subagents    *RemoveList      `json:"subagents,omitzero"`
	Resources    *ResourceRemoval `json:"resources,omitzero"`
	Hooks        *RemoveList      `json:"hooks,omitzero"`
	Modes        *RemoveList      `json:"modes,omitzero"`
	Confidential bool             `json:"confidential,omitzero"`
	Metadata     *RemoveList      `json:"metadata,omitzero"`
	Extensions   *RemoveList      `json:"extensions,omitzero"`
}

// PromptRemoval removes the whole prompt (All) or parts of it.
type PromptRemoval struct {
	All                bool
	SystemPrompt       bool
	AppendSystemPrompt bool
	Instructions       *RemoveList
}

type promptRemovalObject struct {
	SystemPrompt       bool        `json:"systemPrompt,omitzero"`
	AppendSystemPrompt bool        `json:"appendSystemPrompt,omitzero"`
	Instructions       *RemoveList `json:"instructions,omitzero"`
}

// MarshalValue implements canonjson.ValueMarshaler.
func (r PromptRemoval) MarshalValue() (canonjson.Value, error) {
	if r.All {
		return canonjson.BoolValue(true), nil
	}
	return canonjson.ToValue(promptRemovalObject{r.SystemPrompt, r.AppendSystemPrompt, r.Instructions})
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (r *PromptRemoval) UnmarshalValue(v canonjson.Value) error {
	*r = PromptRemoval{}
	if v.Kind() == canonjson.Bool {
		r.All = v.Bool()
		return nil
	}
	var o promptRemovalObject
	if err := canonjson.FromValue(v, &o); err != nil {
		return err
	}
	r.SystemPrompt, r.AppendSystemPrompt, r.Instructions = o.SystemPrompt, o.AppendSystemPrompt, o.Instructions
	return nil
}

// ResourceRemoval removes all resources (All) or parts of them. Resource
// references are matched by name (inline) or name, else path (github); a
// file mount by its path or its resource's name.
type ResourceRemoval struct {
	All          bool
	Files        *RemoveList
	Tools        *RemoveList
	Skills       *RemoveList
	Agents       *RemoveList
	Commands     *RemoveList
	Instructions bool
	FailOnError  bool
}

type resourceRemovalObject struct {
	Files        *RemoveList `json:"files,omitzero"`
	Tools        *RemoveList `json:"tools,omitzero"`
	Skills       *RemoveList `json:"skills,omitzero"`
	Agents       *RemoveList `json:"agents,omitzero"`
	Commands     *RemoveList `json:"commands,omitzero"`
	Instructions bool        `json:"instructions,omitzero"`
	FailOnError  bool        `json:"failOnError,omitzero"`
}

// MarshalValue implements canonjson.ValueMarshaler.
func (r ResourceRemoval) MarshalValue() (canonjson.Value, error) {
	if r.All {
		return canonjson.BoolValue(true), nil
	}
	return canonjson.ToValue(resourceRemovalObject{r.Files, r.Tools, r.Skills, r.Agents, r.Commands, r.Instructions, r.FailOnError})
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (r *ResourceRemoval) UnmarshalValue(v canonjson.Value) error {
	*r = ResourceRemoval{}
	if v.Kind() == canonjson.Bool {
		r.All = v.Bool()
		return nil
	}
	var o resourceRemovalObject
	if err := canonjson.FromValue(v, &o); err != nil {
		return err
	}
	*r = ResourceRemoval{Files: o.Files, Tools: o.Tools, Skills: o.Skills, Agents: o.Agents,
		Commands: o.Commands, Instructions: o.Instructions, FailOnError: o.FailOnError}
	return nil
}

var (
	trueNode       = schema.Literal(canonjson.BoolValue(true))
	removeListNode = schema.Union(trueNode, schema.Array(schema.String(schema.MinLen(1))))

	removalNode = schema.Object(
		schema.Opt("identity", trueNode),
		schema.Opt("tags", removeListNode),
		schema.Opt("prompt", schema.Union(trueNode, schema.Object(
			schema.Opt("systemPrompt", trueNode),
			schema.Opt("appendSystemPrompt", trueNode),
			schema.Opt("instructions", removeListNode),
		))),
		schema.Opt("model", removeListNode),
		schema.Opt("harness", trueNode),
		schema.Opt("seats", trueNode),
		schema.Opt("permissions", removeListNode),
		schema.Opt("tools", removeListNode),
		schema.Opt("mcp", removeListNode),
		schema.Opt("connections", removeListNode),
		schema.Opt("subagents", removeListNode),
		schema.Opt("resources", schema.Union(trueNode, schema.Object(
			schema.Opt("files", removeListNode),
			schema.Opt("tools", removeListNode),
			schema.Opt("skills", removeListNode),
			schema.Opt("agents", removeListNode),
			schema.Opt("commands", removeListNode),
			schema.Opt("instructions", trueNode),
			schema.Opt("failOnError", trueNode),
		))),
		schema.Opt("hooks", removeListNode),
		schema.Opt("modes", removeListNode),
		schema.Opt("confidential", trueNode),
		schema.Opt("metadata", removeListNode),
		schema.Opt("extensions", removeListNode),
	)

	// DiffSchema is the AgentProfileDiff shape.
	DiffSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(DiffKind)),
		schema.Opt("id", schema.String(schema.MinLen(1))),
		schema.Opt("title", schema.String(schema.MinLen(1))),
		schema.Opt("description", str),
		schema.Opt("rationale", str),
		schema.Opt("source", schema.Object(
			schema.Req("kind", schema.Enum("trace", "frontier-author", "human", "optimizer", "compound")),
			schema.Opt("artifacts", schema.Array(schema.String(schema.MinLen(1)))),
			schema.Opt("notes", schema.Array(str)),
		)),
		// A set is merged into a base profile, so the seat-chain rules
		// apply to the result (see ApplyDiff), not to the fragment.
		schema.Opt("set", fragmentSchema),
		schema.Opt("remove", removalNode),
		schema.Opt("metadata", anyRecord),
	)
)

// ParseDiff decodes and validates an AgentProfileDiff.
func ParseDiff(data []byte) (*Diff, error) {
	v, err := schema.Decode(KindDiff, data)
	if err != nil {
		return nil, err
	}
	out, err := schema.Run(KindDiff, DiffSchema, v)
	if err != nil {
		return nil, err
	}
	d := new(Diff)
	if err := canonjson.FromValue(out, d); err != nil {
		return nil, err
	}
	return d, nil
}

// Validate reports whether d is a valid AgentProfileDiff.
func (d *Diff) Validate() error {
	v, err := canonjson.ToValue(d)
	if err != nil {
		return &schema.Error{Kind: KindDiff, Issues: []schema.Issue{{Path: pointerOf(err), Code: schema.CodeInvalidType, Message: err.Error()}}}
	}
	_, err = schema.Run(KindDiff, DiffSchema, v)
	return err
}
