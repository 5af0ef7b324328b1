package candidate

import (
	"regexp"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// KindExecutionPreparationValue is the kind member of an execution
// preparation receipt.
const KindExecutionPreparationValue = "agent-execution-preparation"

// materializationAxes are the profile axes an execution preparation
// receipt covers, in their canonical order (CAND §17). They are the
// reference 1.6.0 axes plus, following the seed text (seed 000: receipts
// account for all three model token ceilings at their exact paths,
// MAT-01; decision CAND §25.5), one axis per ceiling after
// modelReasoningEffort. The seed names neither the axes nor their
// position; these names are agentrt's.
var materializationAxes = []string{
	"name", "description", "version", "tags", "systemPrompt", "appendSystemPrompt", "instructions",
	"modelDefault", "modelSmall", "modelProvider", "modelReasoningEffort",
	"modelMaxVisibleOutputTokens", "modelMaxReasoningTokens", "modelMaxTotalOutputTokens",
	"modelMetadata", "harness",
	"permissions", "tools", "mcp", "connections", "subagents", "files", "resourceTools", "skills",
	"resourceAgents", "commands", "resourceInstructions", "resourceFailOnError", "hooks", "modes",
	"confidential", "metadata", "extensions",
}

var (
	mechanismPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$`)
	lifecyclePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~:/+-]{0,499}$`)

	notCredential = func(label string) schema.Rule[string] {
		return schema.Rule[string]{Code: schema.CodeCustom, Message: label + " cannot carry credential-like material",
			Test: func(s string) bool { return !profile.LooksLikeCredential(s) }}
	}
	nonBlankMax = func(max int) schema.StringNode { return schema.String(schema.NonBlank, schema.MaxLen(max)) }

	effortNode = schema.Enum(harness.EffortNames()...)

	// PreparationAxisResultSchema is AgentExecutionPreparationAxisResult:
	// how one profile axis (and leaf path) was honoured. Overridden and
	// unsupported rows need a reason; others must not carry one.
	PreparationAxisResultSchema = schema.Object(
		schema.Req("axis", schema.Enum(materializationAxes...)),
		schema.Req("disposition", schema.Enum("behavior", "control", "overridden", "unsupported")),
		schema.Req("owner", schema.Enum("runtime", "executor")),
		schema.Req("mechanism", schema.String(schema.Matches("mechanism must be a public identifier, not launch arguments", mechanismPattern.MatchString), notCredential("mechanism"))),
		schema.Opt("evidenceDigest", digestNode),
		schema.Opt("path", schema.String(schema.Rule[string]{Code: schema.CodeCustom, Message: "path must be a canonical RFC 6901 JSON Pointer", Test: isCanonicalPointer})),
		schema.Opt("reason", schema.String(schema.NonBlank, schema.MaxLen(4000), notCredential("reason"))),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		d := member(v, "disposition")
		needs := d == "overridden" || d == "unsupported"
		if needs && !has(v, "reason") {
			c.Custom(d+" profile coverage requires a reason", "reason")
		}
		if !needs && has(v, "reason") {
			c.Custom(d+" profile coverage cannot carry an override reason", "reason")
		}
	})

	// PreparationReasoningEffortSchema is
	// AgentExecutionPreparationReasoningEffort: exact keeps the requested
	// effort, clamped lowers it, unsupported resolves none.
	PreparationReasoningEffortSchema = schema.Object(
		schema.Req("requested", effortNode),
		schema.Opt("resolved", effortNode),
		schema.Req("fidelity", schema.Enum("exact", "clamped", "unsupported")),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		fidelity, requested := member(v, "fidelity"), member(v, "requested")
		resolved, ok := v.Get("resolved")
		switch {
		case fidelity == "unsupported":
			if ok {
				c.Custom("unsupported reasoning effort cannot claim a resolved value", "resolved")
			}
		case !ok:
			c.Custom(fidelity+" reasoning fidelity requires a resolved value", "resolved")
		case fidelity == "exact" && resolved.Str() != requested:
			c.Custom("exact reasoning fidelity must preserve the requested effort", "resolved")
		case fidelity == "clamped" && resolved.Str() == requested:
			c.Custom("clamped reasoning fidelity must change the requested effort", "resolved")
		case fidelity == "clamped" && effortIndex(resolved.Str()) >= effortIndex(requested):
			c.Custom("reasoning effort may clamp down but must never increase", "resolved")
		}
	})

	lifecycleID = schema.String(schema.Matches("lifecycle identity must be a public identifier", lifecyclePattern.MatchString), notCredential("lifecycle identity"))

	// PreparationReceiptSchema is AgentExecutionPreparationReceipt
	// (self-digested; the schema verifies the digest, CAND §17).
	PreparationReceiptSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindExecutionPreparationValue)),
		schema.Req("schemaVersion", schema.Literal(canonjson.NumberValue(1))),
		schema.Req("preparationId", nonBlankMax(500)),
		schema.Req("requestDigest", digestNode),
		schema.Req("authoredProfileDigest", digestNode),
		schema.Req("effectiveProfileDigest", digestNode),
		schema.Req("backend", nonBlankMax(200)),
		schema.Req("harness", profile.HarnessSchema),
		schema.Req("harnessVersion", nonBlankMax(200)),
		schema.Req("resolvedModel", schema.Object(
			schema.Req("requested", schema.String(schema.MaxLen(500))),
			schema.Req("resolved", nonBlankMax(500)),
			schema.Opt("provider", schema.String(schema.MaxLen(200))),
			schema.Opt("reasoningEffort", PreparationReasoningEffortSchema),
		)),
		schema.Req("workspace", schema.Object(
			schema.Req("leaseId", lifecycleID),
			schema.Req("provider", lifecycleID),
			schema.Req("identityDigest", digestNode),
			schema.Req("isolation", schema.Enum("per-run", "shared")),
			schema.Req("sourceSnapshotDigest", digestNode),
			schema.Req("sourceSnapshotPolicy", contract.WorkspaceSnapshotPolicySchema),
			schema.Req("preparedWorkspaceDigest", digestNode),
			schema.Req("profileActivationDigest", digestNode),
		)),
		schema.Req("axisResults", schema.Array(PreparationAxisResultSchema)),
		schema.Req("executionPlanDigest", digestNode),
		schema.Req("materializer", schema.Object(
			schema.Req("name", nonBlankMax(200)),
			schema.Req("version", nonBlankMax(200)),
		)),
		schema.Req("expiresAtMs", positiveInt),
		schema.Req("digest", digestNode),
	).Refine(checkAxisResults).Refine(checkSelfDigest("execution preparation receipt"))
)

// MaterializationAxes returns the profile axes an execution preparation
// receipt covers, in canonical order (a copy).
func MaterializationAxes() []string { return slices.Clone(materializationAxes) }

func effortIndex(e string) int { return slices.Index(harness.EffortNames(), e) }

// isCanonicalPointer: an RFC 6901 pointer from the root whose "~" only
// appears as "~0" or "~1".
func isCanonicalPointer(s string) bool {
	if len(s) == 0 || s[0] != '/' || !canonjson.IsWellFormed(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '~' {
			if i+1 >= len(s) || s[i+1] != '0' && s[i+1] != '1' {
				return false
			}
			i++
		}
	}
	return true
}

// checkAxisResults: rows unique per (axis, path) and sorted by axis
// order then path.
func checkAxisResults(c *schema.Context, v canonjson.Value) {
	rows := at(v, "axisResults").Items()
	seen := map[string]canonjson.Value{}
	for i, row := range rows {
		idx := canonjson.IndexToken(i)
		key := member(row, "axis") + "\x00" + member(row, "path")
		if prev, dup := seen[key]; dup {
			msg := "conflicting profile axis/path results"
			if canonjson.Equal(prev, row) {
				msg = "duplicate profile axis/path result"
			}
			c.Custom(msg, "axisResults", idx)
		} else {
			seen[key] = row
		}
		if i > 0 && compareAxisRows(rows[i-1], row) >= 0 {
			c.Custom("profile axis/path results must be canonically sorted", "axisResults", idx)
		}
	}
}

func compareAxisRows(a, b canonjson.Value) int {
	if d := slices.Index(materializationAxes, member(a, "axis")) - slices.Index(materializationAxes, member(b, "axis")); d != 0 {
		return d
	}
	return canonjson.CompareUTF16(member(a, "path"), member(b, "path"))
}

// checkSelfDigest is the rule of records whose schema verifies their own
// digest: canonical JSON, and digest == [SelfDigest] of the record.
func checkSelfDigest(label string) schema.Refinement {
	return func(c *schema.Context, v canonjson.Value) {
		want, err := SelfDigestValue(v)
		if err != nil {
			c.Custom(label + " must contain only RFC 8785 JSON values")
		} else if member(v, "digest") != want {
			c.Custom(label+" digest is invalid", "digest")
		}
	}
}
