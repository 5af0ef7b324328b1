package candidate_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// fuzzDecoder feeds every vector input of kind, then fuzzed bytes, to
// parse. A refusal must be a *schema.Error; an accepted document must
// re-encode canonically and parse again to the same value (never a
// panic, never an untyped error).
func fuzzDecoder[T any](f *testing.F, kind string, parse func([]byte) (*T, error)) {
	if k, err := vectors.Load(kind); err == nil {
		for _, c := range k.Cases {
			f.Add(c.Raw())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parse(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("refusal is %T, want *schema.Error: %v", err, err)
			}
			return
		}
		v, err := canonjson.ToValue(got)
		if err != nil {
			t.Fatalf("accepted value does not re-encode: %v", err)
		}
		text, err := canonjson.Canonical(v)
		if err != nil {
			return // accepted, but the reference has no canonical form either
		}
		again, err := parse(text)
		if err != nil {
			t.Fatalf("canonical form of an accepted value is refused: %v\n%s", err, text)
		}
		back, _ := canonjson.ToValue(again)
		if !canonjson.Equal(back, v) {
			t.Fatalf("round trip changed the value:\n%s\n%s", text, canonjson.Marshal(back))
		}
	})
}

func FuzzParseBundle(f *testing.F) {
	fuzzDecoder(f, candidate.KindBundle, func(b []byte) (*candidate.Bundle, error) { return candidate.ParseBundle(b, candidate.DialectAuto) })
}
func FuzzParseProfile(f *testing.F) { fuzzDecoder(f, candidate.KindProfile, candidate.ParseProfile) }
func FuzzParseExecution(f *testing.F) {
	fuzzDecoder(f, candidate.KindExecution, candidate.ParseExecution)
}
func FuzzParseSource(f *testing.F) {
	fuzzDecoder(f, candidate.KindImprovementSource, candidate.ParseSource)
}
func FuzzParseBenchmarkTask(f *testing.F) {
	fuzzDecoder(f, candidate.KindBenchmarkTask, candidate.ParseBenchmarkTask)
}
func FuzzParseBenchmarkSuiteInputs(f *testing.F) {
	fuzzDecoder(f, candidate.KindBenchmarkSuiteInputs, candidate.ParseBenchmarkSuiteInputs)
}
func FuzzParseExecutionPlanMaterial(f *testing.F) {
	fuzzDecoder(f, candidate.KindExecutionPlanMaterial, candidate.ParseExecutionPlanMaterial)
}
func FuzzParseModelSettlementMaterial(f *testing.F) {
	fuzzDecoder(f, candidate.KindModelSettlementMaterial, candidate.ParseModelSettlementMaterial)
}
func FuzzParseBenchmarkResultMaterial(f *testing.F) {
	fuzzDecoder(f, candidate.KindBenchmarkResultMaterial, candidate.ParseBenchmarkResultMaterial)
}
func FuzzParseProfilePlanMaterial(f *testing.F) {
	fuzzDecoder(f, candidate.KindProfilePlanMaterial, candidate.ParseProfilePlanMaterial)
}
func FuzzParseMaterializationReceipt(f *testing.F) {
	fuzzDecoder(f, candidate.KindMaterializationReceipt, candidate.ParseMaterializationReceipt)
}
func FuzzParseRunReceipt(f *testing.F) {
	fuzzDecoder(f, candidate.KindRunReceipt, candidate.ParseRunReceipt)
}
func FuzzParseExecutionEvidence(f *testing.F) {
	fuzzDecoder(f, candidate.KindExecutionEvidence, candidate.ParseExecutionEvidence)
}
func FuzzParsePreparationReceipt(f *testing.F) {
	fuzzDecoder(f, candidate.KindPreparationReceipt, candidate.ParsePreparationReceipt)
}
func FuzzParseLeaseRecord(f *testing.F) {
	fuzzDecoder(f, candidate.KindLeaseRecord, candidate.ParseLeaseRecord)
}
func FuzzParseCertifiedContext(f *testing.F) {
	fuzzDecoder(f, candidate.KindCertifiedContext, candidate.ParseCertifiedContext)
}
func FuzzParseCode(f *testing.F) { fuzzDecoder(f, candidate.KindCode, candidate.ParseCode) }
func FuzzParseArtifactRef(f *testing.F) {
	fuzzDecoder(f, candidate.KindArtifactRef, candidate.ParseArtifactRef)
}
func FuzzParseEmbeddedArtifact(f *testing.F) {
	fuzzDecoder(f, candidate.KindEmbeddedArtifact, candidate.ParseEmbeddedArtifact)
}
func FuzzParseWorkspaceSnapshotEvidence(f *testing.F) {
	fuzzDecoder(f, candidate.KindWorkspaceSnapshotEvidence, candidate.ParseWorkspaceSnapshotEvidence)
}
func FuzzParseWorkspaceManifestMaterial(f *testing.F) {
	fuzzDecoder(f, candidate.KindWorkspaceManifestMaterial, candidate.ParseWorkspaceManifestMaterial)
}
func FuzzParseResources(f *testing.F) {
	fuzzDecoder(f, candidate.KindResources, candidate.ParseResources)
}
func FuzzParseFileMount(f *testing.F) {
	fuzzDecoder(f, candidate.KindFileMount, candidate.ParseFileMount)
}
func FuzzParseInlineResource(f *testing.F) {
	fuzzDecoder(f, candidate.KindInlineResource, candidate.ParseInlineResource)
}
func FuzzParseGitHubResource(f *testing.F) {
	fuzzDecoder(f, candidate.KindGitHubResource, candidate.ParseGitHubResource)
}
func FuzzParseBenchmarkSuite(f *testing.F) {
	fuzzDecoder(f, candidate.KindBenchmarkSuite, candidate.ParseBenchmarkSuite)
}
func FuzzParseProfileActivation(f *testing.F) {
	fuzzDecoder(f, candidate.KindProfileActivation, candidate.ParseProfileActivation)
}
func FuzzParseTaskOutcomeMaterial(f *testing.F) {
	fuzzDecoder(f, candidate.KindTaskOutcomeMaterial, candidate.ParseTaskOutcomeMaterial)
}
func FuzzParseImprovementReview(f *testing.F) {
	fuzzDecoder(f, candidate.KindImprovementReview, candidate.ParseImprovementReview)
}
func FuzzParseImprovementActivation(f *testing.F) {
	fuzzDecoder(f, candidate.KindImprovementActivation, candidate.ParseImprovementActivation)
}
func FuzzParseImprovementActivationResult(f *testing.F) {
	fuzzDecoder(f, candidate.KindActivationResult, candidate.ParseImprovementActivationResult)
}
func FuzzParseProfileChange(f *testing.F) {
	fuzzDecoder(f, candidate.KindProfileChange, candidate.ParseProfileChange)
}
func FuzzParseProfileRunReceipt(f *testing.F) {
	fuzzDecoder(f, candidate.KindProfileRunReceipt, candidate.ParseProfileRunReceipt)
}
func FuzzParseProfileMeasuredComparison(f *testing.F) {
	fuzzDecoder(f, candidate.KindProfileComparison, candidate.ParseProfileMeasuredComparison)
}
func FuzzParseImprovementProposal(f *testing.F) {
	fuzzDecoder(f, candidate.KindImprovementProposal, candidate.ParseImprovementProposal)
}
func FuzzParseProfileChangeStep(f *testing.F) {
	fuzzDecoder(f, candidate.KindProfileChangeStep, candidate.ParseProfileChangeStep)
}
