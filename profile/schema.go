package profile

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/schema"
)

// Kind names used in errors and by `agentrt check`.
const (
	KindProfile    = "AgentProfile"
	KindModelHints = "AgentProfileModelHints"
	KindDiff       = "AgentProfileDiff"
	KindCapability = "Capability"
	KindHarness    = "HarnessType"
	// KindSha256Digest is the "sha256:<64 lowercase hex>" digest string.
	KindSha256Digest = "Sha256Digest"
)

// record is a profile record: every member is kept (including
// "__proto__") and member names must be well-formed.
func record(value schema.Node) schema.RecordNode { return schema.Record(value).OwnKeys() }

var (
	str     = schema.String()
	boolean = schema.Bool()

	harnessNode = schema.Enum(harness.Names()...)
	effortNode  = schema.Enum(harness.EffortNames()...)

	permissionValueNode = schema.Enum(string(Allow), string(Deny), string(Ask))
	permissionNode      = schema.Union(permissionValueNode, record(permissionValueNode))
	permissionsNode     = record(permissionNode)
	toolsNode           = record(boolean)
	anyRecord           = record(schema.Any())

	positiveInt = schema.Number(schema.Int, schema.Positive)

	resourceRefNode = schema.Union(
		schema.Object(
			schema.Req("kind", schema.LiteralString(ResourceInline)),
			schema.Req("name", str),
			schema.Req("content", str),
		),
		schema.Object(
			schema.Req("kind", schema.LiteralString(ResourceGitHub)),
			schema.Opt("repository", str),
			schema.Req("path", str),
			schema.Opt("ref", str),
			schema.Opt("name", str),
		),
	)

	fileMountNode = schema.Object(
		schema.Req("path", str),
		schema.Req("resource", resourceRefNode),
		schema.Opt("executable", boolean),
	)

	resourcesNode = schema.Object(
		schema.Opt("files", schema.Array(fileMountNode)),
		schema.Opt("tools", schema.Array(resourceRefNode)),
		schema.Opt("skills", schema.Array(resourceRefNode)),
		schema.Opt("agents", schema.Array(resourceRefNode)),
		schema.Opt("commands", schema.Array(resourceRefNode)),
		schema.Opt("instructions", schema.Union(str, resourceRefNode)),
		schema.Opt("failOnError", boolean),
	)

	promptNode = schema.Object(
		schema.Opt("systemPrompt", str),
		schema.Opt("appendSystemPrompt", str),
		schema.Opt("instructions", schema.Array(str)),
	)

	modelHintsFields = []schema.Field{
		schema.Opt("default", str),
		schema.Opt("small", str),
		schema.Opt("provider", str),
		schema.Opt("reasoningEffort", effortNode),
		schema.Opt("maxVisibleOutputTokens", positiveInt),
		schema.Opt("maxReasoningTokens", positiveInt),
		schema.Opt("maxTotalOutputTokens", positiveInt),
		schema.Opt("metadata", anyRecord),
	}

	// ModelHintsBaseSchema is the model-hints shape without its cross-field
	// rule, for derived shapes (candidate profiles) that extend it.
	ModelHintsBaseSchema = schema.Object(modelHintsFields...)

	modelHintsNode = ModelHintsBaseSchema.Refine(CheckTokenCeilings)

	// PromptSchema is the profile prompt shape (systemPrompt,
	// appendSystemPrompt, instructions), shared with candidate profiles.
	PromptSchema = promptNode

	// PermissionSchema is one permission entry: an enum value or a map of
	// patterns to values, shared with candidate profiles.
	PermissionSchema = permissionNode

	// SubagentSchema is the subagent shape, which candidate profiles
	// narrow (no metadata, exact model and step bounds).
	SubagentSchema = subagentNode

	// ModeSchema is the mode shape, which candidate profiles narrow.
	ModeSchema = modeNode

	// ConfidentialSchema is the confidential-execution hints shape.
	ConfidentialSchema = confidentialNode

	// ModelHintsSchema is the AgentProfileModelHints shape with its rule.
	ModelHintsSchema schema.Node = modelHintsNode

	// HarnessSchema accepts a HarnessType.
	HarnessSchema schema.Node = harnessNode

	// Sha256DigestSchema accepts "sha256:" and 64 lowercase hex digits.
	Sha256DigestSchema = schema.String(schema.Matches("must be sha256: followed by 64 lowercase hex digits", canonjson.IsDigest))

	// publicConfigString and secretRefKey check well-formedness on the
	// value rather than its text, so a decoded string (whose value
	// records it) is not scanned again; long config values are common.
	publicConfigString = schema.Refined(schema.String(), func(c *schema.Context, v canonjson.Value) {
		if s := v.Str(); !v.IsWellFormedString() || canonjson.HasControl(s) || LooksLikeCredential(s) {
			c.Custom("public config must be well-formed, free of control characters and must not look like a credential")
		}
	})

	secretRefKey = schema.Refined(schema.String(schema.MinLen(1), schema.MaxLen(500)), func(c *schema.Context, v canonjson.Value) {
		if s := v.Str(); canonjson.TrimJS(s) == "" || !v.IsWellFormedString() || canonjson.HasControl(s) || LooksLikeCredential(s) {
			c.Custom("a secret reference key must be a public, non-blank, non-credential name")
		}
	})

	configValueNode = schema.Discriminated("kind", map[string]schema.Node{
		ConfigPublic: schema.Object(
			schema.Req("kind", schema.LiteralString(ConfigPublic)),
			schema.Req("value", publicConfigString),
		),
		ConfigSecretRef: schema.Object(
			schema.Req("kind", schema.LiteralString(ConfigSecretRef)),
			schema.Req("key", secretRefKey),
			schema.Opt("format", schema.Enum("raw", "bearer")),
		),
	})

	envNode     = configRecord(IsEnvironmentName)
	headersNode = configRecord(IsHeaderName)

	subagentNode = schema.Object(
		schema.Opt("description", str),
		schema.Opt("prompt", str),
		schema.Opt("model", str),
		schema.Opt("tools", toolsNode),
		schema.Opt("permissions", permissionsNode),
		schema.Opt("maxSteps", schema.Number()),
		schema.Opt("metadata", anyRecord),
	)

	hookCommandNode = schema.Object(
		schema.Req("command", str),
		schema.Opt("timeoutMs", schema.Number(schema.Positive)),
		schema.Opt("blocking", boolean),
		schema.Opt("matcher", str),
		schema.Opt("env", envNode),
	)

	modeNode = schema.Object(
		schema.Opt("description", str),
		schema.Opt("model", str),
		schema.Opt("prompt", str),
		schema.Opt("tools", toolsNode),
		schema.Opt("permissions", permissionsNode),
		schema.Opt("metadata", anyRecord),
	)

	confidentialNode = schema.Object(
		schema.Opt("tee", str),
		schema.Opt("attestationNonce", str),
		schema.Opt("sealed", boolean),
		schema.Opt("attestationRefresh", boolean),
	)

	mcpNode = schema.Union(
		schema.Object(
			schema.Opt("transport", schema.LiteralString("stdio")),
			schema.Req("command", schema.String(schema.NonBlank, schema.Rule[string]{
				Code: schema.CodeCustom, Message: "a local MCP command must be a canonical, shell-free public executable",
				Test: IsSafeExecutable,
			})),
			schema.Opt("args", schema.Array(configValueNode)),
			schema.Opt("env", envNode),
			schema.Opt("cwd", schema.String(schema.Rule[string]{
				Code: schema.CodeCustom, Message: "a local MCP cwd must be a canonical workspace-relative path",
				Test: func(s string) bool { return IsSafeRelativePath(s, true) },
			})),
			schema.Opt("enabled", schema.Literal(canonjson.BoolValue(true))),
			schema.Opt("metadata", anyRecord),
		),
		schema.Object(
			schema.Opt("transport", schema.Enum("sse", "http")),
			schema.Req("url", schema.String(schema.NonBlank,
				schema.Rule[string]{Code: schema.CodeCustom, Message: "a remote MCP url must be an absolute http or https URL", Test: IsHTTPURL},
				schema.Rule[string]{Code: schema.CodeCustom, Message: "a remote MCP url must not carry credentials or credential-named query parameters",
					Test: func(s string) bool { return !LooksLikeCredential(s) }},
			)),
			schema.Opt("headers", headersNode),
			schema.Opt("enabled", schema.Literal(canonjson.BoolValue(true))),
			schema.Opt("metadata", anyRecord),
		),
		schema.Object(
			schema.Req("enabled", schema.Literal(canonjson.BoolValue(false))),
			schema.Opt("metadata", anyRecord),
		),
	)

	connectionNode = schema.Object(
		schema.Req("connectionId", schema.String(schema.MinLen(1))),
		schema.Req("capabilities", schema.Array(schema.String(schema.MinLen(1))).MinItems(1)),
		schema.Opt("alias", schema.String(schema.MinLen(1))),
	)

	canonicalText = schema.String(schema.MinLen(1), schema.Trimmed)

	// SeatStageSchema is the strict shape of a seat stage's identity —
	// its harness, provider, model and account selector — without the
	// stage's tool and permission maps: what a stage's credential request
	// names.
	SeatStageSchema = schema.Object(
		schema.Req("harness", harnessNode),
		schema.Req("provider", schema.String(schema.Matches("must match ^[a-z][a-z0-9-]*$", isProviderName))),
		schema.Req("model", canonicalText),
		schema.Req("selector", schema.Discriminated("kind", map[string]schema.Node{
			SelectorAllEligible: schema.Object(schema.Req("kind", schema.LiteralString(SelectorAllEligible))),
			SelectorSeat: schema.Object(
				schema.Req("kind", schema.LiteralString(SelectorSeat)),
				schema.Req("id", canonicalText),
			),
		})),
	)

	seatNode = SeatStageSchema.Extend(
		schema.Opt("tools", toolsNode),
		schema.Opt("permissions", permissionsNode),
	)

	profileFields = []schema.Field{
		schema.Opt("name", str),
		schema.Opt("description", str),
		schema.Opt("version", str),
		schema.Opt("tags", schema.Array(str)),
		schema.Opt("prompt", promptNode),
		schema.Opt("model", modelHintsNode),
		schema.Opt("harness", harnessNode),
		schema.Opt("seats", schema.Array(seatNode).MinItems(1)),
		schema.Opt("permissions", permissionsNode),
		schema.Opt("tools", toolsNode),
		schema.Opt("mcp", record(mcpNode)),
		schema.Opt("connections", schema.Array(connectionNode)),
		schema.Opt("subagents", record(subagentNode)),
		schema.Opt("resources", resourcesNode),
		schema.Opt("hooks", record(schema.Array(hookCommandNode))),
		schema.Opt("modes", record(modeNode)),
		schema.Opt("confidential", confidentialNode),
		schema.Opt("metadata", anyRecord),
		schema.Opt("extensions", record(anyRecord)),
	}

	// fragmentSchema is the profile shape with every rule that holds for a
	// part of a profile: all but the seat-chain rules, which relate seats
	// to the top-level harness and model and so only hold for a whole
	// profile. A diff's set is a fragment.
	fragmentSchema = schema.Object(profileFields...).Refine(checkNestedKeys)

	// Schema is the AgentProfile shape with every rule: record keys, token
	// ceilings, MCP and config safety, and seat chains.
	Schema = fragmentSchema.Refine(checkSeats)

	// CapabilitySchema is the Capability shape.
	CapabilitySchema = schema.Object(
		schema.Req("id", schema.String(schema.MinLen(1))),
		schema.Req("definition", Schema),
		schema.Opt("recommendedSize", schema.Enum(sandboxSizes...)),
	)
)

func isProviderName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// configRecord is an env or header record: member names must be valid for
// the field, and a credential-bearing name must hold a secret reference.
func configRecord(validName func(string) bool) schema.Node {
	return schema.Refined(record(configValueNode), func(c *schema.Context, v canonjson.Value) {
		for _, m := range v.Members() {
			if !validName(m.Name) {
				c.Custom("config name is not valid for this field", m.Name)
			}
			if kind, _ := m.Value.Get("kind"); kind.Str() == ConfigPublic && IsCredentialBearingProfileConfigName(m.Name) {
				c.Custom("a credential-bearing config name requires a secret-ref, not a public value", m.Name)
			}
		}
	})
}

// CheckTokenCeilings is the model-hints rule: when maxTotalOutputTokens is
// set, neither maxVisibleOutputTokens nor maxReasoningTokens may exceed it.
// Values are never clamped.
func CheckTokenCeilings(c *schema.Context, v canonjson.Value) {
	total, ok := v.Get("maxTotalOutputTokens")
	if !ok {
		return
	}
	for _, name := range []string{"maxVisibleOutputTokens", "maxReasoningTokens"} {
		if single, ok := v.Get(name); ok && single.Float() > total.Float() {
			c.Check(schema.CodeCustom, name+" must not exceed maxTotalOutputTokens", name)
		}
	}
}

// checkNestedKeys refuses ill-formed member names anywhere in the profile,
// including inside metadata and extension values. A decoded value whose
// names the decoder already found well-formed is not walked again.
func checkNestedKeys(c *schema.Context, v canonjson.Value) {
	if v.NamesWellFormed() {
		return
	}
	switch v.Kind() {
	case canonjson.Object:
		for _, m := range v.Members() {
			if !canonjson.IsWellFormed(m.Name) {
				c.Custom("member names must be well-formed Unicode", m.Name)
			}
			c.Push(m.Name)
			checkNestedKeys(c, m.Value)
			c.Pop()
		}
	case canonjson.Array:
		for i, item := range v.Items() {
			c.PushIndex(i)
			checkNestedKeys(c, item)
			c.Pop()
		}
	}
}

// Kinds lists the wire kinds this package owns, for `agentrt check`.
func Kinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindProfile, Node: Schema, Identity: profileIdentity},
		{Name: KindDiff, Node: DiffSchema},
		{Name: KindModelHints, Node: ModelHintsSchema},
		{Name: KindCapability, Node: CapabilitySchema},
		{Name: KindHarness, Node: HarnessSchema},
		{Name: KindSha256Digest, Node: Sha256DigestSchema},
	}
}

// profileIdentity reports profileDigest, or profileDigestError when a
// valid profile has no canonical form.
func profileIdentity(v canonjson.Value) []canonjson.Member {
	d, err := DigestValue(v)
	if err != nil {
		return []canonjson.Member{{Name: "profileDigestError", Value: canonjson.StringValue(err.Error())}}
	}
	return []canonjson.Member{{Name: "profileDigest", Value: canonjson.StringValue(d)}}
}
