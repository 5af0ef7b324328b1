package candidate

import (
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
)

// Evidence is an evidence record whose Artifact carries exactly the
// canonical bytes of Material and whose Digest is their SHA-256
// ([EvidenceDigest]).
type Evidence[M any] struct {
	Kind     string           `json:"kind"`
	Digest   string           `json:"digest"`
	Material M                `json:"material"`
	Artifact CapturedArtifact `json:"artifact"`
}

// Evidence records of the plan and receipt chain.
type (
	// ProfilePlanEvidence is the profile plan evidence record.
	ProfilePlanEvidence = Evidence[ProfilePlanMaterial]
	// ExecutionPlanEvidence is the execution plan evidence record.
	ExecutionPlanEvidence = Evidence[ExecutionPlanMaterial]
	// ModelSettlementEvidence is AgentCandidateModelSettlementEvidence.
	ModelSettlementEvidence = Evidence[ModelSettlementMaterial]
	// TaskOutcomeEvidence is AgentCandidateTaskOutcomeEvidence.
	TaskOutcomeEvidence = Evidence[TaskOutcomeMaterial]
	// BenchmarkResultEvidence is AgentCandidateBenchmarkResultEvidence.
	BenchmarkResultEvidence = Evidence[BenchmarkResultMaterial]
	// FixedSpend is AgentCandidateFixedSpend (owned by contract).
	FixedSpend = contract.FixedSpend
	// ExecutionLimits is AgentCandidateExecutionLimits (owned by
	// contract).
	ExecutionLimits = contract.ExecutionLimits
)

// ResolvedModel is AgentCandidateResolvedModel.
type ResolvedModel struct {
	Requested       string                  `json:"requested"`
	Provider        string                  `json:"provider"`
	Model           string                  `json:"model"`
	Snapshot        string                  `json:"snapshot"`
	ReasoningEffort harness.ReasoningEffort `json:"reasoningEffort"`
}

// Grader is a pinned benchmark grader.
type Grader struct {
	Name     string      `json:"name"`
	Version  string      `json:"version"`
	Format   string      `json:"format"`
	Artifact ArtifactRef `json:"artifact"`
}

// TaskRepository is a task's exact source repository.
type TaskRepository struct {
	Identity     string `json:"identity"`
	RootIdentity string `json:"rootIdentity"`
	BaseCommit   string `json:"baseCommit"`
	BaseTree     string `json:"baseTree"`
}

// Platform is an OCI platform.
type Platform struct {
	OS           string  `json:"os"`
	Architecture string  `json:"architecture"`
	Variant      *string `json:"variant,omitzero"`
}

// SelectedContainer is a selected container: its source, image, index
// and manifest digests and platform.
type SelectedContainer struct {
	Source         string   `json:"source"`
	Image          string   `json:"image"`
	IndexDigest    string   `json:"indexDigest"`
	ManifestDigest string   `json:"manifestDigest"`
	Platform       Platform `json:"platform"`
}

// ProfilePlanMaterial is AgentCandidateProfilePlanMaterial.
type ProfilePlanMaterial struct {
	SourceProfileDigest string                 `json:"sourceProfileDigest"`
	Harness             harness.Type           `json:"harness"`
	Files               []ProfilePlanFile      `json:"files"`
	Env                 map[string]ConfigValue `json:"env"`
	Flags               []ConfigValue          `json:"flags"`
	SystemPrompt        *ConfigValue           `json:"systemPrompt,omitzero"`
	AppendSystemPrompt  *ConfigValue           `json:"appendSystemPrompt,omitzero"`
	Unsupported         []Unsupported          `json:"unsupported"`
}

// ProfilePlanFile is one native file a profile plan writes.
type ProfilePlanFile struct {
	RelPath       string `json:"relPath"`
	Mode          int64  `json:"mode"`
	ContentSHA256 string `json:"contentSha256"`
}

// Unsupported is a profile dimension a harness cannot honour; a sealed
// plan has none.
type Unsupported struct {
	Dimension string `json:"dimension"`
	Reason    string `json:"reason"`
}

// ProfileActivation is AgentCandidateProfileActivation (self-digested).
type ProfileActivation struct {
	Kind        string              `json:"kind"`
	ProfilePlan ProfilePlanEvidence `json:"profilePlan"`
	Files       []ActivationFile    `json:"files"`
	Digest      string              `json:"digest"`
}

// ActivationFile is one exact native file applied before launch.
type ActivationFile struct {
	Path    string `json:"path"`
	Mode    int64  `json:"mode"`
	Content string `json:"content"`
}

// EffectiveMemory is the plan's memory: disabled, or isolated with a
// fresh namespace.
type EffectiveMemory struct {
	Mode               string                     `json:"mode"`
	Scope              *string                    `json:"scope,omitzero"`
	EffectiveNamespace *string                    `json:"effectiveNamespace,omitzero"`
	Reset              *MemoryReset               `json:"reset,omitzero"`
	BeforeState        *WorkspaceSnapshotEvidence `json:"beforeState,omitzero"`
	SeedDigest         *string                    `json:"seedDigest,omitzero"`
}

// MemoryReset is the fresh-reset evidence of task-scoped memory.
type MemoryReset struct {
	Kind             string           `json:"kind"`
	Evidence         CapturedArtifact `json:"evidence"`
	EmptyStateDigest string           `json:"emptyStateDigest"`
}

// RunCell is AgentCandidateRunCell (self-digested).
type RunCell struct {
	Kind             string `json:"kind"`
	ExperimentDigest string `json:"experimentDigest"`
	Arm              string `json:"arm"`
	BundleDigest     string `json:"bundleDigest"`
	SuiteDigest      string `json:"suiteDigest"`
	TaskDigest       string `json:"taskDigest"`
	TaskIndex        int64  `json:"taskIndex"`
	Repetition       int64  `json:"repetition"`
	Seed             int64  `json:"seed"`
	Attempt          int64  `json:"attempt"`
	Digest           string `json:"digest"`
}

// ExecutionPlanMaterial is AgentCandidateExecutionPlanMaterial.
type ExecutionPlanMaterial struct {
	Kind                    string                     `json:"kind"`
	RunCell                 RunCell                    `json:"runCell"`
	ExecutionID             string                     `json:"executionId"`
	Workspaces              PlanWorkspaces             `json:"workspaces"`
	CodeKind                string                     `json:"codeKind"`
	CandidateWorkspace      *WorkspaceSnapshotEvidence `json:"candidateWorkspace,omitzero"`
	Profile                 PlanProfile                `json:"profile"`
	Harness                 harness.Type               `json:"harness"`
	HarnessVersion          string                     `json:"harnessVersion"`
	InstructionDelivery     InstructionDelivery        `json:"instructionDelivery"`
	Limits                  ExecutionLimits            `json:"limits"`
	Container               SelectedContainer          `json:"container"`
	Model                   PlanModel                  `json:"model"`
	Launch                  PlanLaunch                 `json:"launch"`
	KnowledgeManifestDigest *string                    `json:"knowledgeManifestDigest,omitzero"`
	Memory                  EffectiveMemory            `json:"memory"`
	Network                 NetworkMode                `json:"network"`
}

// PlanWorkspaces are the fixed, disjoint workspace roots.
type PlanWorkspaces struct {
	TaskRoot      string  `json:"taskRoot"`
	CandidateRoot *string `json:"candidateRoot,omitzero"`
}

// PlanProfile binds the profile plan, its target workspace and mounts.
type PlanProfile struct {
	PlanDigest      string   `json:"planDigest"`
	TargetWorkspace string   `json:"targetWorkspace"`
	MountPaths      []string `json:"mountPaths"`
}

// PlanModel is the single-model policy of a plan.
type PlanModel struct {
	Policy   string        `json:"policy"`
	Resolved ResolvedModel `json:"resolved"`
	Access   ModelAccess   `json:"access"`
	Routes   []Route       `json:"routes"`
}

// ModelAccess is the evaluator-mediated model grant.
type ModelAccess struct {
	Kind        string       `json:"kind"`
	GrantDigest string       `json:"grantDigest"`
	Network     ModelNetwork `json:"network"`
}

// ModelNetwork is disabled or gateway-only (Domains).
type ModelNetwork struct {
	Mode    string   `json:"mode"`
	Domains []string `json:"domains,omitzero"`
}

// NetworkMode is {mode:"disabled"}.
type NetworkMode struct {
	Mode string `json:"mode"`
}

// Route is one model route: primary, small, mode or subagent.
type Route struct {
	Kind      string  `json:"kind"`
	Name      *string `json:"name,omitzero"`
	Requested *string `json:"requested,omitzero"`
}

// PlanLaunch is the exact process launch of a plan.
type PlanLaunch struct {
	Executable string                 `json:"executable"`
	Args       []ConfigValue          `json:"args"`
	Env        map[string]ConfigValue `json:"env"`
	Cwd        WorkingDirectory       `json:"cwd"`
}

// ModelSettlementCall is AgentCandidateModelSettlementCall.
type ModelSettlementCall struct {
	CallID               string `json:"callId"`
	GenerationID         string `json:"generationId"`
	TraceSpanID          string `json:"traceSpanId"`
	Status               string `json:"status"`
	Model                string `json:"model"`
	StartedAtMs          int64  `json:"startedAtMs"`
	EndedAtMs            int64  `json:"endedAtMs"`
	InputTokens          int64  `json:"inputTokens"`
	AccountedInputTokens int64  `json:"accountedInputTokens"`
	OutputTokens         int64  `json:"outputTokens"`
	CachedInputTokens    int64  `json:"cachedInputTokens"`
	ReasoningTokens      int64  `json:"reasoningTokens"`
	CostUSDNanos         int64  `json:"costUsdNanos"`
	CostProvenance       string `json:"costProvenance"`
}

// ModelSettlementMaterial is AgentCandidateModelSettlementMaterial.
type ModelSettlementMaterial struct {
	Kind                string                `json:"kind"`
	ExecutionPlanDigest string                `json:"executionPlanDigest"`
	PreparationID       string                `json:"preparationId"`
	GrantDigest         string                `json:"grantDigest"`
	Closed              bool                  `json:"closed"`
	UsageWithinLimits   bool                  `json:"usageWithinLimits"`
	Resolved            ResolvedModel         `json:"resolved"`
	Usage               FixedSpend            `json:"usage"`
	Calls               []ModelSettlementCall `json:"calls"`
}

// RepositoryState is a repository at one commit and tree.
type RepositoryState struct {
	Identity     string `json:"identity"`
	RootIdentity string `json:"rootIdentity"`
	Commit       string `json:"commit"`
	Tree         string `json:"tree"`
}

// TaskOutcomeMaterial is AgentCandidateTaskOutcomeMaterial.
type TaskOutcomeMaterial struct {
	Kind                string      `json:"kind"`
	ExecutionPlanDigest string      `json:"executionPlanDigest"`
	Outcome             TaskOutcome `json:"outcome"`
}

// TaskOutcome is a workspace outcome (BaseRepository, ResultRepository,
// AfterState, GitDiff) or an output (Spec, Artifact).
type TaskOutcome struct {
	Kind             string                     `json:"kind"`
	BaseRepository   *RepositoryState           `json:"baseRepository,omitzero"`
	ResultRepository *RepositoryState           `json:"resultRepository,omitzero"`
	AfterState       *WorkspaceSnapshotEvidence `json:"afterState,omitzero"`
	GitDiff          *GitDiff                   `json:"gitDiff,omitzero"`
	Spec             *OutputSpec                `json:"spec,omitzero"`
	Artifact         *ArtifactRef               `json:"artifact,omitzero"`
}

// GitDiff is a workspace outcome's binary diff.
type GitDiff struct {
	Format   string      `json:"format"`
	Artifact ArtifactRef `json:"artifact"`
}

// OutputSpec is an output outcome's media type and byte bound.
type OutputSpec struct {
	MediaType string `json:"mediaType"`
	MaxBytes  int64  `json:"maxBytes"`
}

// BenchmarkResultMaterial is AgentCandidateBenchmarkResultMaterial.
type BenchmarkResultMaterial struct {
	Kind                string      `json:"kind"`
	ExecutionPlanDigest string      `json:"executionPlanDigest"`
	TaskOutcomeDigest   string      `json:"taskOutcomeDigest"`
	Grader              Grader      `json:"grader"`
	Evidence            ArtifactRef `json:"evidence"`
	Grading             Grading     `json:"grading"`
	Score               float64     `json:"score"`
	Passed              bool        `json:"passed"`
	Dimensions          []Dimension `json:"dimensions"`
}

// Grading is the grader's own spend and timing.
type Grading struct {
	Usage  FixedSpend `json:"usage"`
	Timing Timing     `json:"timing"`
}

// Timing is a consistent start, end and duration in milliseconds.
type Timing struct {
	StartedAtMs int64 `json:"startedAtMs"`
	EndedAtMs   int64 `json:"endedAtMs"`
	DurationMs  int64 `json:"durationMs"`
}

// Dimension is AgentCandidateBenchmarkDimension.
type Dimension struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}
