package candidate

import (
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Code kinds (CAND §6).
const (
	CodeDisabled = "disabled"
	CodeNoOp     = "no-op"
	CodeGitPatch = "git-patch"
)

// TaskPathEnv and TaskPath are the fixed utf8-file instruction delivery
// literals; the evaluator alone owns them (CAND §7.2).
const (
	TaskPathEnv = "TANGLE_CANDIDATE_TASK_PATH"
	TaskPath    = "/tangle/input/task.txt"
)

var (
	oneFormat = func(names ...string) schema.Refinement {
		return func(c *schema.Context, v canonjson.Value) {
			ids := make([]string, len(names))
			for i, n := range names {
				ids[i] = member(v, n)
			}
			if !sameGitObjectFormat(ids...) {
				c.Custom("Git object ids in one code record must use one object format")
			}
		}
	}

	codeDisabledTS16 = schema.Object(schema.Req("kind", schema.LiteralString(CodeDisabled)))
	// codeDisabledSeed is the seed dialect's disabled code: the reason
	// is required (CAND §0.1, seed 000/001 README text).
	codeDisabledSeed = schema.Object(
		schema.Req("kind", schema.LiteralString(CodeDisabled)),
		schema.Req("reason", schema.Enum("control", "not-applicable")),
	)
	codeNoOp = schema.Object(
		schema.Req("kind", schema.LiteralString(CodeNoOp)),
		schema.Req("reason", schema.LiteralString("proposer-no-change")),
		schema.Req("repository", repositoryNode),
		schema.Req("baseCommit", gitObjectNode),
		schema.Req("baseTree", gitObjectNode),
	).Refine(oneFormat("baseCommit", "baseTree"))
	codeGitPatch = schema.Object(
		schema.Req("kind", schema.LiteralString(CodeGitPatch)),
		schema.Req("repository", repositoryNode),
		schema.Req("baseCommit", gitObjectNode),
		schema.Req("baseTree", gitObjectNode),
		schema.Req("candidateTree", gitObjectNode),
		schema.Req("patch", schema.Object(
			schema.Req("format", schema.LiteralString("git-diff-binary")),
			schema.Req("artifact", EmbeddedArtifactSchema),
		)),
	).Refine(oneFormat("baseCommit", "baseTree", "candidateTree")).Refine(func(c *schema.Context, v canonjson.Value) {
		if member(v, "baseTree") == member(v, "candidateTree") {
			c.Custom("git-patch must change the tree; use code.kind='no-op'", "candidateTree")
		}
		if num(v, "patch", "artifact", "byteLength") == 0 {
			c.Custom("git-patch must contain bytes; use code.kind='no-op'", "patch", "artifact", "byteLength")
		}
	})

	// CodeSchema is AgentCandidateCode in the ts16 dialect: disabled,
	// no-op or git-patch.
	CodeSchema = schema.Discriminated("kind", map[string]schema.Node{
		CodeDisabled: codeDisabledTS16, CodeNoOp: codeNoOp, CodeGitPatch: codeGitPatch,
	})

	// codeSeedSchema is AgentCandidateCode in the seed dialect.
	codeSeedSchema = schema.Discriminated("kind", map[string]schema.Node{
		CodeDisabled: codeDisabledSeed, CodeNoOp: codeNoOp, CodeGitPatch: codeGitPatch,
	})

	// ContainerSchema is a pinned container: an image without digest or
	// private registry, and its OCI index digest.
	ContainerSchema = schema.Object(
		schema.Req("image", schema.String(schema.MinLen(1), schema.Rule[string]{Code: schema.CodeCustom,
			Message: "image must be a non-private OCI reference without credentials or an embedded digest", Test: isSafeOCIImage})),
		schema.Req("indexDigest", digestNode),
	)

	environmentNode = schema.Discriminated("kind", map[string]schema.Node{
		"pinned-container": schema.Object(
			schema.Req("kind", schema.LiteralString("pinned-container")),
			schema.Req("container", ContainerSchema),
		),
		"evaluator-task-container": schema.Object(schema.Req("kind", schema.LiteralString("evaluator-task-container"))),
	})

	// WorkingDirectorySchema is an execution cwd: a workspace and a
	// relative path in it ("." allowed).
	WorkingDirectorySchema = schema.Object(
		schema.Req("workspace", schema.Enum("candidate", "task")),
		schema.Req("path", relPath(true, "cwd path must be a canonical workspace-relative path")),
	)

	launchNode = schema.Discriminated("kind", map[string]schema.Node{
		"container-command": schema.Object(
			schema.Req("kind", schema.LiteralString("container-command")),
			schema.Req("executable", executableNode),
			schema.Opt("args", configValues),
		),
		"candidate-entrypoint": schema.Object(
			schema.Req("kind", schema.LiteralString("candidate-entrypoint")),
			schema.Req("entrypoint", relPath(false, "entrypoint must be a canonical candidate-relative path")),
			schema.Opt("interpreter", schema.Enum("node", "python", "python3", "bun", "deno", "tsx", "uv")),
			schema.Opt("args", configValues),
		),
	})

	// InstructionDeliverySchema is the closed instruction delivery union
	// (CAND §7.2).
	InstructionDeliverySchema = schema.Discriminated("kind", map[string]schema.Node{
		"argv-append": schema.Object(schema.Req("kind", schema.LiteralString("argv-append"))),
		"stdin-utf8":  schema.Object(schema.Req("kind", schema.LiteralString("stdin-utf8"))),
		"utf8-file": schema.Object(
			schema.Req("kind", schema.LiteralString("utf8-file")),
			schema.Req("env", schema.LiteralString(TaskPathEnv)),
			schema.Req("path", schema.LiteralString(TaskPath)),
		),
	})

	disabled = schema.LiteralString("disabled")

	// modeDisabled is {mode:"disabled"}: memory, model network and plan
	// network switched off.
	modeDisabled = schema.Object(schema.Req("mode", disabled))

	// ExecutionSchema is AgentCandidateExecution: the shell-free launch
	// contract (CAND §7).
	ExecutionSchema = schema.Object(
		schema.Req("harness", profile.HarnessSchema),
		schema.Req("harnessVersion", nonEmpty),
		schema.Req("launch", launchNode),
		schema.Req("instructionDelivery", InstructionDeliverySchema),
		schema.Req("cwd", WorkingDirectorySchema),
		schema.Opt("env", envNode),
		schema.Req("environment", environmentNode),
		schema.Opt("workspace", WorkspaceSnapshotEvidenceSchema),
		schema.Req("isolation", schema.Object(
			schema.Req("network", disabled),
			schema.Req("remoteIntegrations", disabled),
			schema.Req("candidateSecrets", disabled),
		)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		launch := at(v, "launch")
		requiresPath := has(launch, "interpreter")
		if member(launch, "kind") == "container-command" {
			requiresPath = !strings.HasPrefix(member(launch, "executable"), "/")
		}
		env := at(v, "env")
		if requiresPath && canonjson.TrimJS(member(at(env, "PATH"), "value")) == "" {
			c.Custom("relative candidate executables require an explicit public PATH", "env", "PATH")
		}
		if has(env, TaskPathEnv) {
			c.Custom("the evaluator exclusively owns task-instruction delivery", "env", TaskPathEnv)
		}
	})
)
