package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
)

func FuzzParseNativeContextBoundaryProof(f *testing.F) {
	pcFuzzParse(f, contract.KindNativeContextBoundaryProof, contract.NativeContextBoundaryProofSchema, contract.ParseNativeContextBoundaryProof)
}

func FuzzParseNativeContextContinuationTurn(f *testing.F) {
	pcFuzzParse(f, contract.KindNativeContextContinuationTurn, contract.NativeContextContinuationTurnSchema, contract.ParseNativeContextContinuationTurn)
}

func FuzzParseNativeContextContinuationRequest(f *testing.F) {
	pcFuzzParse(f, contract.KindNativeContextContinuationRequest, contract.NativeContextContinuationRequestSchema, contract.ParseNativeContextContinuationRequest)
}

func FuzzParseNativeContextContinuationAcknowledgement(f *testing.F) {
	pcFuzzParse(f, contract.KindNativeContextContinuationAcknowledgement, contract.NativeContextContinuationAcknowledgementSchema, contract.ParseNativeContextContinuationAcknowledgement)
}
