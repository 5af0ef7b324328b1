package contract_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// pcFuzzParse fuzzes one Parse function: a refusal is a *schema.Error
// with issues, and an accepted value validates again as a Go value.
func pcFuzzParse[T any](f *testing.F, kind string, node schema.Node, parse func([]byte) (*T, error), seeds ...string) {
	if k, err := vectors.Load(kind); err == nil {
		for _, c := range k.Cases {
			f.Add(c.Raw())
		}
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parse(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("refusal is not a *schema.Error with issues: %v", err)
			}
			return
		}
		if _, err := contract.Validate(kind, node, v); err != nil {
			t.Fatalf("an accepted value does not validate again: %v", err)
		}
	})
}

func FuzzParseInputPart(f *testing.F) {
	pcFuzzParse(f, contract.KindInputPart, contract.InputPartSchema, contract.ParseInputPart,
		`{"type":"text","text":"x"}`, `{"type":"file","path":"a","content":"b"}`, `{"type":"image","url":"u"}`)
}

func FuzzParseBackendMessage(f *testing.F) {
	pcFuzzParse(f, contract.KindBackendMessage, contract.BackendMessageSchema, contract.ParseBackendMessage,
		`{"id":"m","role":"user","parts":[{"type":"text","text":"x"}],"timestamp":"2026-08-01T20:00:00Z","metadata":{"__proto__":1}}`)
}

func FuzzParsePortableConversationContext(f *testing.F) {
	pcFuzzParse(f, contract.KindPortableConversationContext, contract.PortableConversationContextSchema, contract.ParsePortableConversationContext,
		pcMarshal(f, pcSource(f)))
}

func FuzzParsePortableContextPartPlan(f *testing.F) {
	pcFuzzParse(f, contract.KindPortableContextPartPlan, contract.PortableContextPartPlanSchema, contract.ParsePortableContextPartPlan)
}

func FuzzParsePortableContextPlan(f *testing.F) {
	pcFuzzParse(f, contract.KindPortableContextPlan, contract.PortableContextPlanSchema, contract.ParsePortableContextPlan,
		pcMarshal(f, pcPlan(f)))
}

func FuzzParsePortableContextPlanRequest(f *testing.F) {
	req, err := contract.NewPortableContextPlanRequest("r", *pcSource(f), pcDestination(), nil)
	if err != nil {
		f.Fatal(err)
	}
	pcFuzzParse(f, contract.KindPortableContextPlanRequest, contract.PortableContextPlanRequestSchema, contract.ParsePortableContextPlanRequest,
		pcMarshal(f, req))
}

func FuzzParsePortableContextPlanResult(f *testing.F) {
	plan := pcPlan(f)
	res := contract.PortableContextPlanResult{Status: contract.PlanStatusReady, RequestID: "r", RequestDigest: pcDigestOf("1"), Plan: plan}
	pcFuzzParse(f, contract.KindPortableContextPlanResult, contract.PortableContextPlanResultSchema, contract.ParsePortableContextPlanResult,
		pcMarshal(f, res))
}

func FuzzParsePortableContextTransferPlan(f *testing.F) {
	tp, err := contract.ProjectPortableContextPlan(pcPlan(f))
	if err != nil {
		f.Fatal(err)
	}
	pcFuzzParse(f, contract.KindPortableContextTransferPlan, contract.PortableContextTransferPlanSchema, contract.ParsePortableContextTransferPlan,
		pcMarshal(f, tp))
}

func FuzzParseContextTransferRequest(f *testing.F) {
	plan := pcPlan(f)
	req, err := contract.CreateContextTransferRequest("t", plan, pcAcceptance(plan, contract.AcceptedByUser), contract.ContextTransferInputs{})
	if err != nil {
		f.Fatal(err)
	}
	pcFuzzParse(f, contract.KindContextTransferRequest, contract.ContextTransferRequestSchema, contract.ParseContextTransferRequest,
		pcMarshal(f, req))
}

func FuzzParseContextTransferReceipt(f *testing.F) {
	pcFuzzParse(f, contract.KindContextTransferReceipt, contract.ContextTransferReceiptSchema, contract.ParseContextTransferReceipt)
}

func FuzzParseContextTransferResult(f *testing.F) {
	pcFuzzParse(f, contract.KindContextTransferResult, contract.ContextTransferResultSchema, contract.ParseContextTransferResult)
}

func FuzzParseLegacyContextTransferRequest(f *testing.F) {
	pcFuzzParse(f, contract.KindContextTransferRequest, contract.LegacyContextTransferRequestSchema, contract.ParseLegacyContextTransferRequest)
}

func FuzzParseLegacyContextTransferResult(f *testing.F) {
	pcFuzzParse(f, contract.KindContextTransferResult, contract.LegacyContextTransferResultSchema, contract.ParseLegacyContextTransferResult)
}
