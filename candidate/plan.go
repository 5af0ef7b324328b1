package candidate

import (
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Evidence kinds of the plan records (CAND §2.2, §13).
const (
	KindProfilePlanEvidenceValue     = "agent-profile-workspace-plan"
	KindExecutionPlanEvidenceValue   = "agent-candidate-execution-plan"
	KindExecutionPlanMaterialValue   = "agent-candidate-execution-plan-material"
	KindProfileActivationValue       = "agent-candidate-profile-activation"
	KindRunCellValue                 = "agent-candidate-run-cell"
	KindModelSettlementEvidenceValue = "agent-candidate-model-settlement"
	KindModelSettlementMaterialValue = "agent-candidate-model-settlement-material"
	KindTaskOutcomeEvidenceValue     = "agent-candidate-task-outcome"
	KindTaskOutcomeMaterialValue     = "agent-candidate-task-outcome-material"
	KindBenchmarkResultEvidenceValue = "agent-candidate-benchmark-result"
	KindBenchmarkResultMaterialValue = "agent-candidate-benchmark-result-material"
	KindMaterializationReceiptValue  = "agent-candidate-materialization"
	KindRunReceiptValue              = "agent-candidate-run"
	KindExecutionEvidenceValue       = "agent-candidate-execution-evidence"
	KindBenchmarkTaskValue           = "agent-candidate-benchmark-task"
	KindBenchmarkSuiteValue          = "agent-candidate-benchmark-suite"
)

// evidenceSchema is an evidence record {kind, digest, material,
// artifact} whose artifact carries exactly the canonical material bytes:
// artifact.sha256 == digest and a non-empty artifact (CAND §2.2). That
// digest equals sha256(JCS(material)) is checked by [EvidenceDigest]'s
// callers, as in the reference, outside the schema.
func evidenceSchema(kind string, material schema.Node, label string) *schema.ObjectNode {
	return schema.Object(
		schema.Req("kind", schema.LiteralString(kind)),
		schema.Req("digest", digestNode),
		schema.Req("material", material),
		schema.Req("artifact", capturedNode),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if member(at(v, "artifact"), "sha256") != member(v, "digest") {
			c.Custom(label+" artifact hash must equal its canonical material digest", "artifact", "sha256")
		}
		if num(v, "artifact", "byteLength") == 0 {
			c.Custom(label+" artifact must contain canonical material bytes", "artifact", "byteLength")
		}
	})
}

func isCanonicalAbsolutePath(s string) bool {
	return strings.HasPrefix(s, "/") && s != "/" && !strings.Contains(s, "//") && profile.IsSafeRelativePath(s[1:], false)
}

func pathsOverlap(a, b string) bool {
	return a == b || strings.HasPrefix(a, b+"/") || strings.HasPrefix(b, a+"/")
}

var gatewayLabel = func(s string) bool {
	if len(s) < 1 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isExactPublicGatewayDomain: a lowercase public DNS name of at least two
// labels, with a letter in its last label, no port and no trailing dot.
func isExactPublicGatewayDomain(s string) bool {
	if canonjson.UTF16Len(s) > 253 || s != strings.ToLower(s) || strings.HasSuffix(s, ".") || strings.Contains(s, ":") || IsPrivateHost(s) {
		return false
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !gatewayLabel(l) {
			return false
		}
	}
	return strings.ContainsAny(labels[len(labels)-1], "abcdefghijklmnopqrstuvwxyz")
}

var (
	// ResolvedModelSchema is AgentCandidateResolvedModel: the one model
	// the evaluator resolved for a task.
	ResolvedModelSchema = schema.Object(
		schema.Req("requested", nonEmpty),
		schema.Req("provider", nonEmpty),
		schema.Req("model", nonEmpty),
		schema.Req("snapshot", nonEmpty),
		schema.Req("reasoningEffort", schema.Enum(harness.EffortNames()...)),
	)

	// GraderSchema is a pinned benchmark grader.
	GraderSchema = schema.Object(
		schema.Req("name", nonEmpty),
		schema.Req("version", nonEmpty),
		schema.Req("format", schema.LiteralString("tangle-grader")),
		schema.Req("artifact", ArtifactRefSchema),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if num(v, "artifact", "byteLength") == 0 {
			c.Custom("pinned grader artifact must contain executable grader bytes", "artifact", "byteLength")
		}
	})

	// TaskRepositorySchema is a task's exact source repository.
	TaskRepositorySchema = schema.Object(
		schema.Req("identity", schema.String(schema.MinLen(1), schema.MaxLen(512))),
		schema.Req("rootIdentity", schema.String(schema.MinLen(1), schema.MaxLen(512))),
		schema.Req("baseCommit", gitObjectNode),
		schema.Req("baseTree", gitObjectNode),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		if !sameGitObjectFormat(member(v, "baseCommit"), member(v, "baseTree")) {
			c.Custom("task Git object ids must use one object format")
		}
	})

	platformNode = func(max int) schema.Node {
		s := schema.String(schema.MinLen(1))
		if max > 0 {
			s = schema.String(schema.MinLen(1), schema.MaxLen(max))
		}
		return schema.Object(
			schema.Req("os", s),
			schema.Req("architecture", s),
			schema.Opt("variant", s),
		)
	}

	// ResolvedTaskContainerSchema is the evaluator-selected task
	// container: image, index, manifest and platform.
	ResolvedTaskContainerSchema = ContainerSchema.Extend(
		schema.Req("source", schema.LiteralString("evaluator-task-container")),
		schema.Req("manifestDigest", digestNode),
		schema.Req("platform", platformNode(100)),
	)

	// ExecutionLimitsSchema is AgentCandidateExecutionLimits, owned by
	// contract.
	ExecutionLimitsSchema = contract.ExecutionLimitsSchema

	// ProfilePlanMaterialSchema is AgentCandidateProfilePlanMaterial: what
	// the harness materializer writes; unsupported must be empty
	// (CAND §13.1).
	ProfilePlanMaterialSchema = schema.Object(
		schema.Req("sourceProfileDigest", digestNode),
		schema.Req("harness", profile.HarnessSchema),
		schema.Req("files", schema.Array(schema.Object(
			schema.Req("relPath", relPath(false, "profile-plan file must use a canonical relative path")),
			schema.Req("mode", fileMode),
			schema.Req("contentSha256", digestNode),
		))),
		schema.Req("env", envNode),
		schema.Req("flags", configValues),
		schema.Opt("systemPrompt", configValueNode),
		schema.Opt("appendSystemPrompt", configValueNode),
		schema.Req("unsupported", schema.Array(schema.Object(
			schema.Req("dimension", nonEmpty),
			schema.Req("reason", nonEmpty),
		)).MaxItems(0)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		paths := memberStrings(at(v, "files"), "relPath")
		checkDuplicates(c, paths, "files")
		checkAscending(c, paths, "profile-plan files must be lexicographically sorted", "relPath", "files")
	}).Refine(checkCanonical("profile-plan material must contain only RFC 8785 JSON values"))

	// ProfilePlanEvidenceSchema is the profile plan evidence record.
	ProfilePlanEvidenceSchema = evidenceSchema(KindProfilePlanEvidenceValue, ProfilePlanMaterialSchema, "plan")

	// ProfileActivationSchema is AgentCandidateProfileActivation: the
	// exact native files applied before the process starts, one per
	// planned file with its path, mode and content hash.
	ProfileActivationSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindProfileActivationValue)),
		schema.Req("profilePlan", ProfilePlanEvidenceSchema),
		schema.Req("files", schema.Array(schema.Object(
			schema.Req("path", relPath(false, "profile activation file must use a canonical relative path")),
			schema.Req("mode", fileMode),
			schema.Req("content", schema.String(schema.Rule[string]{Code: schema.CodeCustom, Message: "profile activation content must be valid Unicode", Test: canonjson.IsWellFormed})),
		))),
		schema.Req("digest", digestNode),
	).Refine(checkActivation).Refine(checkCanonical("profile activation must contain only RFC 8785 JSON values"))

	// EffectiveMemorySchema is the plan's effective memory: disabled, or
	// a fresh task-scoped namespace.
	EffectiveMemorySchema = schema.Discriminated("mode", map[string]schema.Node{
		"disabled": modeDisabled,
		"isolated": schema.Object(
			schema.Req("mode", schema.LiteralString("isolated")),
			schema.Req("scope", schema.LiteralString("task")),
			schema.Req("effectiveNamespace", nonEmpty),
			schema.Req("reset", schema.Object(
				schema.Req("kind", schema.LiteralString("fresh")),
				schema.Req("evidence", capturedNode),
				schema.Req("emptyStateDigest", digestNode),
			)),
			schema.Req("beforeState", WorkspaceSnapshotEvidenceSchema),
			schema.Opt("seedDigest", digestNode),
		).Refine(func(c *schema.Context, v canonjson.Value) {
			if num(v, "reset", "evidence", "byteLength") == 0 {
				c.Custom("task-scoped memory requires non-empty fresh-reset evidence", "reset", "evidence", "byteLength")
			}
		}),
	})

	// RunCellMaterialSchema is a run cell without its digest.
	RunCellMaterialSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindRunCellValue)),
		schema.Req("experimentDigest", digestNode),
		schema.Req("arm", schema.Enum("baseline", "candidate")),
		schema.Req("bundleDigest", digestNode),
		schema.Req("suiteDigest", digestNode),
		schema.Req("taskDigest", digestNode),
		schema.Req("taskIndex", safeCount),
		schema.Req("repetition", safeCount),
		schema.Req("seed", schema.Number(schema.Int)),
		schema.Req("attempt", positiveInt),
	)

	// RunCellSchema is AgentCandidateRunCell (self-digested).
	RunCellSchema = RunCellMaterialSchema.Extend(schema.Req("digest", digestNode))

	routeNode = schema.Discriminated("kind", map[string]schema.Node{
		"primary": schema.Object(schema.Req("kind", schema.LiteralString("primary")), schema.Opt("requested", nonEmpty)),
		"small":   schema.Object(schema.Req("kind", schema.LiteralString("small")), schema.Req("requested", nonEmpty)),
		"mode": schema.Object(schema.Req("kind", schema.LiteralString("mode")), schema.Req("name", nonEmpty),
			schema.Req("requested", nonEmpty)),
		"subagent": schema.Object(schema.Req("kind", schema.LiteralString("subagent")), schema.Req("name", nonEmpty),
			schema.Req("requested", nonEmpty)),
	})

	modelNetworkNode = schema.Discriminated("mode", map[string]schema.Node{
		"disabled": modeDisabled,
		"gateway-only": schema.Object(
			schema.Req("mode", schema.LiteralString("gateway-only")),
			schema.Req("domains", schema.Array(schema.String(schema.Rule[string]{Code: schema.CodeCustom,
				Message: "model gateway must be an exact lowercase public DNS name", Test: isExactPublicGatewayDomain})).MinItems(1)),
		),
	})

	planContainerNode = ContainerSchema.Extend(
		schema.Req("source", schema.Enum("pinned-container", "evaluator-task-container")),
		schema.Req("manifestDigest", digestNode),
		schema.Req("platform", platformNode(0)),
	)

	// ExecutionPlanMaterialSchema is AgentCandidateExecutionPlanMaterial:
	// everything one candidate × task × attempt execution is bound to
	// (CAND §13.3).
	ExecutionPlanMaterialSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(KindExecutionPlanMaterialValue)),
		schema.Req("runCell", RunCellSchema),
		schema.Req("executionId", nonEmpty),
		schema.Req("workspaces", schema.Object(
			schema.Req("taskRoot", schema.String(schema.Rule[string]{Code: schema.CodeCustom, Message: "task root must be a canonical absolute path", Test: isCanonicalAbsolutePath})),
			schema.Opt("candidateRoot", schema.String(schema.Rule[string]{Code: schema.CodeCustom, Message: "candidate root must be a canonical absolute path", Test: isCanonicalAbsolutePath})),
		)),
		schema.Req("codeKind", schema.Enum(CodeDisabled, CodeNoOp, CodeGitPatch)),
		schema.Opt("candidateWorkspace", WorkspaceSnapshotEvidenceSchema),
		schema.Req("profile", schema.Object(
			schema.Req("planDigest", digestNode),
			schema.Req("targetWorkspace", schema.Enum("task", "candidate")),
			schema.Req("mountPaths", schema.Array(relPath(false, "profile mount paths must be canonical and relative"))),
		)),
		schema.Req("harness", profile.HarnessSchema),
		schema.Req("harnessVersion", nonEmpty),
		schema.Req("instructionDelivery", InstructionDeliverySchema),
		schema.Req("limits", ExecutionLimitsSchema),
		schema.Req("container", planContainerNode),
		schema.Req("model", schema.Object(
			schema.Req("policy", schema.LiteralString("single")),
			schema.Req("resolved", ResolvedModelSchema),
			schema.Req("access", schema.Object(
				schema.Req("kind", schema.LiteralString("evaluator-mediated")),
				schema.Req("grantDigest", digestNode),
				schema.Req("network", modelNetworkNode),
			)),
			schema.Req("routes", schema.Array(routeNode).MinItems(1)),
		)),
		schema.Req("launch", schema.Object(
			schema.Req("executable", schema.String(schema.Rule[string]{Code: schema.CodeCustom, Message: "execution plan requires a non-shell executable", Test: profile.IsSafeExecutable})),
			schema.Req("args", configValues),
			schema.Req("env", envNode),
			schema.Req("cwd", WorkingDirectorySchema),
		)),
		schema.Opt("knowledgeManifestDigest", digestNode),
		schema.Req("memory", EffectiveMemorySchema),
		schema.Req("network", modeDisabled),
	).Refine(checkExecutionPlan).Refine(checkCanonical("execution-plan material must contain only RFC 8785 JSON values"))

	// ExecutionPlanEvidenceSchema is the execution plan evidence record;
	// its digest is the execution-plan digest.
	ExecutionPlanEvidenceSchema = evidenceSchema(KindExecutionPlanEvidenceValue, ExecutionPlanMaterialSchema, "plan")
)

// checkActivation binds an activation's files to its plan, position by
// position.
func checkActivation(c *schema.Context, v canonjson.Value) {
	planned := at(v, "profilePlan", "material", "files").Items()
	files := at(v, "files").Items()
	if len(files) != len(planned) {
		c.Custom("profile activation must contain every planned native file", "files")
	}
	for i, want := range planned {
		if i >= len(files) || member(files[i], "path") != member(want, "relPath") ||
			num(files[i], "mode") != num(want, "mode") || SHA256Text(member(files[i], "content")) != member(want, "contentSha256") {
			c.Custom("profile activation file path, mode, and content must match the canonical plan", "files", canonjson.IndexToken(i))
		}
	}
}

// checkExecutionPlan holds the execution plan's cross rules (CAND §13.3).
func checkExecutionPlan(c *schema.Context, v canonjson.Value) {
	launch := at(v, "launch")
	env := at(launch, "env")
	if !strings.HasPrefix(member(launch, "executable"), "/") && canonjson.TrimJS(member(at(env, "PATH"), "value")) == "" {
		c.Custom("relative execution-plan executables require an explicit public PATH", "launch", "env", "PATH")
	}
	model := at(v, "model")
	routes := at(model, "routes").Items()
	ids := make([]string, len(routes))
	primary := false
	for i, r := range routes {
		ids[i] = member(r, "kind")
		if k := ids[i]; k == "mode" || k == "subagent" {
			ids[i] = k + ":" + member(r, "name")
		}
		primary = primary || ids[i] == "primary"
	}
	checkDuplicates(c, ids, "model", "routes")
	mounts := itemStrings(at(v, "profile", "mountPaths"))
	checkDuplicates(c, mounts, "profile", "mountPaths")
	checkAscending(c, mounts, "profile mount paths must be lexicographically sorted", "", "profile", "mountPaths")
	if !primary {
		c.Custom("single-model plans must include the primary route", "model", "routes")
	}
	requested := member(at(model, "resolved"), "requested")
	for i, r := range routes {
		if req, ok := r.Get("requested"); ok && req.Str() != requested {
			c.Custom("every route must request the one resolved model literal", "model", "routes", canonjson.IndexToken(i), "requested")
		}
	}
	if network := at(model, "access", "network"); member(network, "mode") == "gateway-only" {
		domains := itemStrings(at(network, "domains"))
		checkDuplicates(c, domains, "model", "access", "network", "domains")
		checkAscending(c, domains, "model gateway domains must be lexicographically sorted", "", "model", "access", "network", "domains")
	}
	active := member(v, "codeKind") != CodeDisabled
	workspace, hasWorkspace := v.Get("candidateWorkspace")
	roots := at(v, "workspaces")
	taskRoot := member(roots, "taskRoot")
	candidateRoot, hasRoot := roots.Get("candidateRoot")
	if active != hasWorkspace {
		c.Custom("active code requires a complete candidate-workspace snapshot", "candidateWorkspace")
	}
	if active != hasRoot {
		c.Custom("active code requires a fixed candidate workspace root", "workspaces", "candidateRoot")
	}
	if hasRoot && pathsOverlap(taskRoot, candidateRoot.Str()) {
		c.Custom("task and candidate workspace roots must be disjoint", "workspaces")
	}
	if taskPath, ok := env.Get(TaskPathEnv); ok {
		p := member(taskPath, "value")
		if p != TaskPath {
			c.Custom("task file delivery must use the fixed evaluator-owned path", "launch", "env", TaskPathEnv)
		}
		if pathsOverlap(p, taskRoot) || hasRoot && pathsOverlap(p, candidateRoot.Str()) {
			c.Custom("task file delivery must be outside both workspaces", "launch", "env", TaskPathEnv)
		}
	}
	if member(at(launch, "cwd"), "workspace") == "candidate" && !hasRoot {
		c.Custom("candidate cwd requires a pinned candidate workspace root", "launch", "cwd", "workspace")
	}
	if member(at(v, "profile"), "targetWorkspace") == "candidate" && !hasRoot {
		c.Custom("candidate-targeted profile files require a candidate workspace root", "profile", "targetWorkspace")
	}
	if active && hasWorkspace && len(at(workspace, "material", "files").Items()) == 0 {
		c.Custom("active candidate workspaces cannot be empty", "candidateWorkspace", "material", "files")
	}
}

// SHA256Text returns the content digest of a string: "sha256:" and the
// hex SHA-256 of its UTF-8 bytes (CAND §2.2, plain content digests).
func SHA256Text(s string) string {
	return canonjson.DigestBytes([]byte(s))
}
