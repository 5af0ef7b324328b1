package profile

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
)

// Profile is an AgentProfile. Every field is optional; a nil pointer, map or
// slice is absent, and an empty non-nil map or slice is present.
type Profile struct {
	Name        *string               `json:"name,omitzero"`
	Description *string               `json:"description,omitzero"`
	Version     *string               `json:"version,omitzero"`
	Tags        []string              `json:"tags,omitzero"`
	Prompt      *Prompt               `json:"prompt,omitzero"`
	Model       *ModelHints           `json:"model,omitzero"`
	Harness     harness.Type          `json:"harness,omitzero"`
	Seats       []Seat                `json:"seats,omitzero"`
	Permissions map[string]Permission `json:"permissions,omitzero"`
	Tools       map[string]bool       `json:"tools,omitzero"`
	MCP         map[string]MCPServer  `json:"mcp,omitzero"`
	Connections []Connection          `json:"connections,omitzero"`
	Subagents   map[string]Subagent   `json:"subagents,omitzero"`
	Resources   *Resources            `json:"resources,omitzero"`
	// Hooks maps an event name to the commands run for it.
	Hooks        map[string][]HookCommand   `json:"hooks,omitzero"`
	Modes        map[string]Mode            `json:"modes,omitzero"`
	Confidential *Confidential              `json:"confidential,omitzero"`
	Metadata     map[string]canonjson.Value `json:"metadata,omitzero"`
	// Extensions maps a backend namespace to its settings object.
	Extensions map[string]map[string]canonjson.Value `json:"extensions,omitzero"`
}

// Prompt holds the prompt intents. SystemPrompt replaces the harness's own
// system prompt; AppendSystemPrompt is added to it. Both may be set: the
// effective order is SystemPrompt then AppendSystemPrompt. Instructions are
// lower-privilege project-instruction lines (AGENTS.md / CLAUDE.md style).
type Prompt struct {
	SystemPrompt       *string  `json:"systemPrompt,omitzero"`
	AppendSystemPrompt *string  `json:"appendSystemPrompt,omitzero"`
	Instructions       []string `json:"instructions,omitzero"`
}

// ModelHints selects the model. The three token ceilings are positive safe
// integers; when MaxTotalOutputTokens is set, neither single ceiling may
// exceed it. ReasoningEffort is a quality dial, never a token bound.
type ModelHints struct {
	Default                *string                    `json:"default,omitzero"`
	Small                  *string                    `json:"small,omitzero"`
	Provider               *string                    `json:"provider,omitzero"`
	ReasoningEffort        harness.ReasoningEffort    `json:"reasoningEffort,omitzero"`
	MaxVisibleOutputTokens *int64                     `json:"maxVisibleOutputTokens,omitzero"`
	MaxReasoningTokens     *int64                     `json:"maxReasoningTokens,omitzero"`
	MaxTotalOutputTokens   *int64                     `json:"maxTotalOutputTokens,omitzero"`
	Metadata               map[string]canonjson.Value `json:"metadata,omitzero"`
}

// Seat is one stage of a seat chain: a harness, provider, model and the
// account selector that continues one logical agent across subscriptions.
// Tools and Permissions, when set, replace the profile-level maps for this
// stage; an empty non-nil map removes them; nil inherits them.
type Seat struct {
	Harness     harness.Type          `json:"harness"`
	Provider    string                `json:"provider"`
	Model       string                `json:"model"`
	Selector    SeatSelector          `json:"selector"`
	Tools       map[string]bool       `json:"tools,omitzero"`
	Permissions map[string]Permission `json:"permissions,omitzero"`
}

// Seat selector kinds.
const (
	// SelectorAllEligible lets the account manager try each eligible
	// account in its own order.
	SelectorAllEligible = "all-eligible"
	// SelectorSeat pins one named account.
	SelectorSeat = "seat"
)

// SeatSelector chooses the account for a stage. ID is set exactly when Kind
// is SelectorSeat. Selectors carry no credentials.
type SeatSelector struct {
	Kind string  `json:"kind"`
	ID   *string `json:"id,omitzero"`
}

// PermissionValue is "allow", "ask" or "deny".
type PermissionValue string

// The permission values.
const (
	Allow PermissionValue = "allow"
	Ask   PermissionValue = "ask"
	Deny  PermissionValue = "deny"
)

// Permission is either one value for the whole permission or a map from
// pattern to value. Exactly one of Value and Patterns is set.
type Permission struct {
	Value    PermissionValue
	Patterns map[string]PermissionValue
}

// MarshalValue implements canonjson.ValueMarshaler.
func (p Permission) MarshalValue() (canonjson.Value, error) {
	if p.Patterns != nil {
		return canonjson.ToValue(p.Patterns)
	}
	return canonjson.StringValue(string(p.Value)), nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (p *Permission) UnmarshalValue(v canonjson.Value) error {
	*p = Permission{}
	if v.Kind() == canonjson.String {
		p.Value = PermissionValue(v.Str())
		return nil
	}
	return canonjson.FromValue(v, &p.Patterns)
}

// Resource reference kinds.
const (
	ResourceInline = "inline"
	ResourceGitHub = "github"
)

// ResourceRef is an inline resource (Kind "inline": Name and Content
// required) or a GitHub resource (Kind "github": Path required; Repository
// "owner/repo", Ref and Name optional).
type ResourceRef struct {
	Kind       string  `json:"kind"`
	Name       *string `json:"name,omitzero"`
	Content    *string `json:"content,omitzero"`
	Repository *string `json:"repository,omitzero"`
	Path       *string `json:"path,omitzero"`
	Ref        *string `json:"ref,omitzero"`
}

// FileMount mounts a resource at a workspace path.
type FileMount struct {
	Path       string      `json:"path"`
	Resource   ResourceRef `json:"resource"`
	Executable *bool       `json:"executable,omitzero"`
}

// Resources are the files and resource collections a profile mounts.
type Resources struct {
	Files        []FileMount   `json:"files,omitzero"`
	Tools        []ResourceRef `json:"tools,omitzero"`
	Skills       []ResourceRef `json:"skills,omitzero"`
	Agents       []ResourceRef `json:"agents,omitzero"`
	Commands     []ResourceRef `json:"commands,omitzero"`
	Instructions *Instructions `json:"instructions,omitzero"`
	FailOnError  *bool         `json:"failOnError,omitzero"`
}

// Instructions is either literal text or a resource reference. Exactly one
// of Text and Ref is set.
type Instructions = TextOrRef[ResourceRef]

// TextOrRef is a value that is either a JSON string (Text) or an object
// decoded as an R (Ref); exactly one is set. It is the shape of
// resources.instructions, here and in frozen candidates (whose resource
// type differs).
type TextOrRef[R any] struct {
	Text *string
	Ref  *R
}

// MarshalValue implements canonjson.ValueMarshaler.
func (i TextOrRef[R]) MarshalValue() (canonjson.Value, error) {
	if i.Ref != nil {
		return canonjson.ToValue(i.Ref)
	}
	if i.Text != nil {
		return canonjson.StringValue(*i.Text), nil
	}
	return canonjson.Value{}, nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (i *TextOrRef[R]) UnmarshalValue(v canonjson.Value) error {
	*i = TextOrRef[R]{}
	if v.Kind() == canonjson.String {
		s := v.Str()
		i.Text = &s
		return nil
	}
	i.Ref = new(R)
	return canonjson.FromValue(v, i.Ref)
}

// MCPServer declares one MCP server in one of three forms:
//
//   - local: Command (a safe, shell-free executable) with optional Args,
//     Env, Cwd and Transport "stdio";
//   - remote: URL (absolute http or https, no credentials) with optional
//     Headers and Transport "sse" or "http";
//   - disabled: Enabled false and nothing else but Metadata.
//
// Enabled, when set on a local or remote server, must be true.
type MCPServer struct {
	Transport *string                    `json:"transport,omitzero"`
	Command   *string                    `json:"command,omitzero"`
	Args      []ConfigValue              `json:"args,omitzero"`
	Env       map[string]ConfigValue     `json:"env,omitzero"`
	Cwd       *string                    `json:"cwd,omitzero"`
	URL       *string                    `json:"url,omitzero"`
	Headers   map[string]ConfigValue     `json:"headers,omitzero"`
	Enabled   *bool                      `json:"enabled,omitzero"`
	Metadata  map[string]canonjson.Value `json:"metadata,omitzero"`
}

// IsDisabled reports whether the server is declared disabled.
func (s MCPServer) IsDisabled() bool { return s.Enabled != nil && !*s.Enabled }

// IsLocal reports whether the server is a local (stdio) server.
func (s MCPServer) IsLocal() bool {
	return !s.IsDisabled() && (s.Command != nil || s.Transport != nil && *s.Transport == "stdio")
}

// Config value kinds.
const (
	ConfigPublic    = "public"
	ConfigSecretRef = "secret-ref"
)

// ConfigValue is a public value (Kind "public", Value set) or a reference
// to a secret held elsewhere (Kind "secret-ref", Key set, Format "raw" or
// "bearer" optional). Secret values never appear in a profile.
type ConfigValue struct {
	Kind   string  `json:"kind"`
	Value  *string `json:"value,omitzero"`
	Key    *string `json:"key,omitzero"`
	Format *string `json:"format,omitzero"`
}

// Connection grants the agent an external connection.
type Connection struct {
	ConnectionID string   `json:"connectionId"`
	Capabilities []string `json:"capabilities"`
	Alias        *string  `json:"alias,omitzero"`
}

// Subagent declares a subagent the harness may delegate to.
type Subagent struct {
	Description *string                    `json:"description,omitzero"`
	Prompt      *string                    `json:"prompt,omitzero"`
	Model       *string                    `json:"model,omitzero"`
	Tools       map[string]bool            `json:"tools,omitzero"`
	Permissions map[string]Permission      `json:"permissions,omitzero"`
	MaxSteps    *float64                   `json:"maxSteps,omitzero"`
	Metadata    map[string]canonjson.Value `json:"metadata,omitzero"`
}

// HookCommand is one command a hook runs.
type HookCommand struct {
	Command   string                 `json:"command"`
	TimeoutMs *float64               `json:"timeoutMs,omitzero"`
	Blocking  *bool                  `json:"blocking,omitzero"`
	Matcher   *string                `json:"matcher,omitzero"`
	Env       map[string]ConfigValue `json:"env,omitzero"`
}

// Mode is a named operating mode.
type Mode struct {
	Description *string                    `json:"description,omitzero"`
	Model       *string                    `json:"model,omitzero"`
	Prompt      *string                    `json:"prompt,omitzero"`
	Tools       map[string]bool            `json:"tools,omitzero"`
	Permissions map[string]Permission      `json:"permissions,omitzero"`
	Metadata    map[string]canonjson.Value `json:"metadata,omitzero"`
}

// Confidential requests confidential execution. Tee is free text (known
// values: tdx, nitro, phala-dstack, sev-snp, any).
type Confidential struct {
	Tee                *string `json:"tee,omitzero"`
	AttestationNonce   *string `json:"attestationNonce,omitzero"`
	Sealed             *bool   `json:"sealed,omitzero"`
	AttestationRefresh *bool   `json:"attestationRefresh,omitzero"`
}

// Capability is a registered capability: a stable id and its profile.
type Capability struct {
	ID              string  `json:"id"`
	Definition      Profile `json:"definition"`
	RecommendedSize *string `json:"recommendedSize,omitzero"`
}

// SandboxSizes are the compute tiers a Capability may recommend.
var sandboxSizes = []string{"nano", "small", "medium", "large"}
