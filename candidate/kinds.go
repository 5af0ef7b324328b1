package candidate

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Kind names, for errors and `agentrt check --kind`.
const (
	KindArtifactRef               = "AgentCandidateArtifactRef"
	KindEmbeddedArtifact          = "AgentCandidateEmbeddedArtifact"
	KindWorkspaceManifestMaterial = "AgentCandidateWorkspaceManifestMaterial"
	KindWorkspaceSnapshotEvidence = "AgentCandidateWorkspaceSnapshotEvidence"
	KindInlineResource            = "AgentCandidateInlineResource"
	KindGitHubResource            = "AgentCandidateGitHubResource"
	KindFileMount                 = "AgentCandidateFileMount"
	KindResources                 = "AgentCandidateResources"
	KindImprovementSource         = "AgentImprovementSource"
	KindProfile                   = "AgentCandidateProfile"
	KindCode                      = "AgentCandidateCode"
	KindExecution                 = "AgentCandidateExecution"
	KindBundle                    = "AgentCandidateBundle"
	KindResolvedModel             = "AgentCandidateResolvedModel"
	KindExecutionLimits           = "AgentCandidateExecutionLimits"
	KindFixedSpend                = "AgentCandidateFixedSpend"
	KindProfilePlanMaterial       = "AgentCandidateProfilePlanMaterial"
	KindProfileActivation         = "AgentCandidateProfileActivation"
	KindExecutionPlanMaterial     = "AgentCandidateExecutionPlanMaterial"
	KindModelSettlementCall       = "AgentCandidateModelSettlementCall"
	KindModelSettlementMaterial   = "AgentCandidateModelSettlementMaterial"
	KindModelSettlementEvidence   = "AgentCandidateModelSettlementEvidence"
	KindTaskOutcomeMaterial       = "AgentCandidateTaskOutcomeMaterial"
	KindTaskOutcomeEvidence       = "AgentCandidateTaskOutcomeEvidence"
	KindBenchmarkDimension        = "AgentCandidateBenchmarkDimension"
	KindBenchmarkResultMaterial   = "AgentCandidateBenchmarkResultMaterial"
	KindBenchmarkResultEvidence   = "AgentCandidateBenchmarkResultEvidence"
	KindBenchmarkTask             = "AgentCandidateBenchmarkTask"
	KindBenchmarkSuite            = "AgentCandidateBenchmarkSuite"
	KindBenchmarkSuiteInputs      = "AgentCandidateBenchmarkSuiteInputs"
	KindMaterializationReceipt    = "AgentCandidateMaterializationReceipt"
	KindRunReceipt                = "AgentCandidateRunReceipt"
	KindExecutionEvidence         = "CandidateExecutionEvidence"
	KindPreparationReceipt        = "AgentExecutionPreparationReceipt"
	KindPreparationAxisResult     = "AgentExecutionPreparationAxisResult"
	KindPreparationReasoning      = "AgentExecutionPreparationReasoningEffort"
	KindLeaseRecord               = "AgentWorkspaceLeaseRecord"
	KindLeaseRecordMaterial       = "AgentWorkspaceLeaseRecordMaterial"
	KindCertifiedContext          = "CertifiedContext"
	KindCertifiedContextEntry     = "CertifiedContextEntry"
	KindImprovementReview         = "AgentImprovementReview"
	KindImprovementActivation     = "AgentImprovementActivation"
	KindActivationResult          = "AgentImprovementActivationResult"
	KindProfileChangeStep         = "AgentProfileImprovementChangeStep"
	KindProfileChange             = "AgentProfileImprovementChange"
	KindProfileRunReceipt         = "AgentProfileImprovementRunReceipt"
	KindProfileComparison         = "AgentProfileImprovementMeasuredComparison"
	KindImprovementProposal       = "AgentImprovementProposal"
)

// Kinds lists the wire kinds this package owns, for `agentrt check`.
// Standalone kinds are read in the ts16 dialect (the reference shapes the
// vectors bind); AgentCandidateBundle is read in DialectAuto.
func Kinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindArtifactRef, Node: ArtifactRefSchema},
		{Name: KindEmbeddedArtifact, Node: EmbeddedArtifactSchema},
		{Name: KindWorkspaceManifestMaterial, Node: WorkspaceManifestMaterialSchema},
		{Name: KindWorkspaceSnapshotEvidence, Node: WorkspaceSnapshotEvidenceSchema},
		{Name: KindInlineResource, Node: InlineResourceSchema},
		{Name: KindGitHubResource, Node: GitHubResourceSchema},
		{Name: KindFileMount, Node: FileMountSchema},
		{Name: KindResources, Node: ResourcesSchema},
		{Name: KindImprovementSource, Node: SourceSchema},
		{Name: KindProfile, Node: ProfileSchema},
		{Name: KindCode, Node: CodeSchema},
		{Name: KindExecution, Node: ExecutionSchema},
		{Name: KindBundle, Node: BundleSchemaFor(DialectAuto), Identity: bundleIdentity},
		{Name: KindResolvedModel, Node: ResolvedModelSchema},
		{Name: KindExecutionLimits, Node: ExecutionLimitsSchema},
		{Name: KindFixedSpend, Node: FixedSpendSchema},
		{Name: KindProfilePlanMaterial, Node: ProfilePlanMaterialSchema},
		{Name: KindProfileActivation, Node: ProfileActivationSchema},
		{Name: KindExecutionPlanMaterial, Node: ExecutionPlanMaterialSchema},
		{Name: KindModelSettlementCall, Node: ModelSettlementCallSchema},
		{Name: KindModelSettlementMaterial, Node: ModelSettlementMaterialSchema},
		{Name: KindModelSettlementEvidence, Node: ModelSettlementEvidenceSchema},
		{Name: KindTaskOutcomeMaterial, Node: TaskOutcomeMaterialSchema},
		{Name: KindTaskOutcomeEvidence, Node: TaskOutcomeEvidenceSchema},
		{Name: KindBenchmarkDimension, Node: BenchmarkDimensionSchema},
		{Name: KindBenchmarkResultMaterial, Node: BenchmarkResultMaterialSchema},
		{Name: KindBenchmarkResultEvidence, Node: BenchmarkResultEvidenceSchema},
		{Name: KindBenchmarkTask, Node: BenchmarkTaskSchema},
		{Name: KindBenchmarkSuite, Node: BenchmarkSuiteSchema},
		{Name: KindBenchmarkSuiteInputs, Node: BenchmarkSuiteInputsSchema},
		{Name: KindMaterializationReceipt, Node: MaterializationReceiptSchema},
		{Name: KindRunReceipt, Node: RunReceiptSchema},
		{Name: KindExecutionEvidence, Node: ExecutionEvidenceSchema},
		{Name: KindPreparationReceipt, Node: PreparationReceiptSchema},
		{Name: KindPreparationAxisResult, Node: PreparationAxisResultSchema},
		{Name: KindPreparationReasoning, Node: PreparationReasoningEffortSchema},
		{Name: KindLeaseRecord, Node: LeaseRecordSchema},
		{Name: KindLeaseRecordMaterial, Node: LeaseRecordMaterialSchema},
		{Name: KindCertifiedContext, Node: CertifiedContextSchema},
		{Name: KindCertifiedContextEntry, Node: CertifiedContextEntrySchema},
		{Name: KindImprovementReview, Node: ImprovementReviewSchema},
		{Name: KindImprovementActivation, Node: ImprovementActivationSchema},
		{Name: KindActivationResult, Node: ImprovementActivationResultSchema},
		{Name: KindProfileChangeStep, Node: ProfileChangeStepSchema},
		{Name: KindProfileChange, Node: ProfileChangeSchema},
		{Name: KindProfileRunReceipt, Node: ProfileRunReceiptSchema},
		{Name: KindProfileComparison, Node: ProfileMeasuredComparisonSchema},
		{Name: KindImprovementProposal, Node: ImprovementProposalSchema},
	}
}

// bundleIdentity reports, for `agentrt check`, the dialect a bundle was
// read in, its recomputed digest and whether the carried digest matches
// (parsing alone proves only the shape, CND-26).
func bundleIdentity(v canonjson.Value) []canonjson.Member {
	members := []canonjson.Member{{Name: "dialect", Value: canonjson.StringValue(string(DialectAuto.Resolve(v)))}}
	d, err := SelfDigestValue(v)
	if err != nil {
		return members
	}
	return append(members,
		canonjson.Member{Name: "bundleDigest", Value: canonjson.StringValue(d)},
		canonjson.Member{Name: "digestMatches", Value: canonjson.BoolValue(d == member(v, "digest"))})
}

// ParseBundle decodes data strictly and validates it as an
// AgentCandidateBundle in dialect d (the zero Dialect is DialectAuto).
// It checks the shape only: the carried digest is compared by
// [VerifyDigest].
func ParseBundle(data []byte, d Dialect) (*Bundle, error) {
	return contract.Parse[Bundle](KindBundle, BundleSchemaFor(d), data)
}

// ParseProfile decodes and validates an AgentCandidateProfile.
func ParseProfile(data []byte) (*Profile, error) {
	return contract.Parse[Profile](KindProfile, ProfileSchema, data)
}

// ParseCode decodes and validates an AgentCandidateCode (ts16 dialect).
func ParseCode(data []byte) (*Code, error) {
	return contract.Parse[Code](KindCode, CodeSchema, data)
}

// ParseExecution decodes and validates an AgentCandidateExecution.
func ParseExecution(data []byte) (*Execution, error) {
	return contract.Parse[Execution](KindExecution, ExecutionSchema, data)
}

// ParseArtifactRef decodes and validates an AgentCandidateArtifactRef.
func ParseArtifactRef(data []byte) (*ArtifactRef, error) {
	return contract.Parse[ArtifactRef](KindArtifactRef, ArtifactRefSchema, data)
}

// ParseEmbeddedArtifact decodes and validates an
// AgentCandidateEmbeddedArtifact.
func ParseEmbeddedArtifact(data []byte) (*EmbeddedArtifact, error) {
	return contract.Parse[EmbeddedArtifact](KindEmbeddedArtifact, EmbeddedArtifactSchema, data)
}

// ParseWorkspaceSnapshotEvidence decodes and validates an
// AgentCandidateWorkspaceSnapshotEvidence.
func ParseWorkspaceSnapshotEvidence(data []byte) (*WorkspaceSnapshotEvidence, error) {
	return contract.Parse[WorkspaceSnapshotEvidence](KindWorkspaceSnapshotEvidence, WorkspaceSnapshotEvidenceSchema, data)
}

// ParseWorkspaceManifestMaterial decodes and validates an
// AgentCandidateWorkspaceManifestMaterial.
func ParseWorkspaceManifestMaterial(data []byte) (*WorkspaceManifestMaterial, error) {
	return contract.Parse[WorkspaceManifestMaterial](KindWorkspaceManifestMaterial, WorkspaceManifestMaterialSchema, data)
}

// ParseResources decodes and validates an AgentCandidateResources.
func ParseResources(data []byte) (*Resources, error) {
	return contract.Parse[Resources](KindResources, ResourcesSchema, data)
}

// ParseFileMount decodes and validates an AgentCandidateFileMount.
func ParseFileMount(data []byte) (*FileMount, error) {
	return contract.Parse[FileMount](KindFileMount, FileMountSchema, data)
}

// ParseInlineResource decodes and validates an
// AgentCandidateInlineResource.
func ParseInlineResource(data []byte) (*InlineResource, error) {
	return contract.Parse[InlineResource](KindInlineResource, InlineResourceSchema, data)
}

// ParseGitHubResource decodes and validates an
// AgentCandidateGitHubResource.
func ParseGitHubResource(data []byte) (*GitHubResource, error) {
	return contract.Parse[GitHubResource](KindGitHubResource, GitHubResourceSchema, data)
}

// ParseSource decodes and validates an AgentImprovementSource.
func ParseSource(data []byte) (*Source, error) {
	return contract.Parse[Source](KindImprovementSource, SourceSchema, data)
}

// ParseBenchmarkTask decodes and validates an AgentCandidateBenchmarkTask.
func ParseBenchmarkTask(data []byte) (*BenchmarkTask, error) {
	return contract.Parse[BenchmarkTask](KindBenchmarkTask, BenchmarkTaskSchema, data)
}

// ParseBenchmarkSuite decodes and validates an
// AgentCandidateBenchmarkSuite.
func ParseBenchmarkSuite(data []byte) (*BenchmarkSuite, error) {
	return contract.Parse[BenchmarkSuite](KindBenchmarkSuite, BenchmarkSuiteSchema, data)
}

// ParseBenchmarkSuiteInputs decodes and validates an
// AgentCandidateBenchmarkSuiteInputs.
func ParseBenchmarkSuiteInputs(data []byte) (*BenchmarkSuiteInputs, error) {
	return contract.Parse[BenchmarkSuiteInputs](KindBenchmarkSuiteInputs, BenchmarkSuiteInputsSchema, data)
}

// ParseProfilePlanMaterial decodes and validates an
// AgentCandidateProfilePlanMaterial.
func ParseProfilePlanMaterial(data []byte) (*ProfilePlanMaterial, error) {
	return contract.Parse[ProfilePlanMaterial](KindProfilePlanMaterial, ProfilePlanMaterialSchema, data)
}

// ParseProfileActivation decodes and validates an
// AgentCandidateProfileActivation.
func ParseProfileActivation(data []byte) (*ProfileActivation, error) {
	return contract.Parse[ProfileActivation](KindProfileActivation, ProfileActivationSchema, data)
}

// ParseExecutionPlanMaterial decodes and validates an
// AgentCandidateExecutionPlanMaterial.
func ParseExecutionPlanMaterial(data []byte) (*ExecutionPlanMaterial, error) {
	return contract.Parse[ExecutionPlanMaterial](KindExecutionPlanMaterial, ExecutionPlanMaterialSchema, data)
}

// ParseModelSettlementMaterial decodes and validates an
// AgentCandidateModelSettlementMaterial.
func ParseModelSettlementMaterial(data []byte) (*ModelSettlementMaterial, error) {
	return contract.Parse[ModelSettlementMaterial](KindModelSettlementMaterial, ModelSettlementMaterialSchema, data)
}

// ParseTaskOutcomeMaterial decodes and validates an
// AgentCandidateTaskOutcomeMaterial.
func ParseTaskOutcomeMaterial(data []byte) (*TaskOutcomeMaterial, error) {
	return contract.Parse[TaskOutcomeMaterial](KindTaskOutcomeMaterial, TaskOutcomeMaterialSchema, data)
}

// ParseBenchmarkResultMaterial decodes and validates an
// AgentCandidateBenchmarkResultMaterial.
func ParseBenchmarkResultMaterial(data []byte) (*BenchmarkResultMaterial, error) {
	return contract.Parse[BenchmarkResultMaterial](KindBenchmarkResultMaterial, BenchmarkResultMaterialSchema, data)
}

// ParseMaterializationReceipt decodes and validates an
// AgentCandidateMaterializationReceipt.
func ParseMaterializationReceipt(data []byte) (*MaterializationReceipt, error) {
	return contract.Parse[MaterializationReceipt](KindMaterializationReceipt, MaterializationReceiptSchema, data)
}

// ParseRunReceipt decodes and validates an AgentCandidateRunReceipt.
func ParseRunReceipt(data []byte) (*RunReceipt, error) {
	return contract.Parse[RunReceipt](KindRunReceipt, RunReceiptSchema, data)
}

// ParseExecutionEvidence decodes and validates a
// CandidateExecutionEvidence.
func ParseExecutionEvidence(data []byte) (*ExecutionEvidence, error) {
	return contract.Parse[ExecutionEvidence](KindExecutionEvidence, ExecutionEvidenceSchema, data)
}

// ParsePreparationReceipt decodes and validates an
// AgentExecutionPreparationReceipt, including its self-digest.
func ParsePreparationReceipt(data []byte) (*PreparationReceipt, error) {
	return contract.Parse[PreparationReceipt](KindPreparationReceipt, PreparationReceiptSchema, data)
}

// ParseLeaseRecord decodes and validates an AgentWorkspaceLeaseRecord,
// including its self-digest.
func ParseLeaseRecord(data []byte) (*LeaseRecord, error) {
	return contract.Parse[LeaseRecord](KindLeaseRecord, LeaseRecordSchema, data)
}

// ParseCertifiedContext decodes and validates a CertifiedContext,
// including its content hashes.
func ParseCertifiedContext(data []byte) (*CertifiedContext, error) {
	return contract.Parse[CertifiedContext](KindCertifiedContext, CertifiedContextSchema, data)
}

// ParseImprovementReview decodes and validates an AgentImprovementReview.
func ParseImprovementReview(data []byte) (*ImprovementReview, error) {
	return contract.Parse[ImprovementReview](KindImprovementReview, ImprovementReviewSchema, data)
}

// ParseImprovementActivation decodes and validates an
// AgentImprovementActivation.
func ParseImprovementActivation(data []byte) (*ImprovementActivation, error) {
	return contract.Parse[ImprovementActivation](KindImprovementActivation, ImprovementActivationSchema, data)
}

// ParseImprovementActivationResult decodes and validates an
// AgentImprovementActivationResult.
func ParseImprovementActivationResult(data []byte) (*ImprovementActivationResult, error) {
	return contract.Parse[ImprovementActivationResult](KindActivationResult, ImprovementActivationResultSchema, data)
}

// ParseProfileChange decodes and validates an
// AgentProfileImprovementChange.
func ParseProfileChange(data []byte) (*ProfileChange, error) {
	return contract.Parse[ProfileChange](KindProfileChange, ProfileChangeSchema, data)
}

// ParseProfileChangeStep decodes and validates an
// AgentProfileImprovementChangeStep.
func ParseProfileChangeStep(data []byte) (*profile.Diff, error) {
	return contract.Parse[profile.Diff](KindProfileChangeStep, ProfileChangeStepSchema, data)
}

// ParseProfileRunReceipt decodes and validates an
// AgentProfileImprovementRunReceipt, including its self-digest.
func ParseProfileRunReceipt(data []byte) (*ProfileRunReceipt, error) {
	return contract.Parse[ProfileRunReceipt](KindProfileRunReceipt, ProfileRunReceiptSchema, data)
}

// ParseProfileMeasuredComparison decodes and validates an
// AgentProfileImprovementMeasuredComparison: every digest, binding and
// reported mean is recomputed.
func ParseProfileMeasuredComparison(data []byte) (*ProfileMeasuredComparison, error) {
	return contract.Parse[ProfileMeasuredComparison](KindProfileComparison, ProfileMeasuredComparisonSchema, data)
}

// ParseImprovementProposal decodes and validates an
// AgentImprovementProposal, including the measured comparison it carries.
func ParseImprovementProposal(data []byte) (*ImprovementProposal, error) {
	return contract.Parse[ImprovementProposal](KindImprovementProposal, ImprovementProposalSchema, data)
}
