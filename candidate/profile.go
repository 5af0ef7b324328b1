package candidate

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

var (
	mcpLocalNode = schema.Object(
		schema.Opt("transport", schema.LiteralString("stdio")),
		schema.Req("command", executableNode),
		schema.Opt("args", configValues),
		schema.Opt("env", envNode),
		schema.Opt("cwd", relPath(true, "MCP cwd must be a canonical workspace-relative path")),
		schema.Opt("enabled", schema.Literal(canonjson.BoolValue(true))),
	)
	mcpDisabledNode = schema.Object(schema.Req("enabled", schema.Literal(canonjson.BoolValue(false))))

	// MCPServerSchema is a candidate MCP server: a local stdio process
	// with a shell-free executable and public config, or disabled. Remote
	// MCP is impossible in a candidate (CAND §5).
	MCPServerSchema = schema.Union(mcpLocalNode, mcpDisabledNode)

	// HookCommandSchema is a candidate hook: a shell-free executable with
	// public arguments; there is no shell command string.
	HookCommandSchema = schema.Object(
		schema.Req("executable", executableNode),
		schema.Opt("args", configValues),
		schema.Opt("timeoutMs", schema.Number(schema.Positive)),
		schema.Opt("blocking", boolean),
		schema.Opt("matcher", wellFormed),
		schema.Opt("env", envNode),
	)

	candidateModelNode = profile.ModelHintsBaseSchema.Omit("metadata").Extend(
		schema.Opt("default", nonEmpty),
		schema.Opt("small", nonEmpty),
		schema.Opt("provider", nonEmpty),
	).Refine(profile.CheckTokenCeilings)

	candidateSubagentNode = profile.SubagentSchema.Omit("metadata").Extend(
		schema.Opt("model", nonEmpty),
		schema.Opt("maxSteps", positiveInt),
	)

	candidateModeNode = profile.ModeSchema.Omit("metadata").Extend(schema.Opt("model", nonEmpty))

	// ProfileSchema is AgentCandidateProfile: the recursively strict,
	// immutable AgentProfile subset a frozen candidate carries (CAND §5).
	// It reuses profile's prompt, permission, subagent, mode,
	// confidential and model-hint rules; metadata, connections, seats and
	// extensions are refused as unknown members, and every alternate
	// model route must equal model.default.
	ProfileSchema = schema.Object(
		schema.Opt("name", wellFormed),
		schema.Opt("description", wellFormed),
		schema.Opt("version", wellFormed),
		schema.Opt("tags", schema.Array(wellFormed)),
		schema.Opt("prompt", profile.PromptSchema),
		schema.Opt("model", candidateModelNode),
		schema.Opt("harness", profile.HarnessSchema),
		schema.Opt("permissions", schema.Record(profile.PermissionSchema)),
		schema.Opt("tools", schema.Record(boolean)),
		schema.Opt("mcp", schema.Record(MCPServerSchema)),
		schema.Opt("subagents", schema.Record(candidateSubagentNode)),
		schema.Opt("resources", ResourcesSchema),
		schema.Opt("hooks", schema.Record(schema.Array(HookCommandSchema))),
		schema.Opt("modes", schema.Record(candidateModeNode)),
		schema.Opt("confidential", profile.ConfidentialSchema),
	).Refine(checkCanonical("candidate profile must contain only RFC 8785 JSON values")).Refine(checkSingleModel)
)

// checkSingleModel is the single-model rule of a sealed candidate: every
// alternate route (model.small, subagents.*.model, modes.*.model) must
// equal model.default, which must then exist.
func checkSingleModel(c *schema.Context, v canonjson.Value) {
	model, _ := v.Get("model")
	primary, hasPrimary := model.Get("default")
	check := func(route canonjson.Value, path ...string) {
		if !hasPrimary || route.Str() != primary.Str() {
			c.Custom("sealed candidates require every model route to use the exact primary model", path...)
		}
	}
	if small, ok := model.Get("small"); ok {
		check(small, "model", "small")
	}
	for _, group := range []string{"subagents", "modes"} {
		for _, m := range at(v, group).Members() {
			if route, ok := m.Value.Get("model"); ok {
				check(route, group, m.Name, "model")
			}
		}
	}
}

// Profile is AgentCandidateProfile. Presence round-trips: nil pointers,
// maps and slices are absent.
type Profile struct {
	Name         *string                       `json:"name,omitzero"`
	Description  *string                       `json:"description,omitzero"`
	Version      *string                       `json:"version,omitzero"`
	Tags         []string                      `json:"tags,omitzero"`
	Prompt       *profile.Prompt               `json:"prompt,omitzero"`
	Model        *profile.ModelHints           `json:"model,omitzero"`
	Harness      harness.Type                  `json:"harness,omitzero"`
	Permissions  map[string]profile.Permission `json:"permissions,omitzero"`
	Tools        map[string]bool               `json:"tools,omitzero"`
	MCP          map[string]MCPServer          `json:"mcp,omitzero"`
	Subagents    map[string]profile.Subagent   `json:"subagents,omitzero"`
	Resources    *Resources                    `json:"resources,omitzero"`
	Hooks        map[string][]HookCommand      `json:"hooks,omitzero"`
	Modes        map[string]profile.Mode       `json:"modes,omitzero"`
	Confidential *profile.Confidential         `json:"confidential,omitzero"`
}

// MCPServer is a candidate MCP server: local (Command set) or disabled
// (only Enabled=false).
type MCPServer struct {
	Transport *string                `json:"transport,omitzero"`
	Command   *string                `json:"command,omitzero"`
	Args      []ConfigValue          `json:"args,omitzero"`
	Env       map[string]ConfigValue `json:"env,omitzero"`
	Cwd       *string                `json:"cwd,omitzero"`
	Enabled   *bool                  `json:"enabled,omitzero"`
}

// HookCommand is a candidate hook: an executable and public arguments.
type HookCommand struct {
	Executable string                 `json:"executable"`
	Args       []ConfigValue          `json:"args,omitzero"`
	TimeoutMs  *float64               `json:"timeoutMs,omitzero"`
	Blocking   *bool                  `json:"blocking,omitzero"`
	Matcher    *string                `json:"matcher,omitzero"`
	Env        map[string]ConfigValue `json:"env,omitzero"`
}

// ConfigValue is a public candidate config value ({kind:"public",
// value}).
type ConfigValue struct {
	Kind  string `json:"kind"`
	Value string `json:"value"`
}
