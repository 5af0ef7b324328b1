package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
)

// TestContinuationVectors: checklist NAT-01 (proofs carry the run
// identity), NAT-02 (request and turn digests), NAT-05/NAT-06
// (acknowledgement status rules). Every reference case binds.
func TestContinuationVectors(t *testing.T) {
	pcLogResult(t, contract.KindNativeContextBoundaryProof, vectors.CheckKind(t, contract.KindNativeContextBoundaryProof, acceptVia[contract.NativeContextBoundaryProof](contract.KindNativeContextBoundaryProof, contract.NativeContextBoundaryProofSchema)))
	pcLogResult(t, contract.KindNativeContextContinuationTurn, vectors.CheckKind(t, contract.KindNativeContextContinuationTurn, acceptVia[contract.NativeContextContinuationTurn](contract.KindNativeContextContinuationTurn, contract.NativeContextContinuationTurnSchema)))
	pcLogResult(t, contract.KindNativeContextContinuationRequest, vectors.CheckKind(t, contract.KindNativeContextContinuationRequest, acceptVia[contract.NativeContextContinuationRequest](contract.KindNativeContextContinuationRequest, contract.NativeContextContinuationRequestSchema)))
	pcLogResult(t, contract.KindNativeContextContinuationAcknowledgement, vectors.CheckKind(t, contract.KindNativeContextContinuationAcknowledgement, acceptVia[contract.NativeContextContinuationAcknowledgement](contract.KindNativeContextContinuationAcknowledgement, contract.NativeContextContinuationAcknowledgementSchema)))
}
