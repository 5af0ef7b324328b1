package candidate

import "github.com/agentrt/agentrt/harness"

// BenchmarkTask is AgentCandidateBenchmarkTask (self-digested).
type BenchmarkTask struct {
	Kind                   string                    `json:"kind"`
	DigestAlgorithm        string                    `json:"digestAlgorithm"`
	Benchmark              LineageBenchmark          `json:"benchmark"`
	Scenario               Scenario                  `json:"scenario"`
	DatasetSnapshot        *ArtifactRef              `json:"datasetSnapshot,omitzero"`
	Instruction            string                    `json:"instruction"`
	Repository             *TaskRepository           `json:"repository,omitzero"`
	Outcome                TaskOutcomeSpec           `json:"outcome"`
	Workspace              WorkspaceSnapshotEvidence `json:"workspace"`
	Grader                 Grader                    `json:"grader"`
	Model                  ResolvedModel             `json:"model"`
	Attempt                Attempt                   `json:"attempt"`
	EvaluatorTaskContainer *SelectedContainer        `json:"evaluatorTaskContainer,omitzero"`
	Limits                 ExecutionLimits           `json:"limits"`
	Digest                 string                    `json:"digest"`
}

// Scenario identifies a task's scenario.
type Scenario struct {
	ID             string `json:"id"`
	Kind           string `json:"kind"`
	ScenarioDigest string `json:"scenarioDigest"`
}

// TaskOutcomeSpec is {kind:"workspace"} or {kind:"output", mediaType,
// maxBytes}.
type TaskOutcomeSpec struct {
	Kind      string  `json:"kind"`
	MediaType *string `json:"mediaType,omitzero"`
	MaxBytes  *int64  `json:"maxBytes,omitzero"`
}

// Attempt is a task's attempt policy.
type Attempt struct {
	MaxAttempts int64  `json:"maxAttempts"`
	RetryPolicy string `json:"retryPolicy"`
}

// BenchmarkSuite is AgentCandidateBenchmarkSuite (self-digested).
type BenchmarkSuite struct {
	Kind            string   `json:"kind"`
	DigestAlgorithm string   `json:"digestAlgorithm"`
	TaskDigests     []string `json:"taskDigests"`
	Reps            int64    `json:"reps"`
	Seeds           []int64  `json:"seeds"`
	Digest          string   `json:"digest"`
}

// BenchmarkSuiteInputs is AgentCandidateBenchmarkSuiteInputs.
type BenchmarkSuiteInputs struct {
	Suite BenchmarkSuite  `json:"suite"`
	Tasks []BenchmarkTask `json:"tasks"`
}

// MaterializationReceipt is AgentCandidateMaterializationReceipt
// (self-digested).
type MaterializationReceipt struct {
	Kind                    string                     `json:"kind"`
	DigestAlgorithm         string                     `json:"digestAlgorithm"`
	BundleDigest            string                     `json:"bundleDigest"`
	Benchmark               BenchmarkInputEvidence     `json:"benchmark"`
	ProfileActivation       ProfileActivation          `json:"profileActivation"`
	ExecutionPlan           ExecutionPlanEvidence      `json:"executionPlan"`
	CandidateWorkspace      *WorkspaceSnapshotEvidence `json:"candidateWorkspace,omitzero"`
	CodeKind                string                     `json:"codeKind"`
	MaterializedTree        *string                    `json:"materializedTree,omitzero"`
	Harness                 harness.Type               `json:"harness"`
	HarnessVersion          string                     `json:"harnessVersion"`
	Container               SelectedContainer          `json:"container"`
	ResolvedModel           ResolvedModel              `json:"resolvedModel"`
	KnowledgeManifestDigest *string                    `json:"knowledgeManifestDigest,omitzero"`
	Entrypoint              *EntrypointReceipt         `json:"entrypoint,omitzero"`
	Digest                  string                     `json:"digest"`
}

// BenchmarkInputEvidence holds the captured suite and task material.
type BenchmarkInputEvidence struct {
	Suite BenchmarkMaterialEvidence `json:"suite"`
	Task  BenchmarkMaterialEvidence `json:"task"`
}

// BenchmarkMaterialEvidence is a digest and the artifact of its
// canonical material.
type BenchmarkMaterialEvidence struct {
	Digest   string           `json:"digest"`
	Material CapturedArtifact `json:"material"`
}

// EntrypointReceipt identifies the launched entrypoint's bytes.
type EntrypointReceipt struct {
	Path       string `json:"path"`
	SHA256     string `json:"sha256"`
	ByteLength int64  `json:"byteLength"`
}

// RunReceipt is AgentCandidateRunReceipt (self-digested).
type RunReceipt struct {
	Kind                         string                  `json:"kind"`
	DigestAlgorithm              string                  `json:"digestAlgorithm"`
	BundleDigest                 string                  `json:"bundleDigest"`
	RunCellDigest                string                  `json:"runCellDigest"`
	MaterializationReceiptDigest string                  `json:"materializationReceiptDigest"`
	ExecutionPlanDigest          string                  `json:"executionPlanDigest"`
	Timing                       Timing                  `json:"timing"`
	Steps                        int64                   `json:"steps"`
	Memory                       MemoryReceipt           `json:"memory"`
	Trace                        Trace                   `json:"trace"`
	Termination                  Termination             `json:"termination"`
	ExecutorCapture              ArtifactRef             `json:"executorCapture"`
	ModelSettlement              ModelSettlementEvidence `json:"modelSettlement"`
	TaskOutcome                  TaskOutcomeEvidence     `json:"taskOutcome"`
	BenchmarkResult              BenchmarkResultEvidence `json:"benchmarkResult"`
	Digest                       string                  `json:"digest"`
}

// MemoryReceipt is disabled, or isolated with its reset and states.
type MemoryReceipt struct {
	Mode                string                     `json:"mode"`
	Scope               *string                    `json:"scope,omitzero"`
	EffectiveNamespace  *string                    `json:"effectiveNamespace,omitzero"`
	ResetEvidenceDigest *string                    `json:"resetEvidenceDigest,omitzero"`
	BeforeStateDigest   *string                    `json:"beforeStateDigest,omitzero"`
	AfterState          *WorkspaceSnapshotEvidence `json:"afterState,omitzero"`
}

// Trace is a run's captured trace evidence.
type Trace struct {
	Artifact       CapturedArtifact `json:"artifact"`
	EventCount     int64            `json:"eventCount"`
	ModelCallCount int64            `json:"modelCallCount"`
}

// Termination is exit (ExitCode), timeout (TimeoutMs), signal (Signal)
// or cancelled.
type Termination struct {
	Kind      string  `json:"kind"`
	ExitCode  *int64  `json:"exitCode,omitzero"`
	TimeoutMs *int64  `json:"timeoutMs,omitzero"`
	Signal    *string `json:"signal,omitzero"`
}

// ExecutionEvidence is CandidateExecutionEvidence (self-digested).
type ExecutionEvidence struct {
	Kind                   string                 `json:"kind"`
	MaterializationReceipt MaterializationReceipt `json:"materializationReceipt"`
	Receipt                RunReceipt             `json:"receipt"`
	Digest                 string                 `json:"digest"`
}
