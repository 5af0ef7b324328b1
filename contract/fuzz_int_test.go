package contract_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// intFuzz fuzzes one Parse function: a refusal must be a *schema.Error, and
// an accepted value must validate again as exactly the value the schema
// accepted from the raw input.
func intFuzz[T any](f *testing.F, kind string, node schema.Node, parse func([]byte) (T, error), seeds ...string) {
	if k, err := vectors.Load(kind); err == nil {
		for _, c := range k.Cases {
			f.Add(c.Raw())
		}
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parse(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("refusal is %T, not *schema.Error: %v", err, err)
			}
			return
		}
		raw, err := schema.Decode(kind, data)
		if err != nil {
			t.Fatalf("accepted undecodable input: %v", err)
		}
		want, err := schema.Run(kind, node, raw)
		if err != nil {
			t.Fatalf("accepted a value the schema refuses: %v", err)
		}
		again, err := contract.Validate(kind, node, got)
		if err != nil {
			t.Fatalf("accepted value does not validate again: %v", err)
		}
		if !canonjson.Equal(again, want) {
			t.Fatalf("accepted value changed: %s vs %s", canonjson.Marshal(again), canonjson.Marshal(want))
		}
	})
}

func FuzzParseRequestedInteractions(f *testing.F) {
	intFuzz(f, contract.KindRequestedInteractions, contract.RequestedInteractionsSchema, contract.ParseRequestedInteractions, `{}`, `{"a.b":true}`)
}

func FuzzParseInteractionField(f *testing.F) {
	intFuzz(f, contract.KindInteractionField, contract.InteractionFieldSchema, contract.ParseInteractionField,
		`{"type":"number","name":"n","label":"N","min":0,"max":5,"default":2}`, `{"type":"boolean","name":"b","label":"B","default":true}`,
		`{"type":"secret","name":"k","label":"K","maxLength":64,"placeholder":"p"}`)
}

func FuzzParseInteractionAnswerSpec(f *testing.F) {
	intFuzz(f, contract.KindInteractionAnswerSpec, contract.InteractionAnswerSpecSchema, contract.ParseInteractionAnswerSpec)
}

func FuzzParseInteractionCapabilities(f *testing.F) {
	intFuzz(f, contract.KindInteractionCapabilities, contract.InteractionCapabilitiesSchema, contract.ParseInteractionCapabilities,
		`{"kinds":["question","vendor.x"],"answerFieldTypes":["text","secret"],"responseScopes":["interaction"],"secretAnswers":true,"concurrentRequests":false,"replay":true,"responseIdempotency":true}`)
}

func FuzzParseInteractionSecretReference(f *testing.F) {
	intFuzz(f, contract.KindInteractionSecretReference, contract.InteractionSecretReferenceSchema, contract.ParseInteractionSecretReference)
}

func FuzzParseInteractionData(f *testing.F) {
	intFuzz(f, contract.KindInteractionData, contract.InteractionDataSchema, contract.ParseInteractionData,
		`{"a":"x","b":1.5,"c":true,"d":[],"e":["p"],"f":{"kind":"secret_handle","handleId":"h","oneUse":true}}`)
}

func FuzzParseInteractionBinding(f *testing.F) {
	intFuzz(f, contract.KindInteractionBinding, contract.InteractionBindingSchema, contract.ParseInteractionBinding)
}

func FuzzParseInteractionExecutionBinding(f *testing.F) {
	intFuzz(f, contract.KindInteractionExecutionBinding, contract.InteractionExecutionBindingSchema, contract.ParseInteractionExecutionBinding)
}

func FuzzParseInteractionRequest(f *testing.F) {
	intFuzz(f, contract.KindInteractionRequest, contract.InteractionRequestSchema, contract.ParseInteractionRequest)
}

func FuzzParseInteractionResponse(f *testing.F) {
	intFuzz(f, contract.KindInteractionResponse, contract.InteractionResponseSchema, contract.ParseInteractionResponse)
}

func FuzzParseInteractionResponseCommand(f *testing.F) {
	intFuzz(f, contract.KindInteractionResponseCommand, contract.InteractionResponseCommandSchema, contract.ParseInteractionResponseCommand)
}

func FuzzParseInteractionAcknowledgement(f *testing.F) {
	intFuzz(f, contract.KindInteractionAcknowledgement, contract.InteractionAcknowledgementSchema, contract.ParseInteractionAcknowledgement)
}

func FuzzParseDurablePlan(f *testing.F) {
	intFuzz(f, contract.KindDurablePlan, contract.DurablePlanSchema, contract.ParseDurablePlan,
		`{"id":"p","revision":2,"title":" T ","body":" B ","submittedAt":"2026-07-10T02:00+02:00"}`)
}

func FuzzParsePlanSubmission(f *testing.F) {
	intFuzz(f, contract.KindPlanSubmission, contract.PlanSubmissionSchema, contract.ParsePlanSubmission,
		`{"title":" T ","body":"B","sourceToolCallId":"t","providerState":{"kind":"claude-code","version":1,"nativeSessionId":"n"}}`)
}

func FuzzParsePlanContinuation(f *testing.F) {
	intFuzz(f, contract.KindPlanContinuation, contract.PlanContinuationSchema, contract.ParsePlanContinuation)
}

func FuzzParseAgentExecutionOutcome(f *testing.F) {
	intFuzz(f, contract.KindAgentExecutionOutcome, contract.AgentExecutionOutcomeSchema, contract.ParseAgentExecutionOutcome, `{"type":"completed"}`)
}
