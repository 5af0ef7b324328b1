package contract

import "github.com/agentrt/agentrt/schema"

// continuationKinds lists the wire kinds of native same-session
// continuation.
func continuationKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindNativeContextBoundary, Node: NativeContextBoundarySchema},
		{Name: KindNativeContextBoundaryProof, Node: NativeContextBoundaryProofSchema},
		{Name: KindNativeContextContinuationTurn, Node: NativeContextContinuationTurnSchema},
		{Name: KindNativeContextContinuationRequest, Node: NativeContextContinuationRequestSchema},
		{Name: KindNativeContextContinuationAcknowledgement, Node: NativeContextContinuationAcknowledgementSchema},
	}
}
