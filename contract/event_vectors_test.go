package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
)

func TestEventVectors(t *testing.T) {
	// Checklist CTL-05, CTL-06, CHD-*: every canonical event variant and the
	// envelope agree with the reference's verdicts, canonical forms and
	// digests.
	r := vectors.CheckKind(t, contract.KindCanonicalStreamEvent,
		acceptVia[contract.StreamEvent](contract.KindCanonicalStreamEvent, contract.CanonicalStreamEventSchema))
	t.Logf("%s: %+v", contract.KindCanonicalStreamEvent, r)
	r = vectors.CheckKind(t, contract.KindEventEnvelope,
		acceptVia[contract.EventEnvelope](contract.KindEventEnvelope, contract.EventEnvelopeSchema))
	t.Logf("%s: %+v", contract.KindEventEnvelope, r)
}

func TestTurnVectors(t *testing.T) {
	// Checklist TRN-*, NAT-12: turn input and result, native continuation
	// result.
	for _, c := range []struct {
		kind   string
		accept vectors.Accept
	}{
		{contract.KindTurnInput, acceptVia[contract.TurnInput](contract.KindTurnInput, contract.TurnInputSchema)},
		{contract.KindTurnResult, acceptVia[contract.TurnResult](contract.KindTurnResult, contract.TurnResultSchema)},
		{contract.KindNativeContinuationResult, acceptVia[contract.NativeContinuationResult](contract.KindNativeContinuationResult, contract.NativeContinuationResultSchema)},
	} {
		r := vectors.CheckKind(t, c.kind, c.accept)
		t.Logf("%s: %+v", c.kind, r)
	}
}
