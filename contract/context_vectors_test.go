package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
)

// TestContextVectorsAgree runs the kinds whose shape the seeds did not
// change (checklist CTX-01, CTX-03, CTX-07 for the source context;
// CTX-04 for part decisions): every reference case binds.
func TestContextVectorsAgree(t *testing.T) {
	pcLogResult(t, contract.KindPortableConversationContext, vectors.CheckKind(t, contract.KindPortableConversationContext, acceptVia[contract.PortableConversationContext](contract.KindPortableConversationContext, contract.PortableConversationContextSchema)))
	pcLogResult(t, contract.KindPortableContextPartPlan, vectors.CheckKind(t, contract.KindPortableContextPartPlan, acceptVia[contract.PortableContextPartPlan](contract.KindPortableContextPartPlan, contract.PortableContextPartPlanSchema)))
}

// TestLegacyContextVectors checks the legacy (recovery-path) schemas
// against every 1.6.0 case of the kinds Interface 5 changed (CTX-25): the
// legacy contract is exactly the reference build's.
func TestLegacyContextVectors(t *testing.T) {
	pcLogResult(t, contract.KindPortableContextPlan, vectors.CheckKind(t, contract.KindPortableContextPlan, acceptVia[contract.PortableContextPlan](contract.KindPortableContextPlan, contract.LegacyPortableContextPlanSchema)))
	pcLogResult(t, contract.KindPortableContextPlanRequest, vectors.CheckKind(t, contract.KindPortableContextPlanRequest, acceptVia[contract.PortableContextPlanRequest](contract.KindPortableContextPlanRequest, contract.LegacyPortableContextPlanRequestSchema)))
	pcLogResult(t, contract.KindPortableContextPlanResult, vectors.CheckKind(t, contract.KindPortableContextPlanResult, acceptVia[contract.PortableContextPlanResult](contract.KindPortableContextPlanResult, contract.LegacyPortableContextPlanResultSchema)))
	pcLogResult(t, contract.KindContextTransferRequest, vectors.CheckKind(t, contract.KindContextTransferRequest, acceptVia[contract.LegacyContextTransferRequest](contract.KindContextTransferRequest, contract.LegacyContextTransferRequestSchema)))
	pcLogResult(t, contract.KindContextTransferReceipt, vectors.CheckKind(t, contract.KindContextTransferReceipt, acceptVia[contract.ContextTransferReceipt](contract.KindContextTransferReceipt, contract.LegacyContextTransferReceiptSchema)))
	pcLogResult(t, contract.KindContextTransferResult, vectors.CheckKind(t, contract.KindContextTransferResult, acceptVia[contract.ContextTransferResult](contract.KindContextTransferResult, contract.LegacyContextTransferResultSchema)))
}

func pcLogResult(t *testing.T, kind string, r vectors.Result) {
	t.Helper()
	t.Logf("%s: %d cases agree (%d valid, %d canonical)", kind, r.Cases, r.Valid, r.Canonical)
}
