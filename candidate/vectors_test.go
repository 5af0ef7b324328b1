package candidate_test

import (
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

type vectorKind struct {
	name   string
	accept vectors.Accept
}

func check[T any](name string, node schema.Node) vectorKind {
	return vectorKind{name, vectors.AcceptVia[T](name, node)}
}

// TestVectors agrees with the reference on every case of every candidate
// kind: verdict, canonical bytes and digest, issue paths, and presence
// round trips through the Go types (CAND §23, RTP-09).
func TestVectors(t *testing.T) {
	for _, k := range vectorKinds() {
		t.Run(k.name, func(t *testing.T) {
			res := vectors.CheckKind(t, k.name, k.accept)
			t.Logf("%s: %d cases, %d valid, %d canonical", k.name, res.Cases, res.Valid, res.Canonical)
		})
	}
}

func vectorKinds() []vectorKind {
	return []vectorKind{
		check[candidate.ArtifactRef](candidate.KindArtifactRef, candidate.ArtifactRefSchema),
		check[candidate.EmbeddedArtifact](candidate.KindEmbeddedArtifact, candidate.EmbeddedArtifactSchema),
		check[candidate.WorkspaceManifestMaterial](candidate.KindWorkspaceManifestMaterial, candidate.WorkspaceManifestMaterialSchema),
		check[candidate.WorkspaceSnapshotEvidence](candidate.KindWorkspaceSnapshotEvidence, candidate.WorkspaceSnapshotEvidenceSchema),
		check[candidate.InlineResource](candidate.KindInlineResource, candidate.InlineResourceSchema),
		check[candidate.GitHubResource](candidate.KindGitHubResource, candidate.GitHubResourceSchema),
		check[candidate.FileMount](candidate.KindFileMount, candidate.FileMountSchema),
		check[candidate.Resources](candidate.KindResources, candidate.ResourcesSchema),
		check[candidate.Source](candidate.KindImprovementSource, candidate.SourceSchema),
		check[candidate.Profile](candidate.KindProfile, candidate.ProfileSchema),
		check[candidate.Code](candidate.KindCode, candidate.CodeSchema),
		check[candidate.Execution](candidate.KindExecution, candidate.ExecutionSchema),
		check[candidate.Bundle](candidate.KindBundle, candidate.BundleSchemaFor(candidate.DialectAuto)),
		check[candidate.ResolvedModel](candidate.KindResolvedModel, candidate.ResolvedModelSchema),
		check[candidate.ExecutionLimits](candidate.KindExecutionLimits, candidate.ExecutionLimitsSchema),
		check[candidate.FixedSpend](candidate.KindFixedSpend, candidate.FixedSpendSchema),
		check[candidate.ProfilePlanMaterial](candidate.KindProfilePlanMaterial, candidate.ProfilePlanMaterialSchema),
		check[candidate.ProfileActivation](candidate.KindProfileActivation, candidate.ProfileActivationSchema),
		check[candidate.ExecutionPlanMaterial](candidate.KindExecutionPlanMaterial, candidate.ExecutionPlanMaterialSchema),
		check[candidate.ModelSettlementCall](candidate.KindModelSettlementCall, candidate.ModelSettlementCallSchema),
		check[candidate.ModelSettlementMaterial](candidate.KindModelSettlementMaterial, candidate.ModelSettlementMaterialSchema),
		check[candidate.ModelSettlementEvidence](candidate.KindModelSettlementEvidence, candidate.ModelSettlementEvidenceSchema),
		check[candidate.TaskOutcomeMaterial](candidate.KindTaskOutcomeMaterial, candidate.TaskOutcomeMaterialSchema),
		check[candidate.TaskOutcomeEvidence](candidate.KindTaskOutcomeEvidence, candidate.TaskOutcomeEvidenceSchema),
		check[candidate.BenchmarkResultMaterial](candidate.KindBenchmarkResultMaterial, candidate.BenchmarkResultMaterialSchema),
		check[candidate.BenchmarkResultEvidence](candidate.KindBenchmarkResultEvidence, candidate.BenchmarkResultEvidenceSchema),
		check[candidate.BenchmarkTask](candidate.KindBenchmarkTask, candidate.BenchmarkTaskSchema),
		check[candidate.BenchmarkSuite](candidate.KindBenchmarkSuite, candidate.BenchmarkSuiteSchema),
		check[candidate.BenchmarkSuiteInputs](candidate.KindBenchmarkSuiteInputs, candidate.BenchmarkSuiteInputsSchema),
		check[candidate.MaterializationReceipt](candidate.KindMaterializationReceipt, candidate.MaterializationReceiptSchema),
		check[candidate.RunReceipt](candidate.KindRunReceipt, candidate.RunReceiptSchema),
		check[candidate.ExecutionEvidence](candidate.KindExecutionEvidence, candidate.ExecutionEvidenceSchema),
		check[candidate.PreparationReceipt](candidate.KindPreparationReceipt, candidate.PreparationReceiptSchema),
		check[candidate.PreparationAxisResult](candidate.KindPreparationAxisResult, candidate.PreparationAxisResultSchema),
		check[candidate.PreparationReasoningEffort](candidate.KindPreparationReasoning, candidate.PreparationReasoningEffortSchema),
		check[candidate.LeaseRecord](candidate.KindLeaseRecord, candidate.LeaseRecordSchema),
		check[candidate.LeaseRecord](candidate.KindLeaseRecordMaterial, candidate.LeaseRecordMaterialSchema),
		check[candidate.CertifiedContext](candidate.KindCertifiedContext, candidate.CertifiedContextSchema),
		check[candidate.CertifiedContextEntry](candidate.KindCertifiedContextEntry, candidate.CertifiedContextEntrySchema),
		check[candidate.ImprovementReview](candidate.KindImprovementReview, candidate.ImprovementReviewSchema),
		check[candidate.ImprovementActivation](candidate.KindImprovementActivation, candidate.ImprovementActivationSchema),
		check[candidate.ImprovementActivationResult](candidate.KindActivationResult, candidate.ImprovementActivationResultSchema),
		check[profile.Diff](candidate.KindProfileChangeStep, candidate.ProfileChangeStepSchema),
		check[candidate.ProfileChange](candidate.KindProfileChange, candidate.ProfileChangeSchema),
		check[candidate.ProfileRunReceipt](candidate.KindProfileRunReceipt, candidate.ProfileRunReceiptSchema),
		check[candidate.ProfileMeasuredComparison](candidate.KindProfileComparison, candidate.ProfileMeasuredComparisonSchema),
		check[candidate.ImprovementProposal](candidate.KindImprovementProposal, candidate.ImprovementProposalSchema),
	}
}
