package candidate

import "github.com/agentrt/agentrt/harness"

// Bundle is AgentCandidateBundle: a frozen improvement candidate.
// Lineage is set only in the seed dialect. Digest is the identity
// computed by [Digest].
type Bundle struct {
	Kind            string       `json:"kind"`
	DigestAlgorithm string       `json:"digestAlgorithm"`
	Profile         Profile      `json:"profile"`
	Code            Code         `json:"code"`
	Execution       Execution    `json:"execution"`
	Knowledge       *Knowledge   `json:"knowledge,omitzero"`
	Memory          MemoryPolicy `json:"memory"`
	Lineage         *SeedLineage `json:"lineage,omitzero"`
	Digest          string       `json:"digest"`
}

// Code is AgentCandidateCode: disabled (Reason only in the seed
// dialect), no-op (Reason, Repository, BaseCommit, BaseTree) or git-patch
// (Repository, BaseCommit, BaseTree, CandidateTree, Patch).
type Code struct {
	Kind          string      `json:"kind"`
	Reason        *string     `json:"reason,omitzero"`
	Repository    *Repository `json:"repository,omitzero"`
	BaseCommit    *string     `json:"baseCommit,omitzero"`
	BaseTree      *string     `json:"baseTree,omitzero"`
	CandidateTree *string     `json:"candidateTree,omitzero"`
	Patch         *GitPatch   `json:"patch,omitzero"`
}

// GitPatch is a git-patch code's embedded binary diff.
type GitPatch struct {
	Format   string           `json:"format"`
	Artifact EmbeddedArtifact `json:"artifact"`
}

// Execution is AgentCandidateExecution.
type Execution struct {
	Harness             harness.Type               `json:"harness"`
	HarnessVersion      string                     `json:"harnessVersion"`
	Launch              Launch                     `json:"launch"`
	InstructionDelivery InstructionDelivery        `json:"instructionDelivery"`
	Cwd                 WorkingDirectory           `json:"cwd"`
	Env                 map[string]ConfigValue     `json:"env,omitzero"`
	Environment         ExecutionEnvironment       `json:"environment"`
	Workspace           *WorkspaceSnapshotEvidence `json:"workspace,omitzero"`
	Isolation           Isolation                  `json:"isolation"`
}

// Launch is container-command (Executable) or candidate-entrypoint
// (Entrypoint, optional Interpreter); both take public Args.
type Launch struct {
	Kind        string        `json:"kind"`
	Executable  *string       `json:"executable,omitzero"`
	Entrypoint  *string       `json:"entrypoint,omitzero"`
	Interpreter *string       `json:"interpreter,omitzero"`
	Args        []ConfigValue `json:"args,omitzero"`
}

// InstructionDelivery is argv-append, stdin-utf8 or utf8-file (Env and
// Path are then TaskPathEnv and TaskPath).
type InstructionDelivery struct {
	Kind string  `json:"kind"`
	Env  *string `json:"env,omitzero"`
	Path *string `json:"path,omitzero"`
}

// WorkingDirectory is an execution cwd.
type WorkingDirectory struct {
	Workspace string `json:"workspace"`
	Path      string `json:"path"`
}

// ExecutionEnvironment is pinned-container (Container) or
// evaluator-task-container.
type ExecutionEnvironment struct {
	Kind      string     `json:"kind"`
	Container *Container `json:"container,omitzero"`
}

// Container is a pinned container image and its OCI index digest.
type Container struct {
	Image       string `json:"image"`
	IndexDigest string `json:"indexDigest"`
}

// Isolation holds the three literals "disabled".
type Isolation struct {
	Network            string `json:"network"`
	RemoteIntegrations string `json:"remoteIntegrations"`
	CandidateSecrets   string `json:"candidateSecrets"`
}

// Knowledge is a frozen knowledge candidate.
type Knowledge struct {
	Candidate       KnowledgeCandidate        `json:"candidate"`
	Snapshot        WorkspaceSnapshotEvidence `json:"snapshot"`
	RetrievalConfig *CapturedArtifact         `json:"retrievalConfig,omitzero"`
	Evaluation      CapturedArtifact          `json:"evaluation"`
}

// KnowledgeCandidate identifies the reviewed knowledge candidate.
type KnowledgeCandidate struct {
	Kind              string `json:"kind"`
	RunID             string `json:"runId"`
	CandidateID       string `json:"candidateId"`
	GoalHash          string `json:"goalHash"`
	BaseHash          string `json:"baseHash"`
	CandidateHash     string `json:"candidateHash"`
	EvidenceHash      string `json:"evidenceHash"`
	PromotionPlanHash string `json:"promotionPlanHash"`
}

// MemoryPolicy is disabled, or isolated (Scope "task", optional Seed).
type MemoryPolicy struct {
	Mode  string       `json:"mode"`
	Scope *string      `json:"scope,omitzero"`
	Seed  *ArtifactRef `json:"seed,omitzero"`
}

// SeedLineage is the seed dialect's bundle lineage.
type SeedLineage struct {
	Source         string            `json:"source"`
	ParentDigests  []string          `json:"parentDigests,omitzero"`
	RunIDs         []string          `json:"runIds,omitzero"`
	ProfileDiffIDs []string          `json:"profileDiffIds,omitzero"`
	ModelSnapshots []string          `json:"modelSnapshots,omitzero"`
	Benchmark      *LineageBenchmark `json:"benchmark,omitzero"`
	Spend          *LineageSpend     `json:"spend,omitzero"`
}

// LineageBenchmark is the development split a generated candidate was
// produced on.
type LineageBenchmark struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	SplitDigest string `json:"splitDigest"`
}

// LineageSpend is the captured model spend of a candidate's proposal
// search and development evaluation.
type LineageSpend struct {
	Proposal   Spend `json:"proposal"`
	Evaluation Spend `json:"evaluation"`
}

// Spend is one phase's captured model spend.
type Spend struct {
	CostUSD           float64 `json:"costUsd"`
	InputTokens       int64   `json:"inputTokens"`
	OutputTokens      int64   `json:"outputTokens"`
	CachedInputTokens *int64  `json:"cachedInputTokens,omitzero"`
	ModelCalls        int64   `json:"modelCalls"`
}
