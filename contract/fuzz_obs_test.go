package contract_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/schema"
)

// obsFuzzParse fuzzes one Parse function, seeded with the kind's vector
// inputs and seeds: a refusal must be a *schema.Error with issues; an
// accepted value must re-validate as a Go value and parse again, to the
// same digest, from its re-encoding.
func obsFuzzParse[T any](f *testing.F, kind string, node schema.Node, parse func([]byte) (*T, error), seeds ...string) {
	if k, err := vectors.Load(kind); err == nil {
		for _, c := range k.Cases {
			f.Add(c.Raw())
		}
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := parse(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("refusal is not a *schema.Error with issues: %v", err)
			}
			return
		}
		out, err := contract.Validate(kind, node, x)
		if err != nil {
			t.Fatalf("an accepted value does not re-validate: %v", err)
		}
		again, err := parse(canonjson.Marshal(out))
		if err != nil {
			t.Fatalf("the re-encoded value does not parse: %v", err)
		}
		d1, err1 := contract.DigestOf(x)
		d2, err2 := contract.DigestOf(again)
		if (err1 == nil) != (err2 == nil) || d1 != d2 {
			t.Fatalf("digest changed through re-encoding: %s (%v) vs %s (%v)", d1, err1, d2, err2)
		}
	})
}

func FuzzParseTokenUsage(f *testing.F) {
	obsFuzzParse(f, contract.KindTokenUsage, contract.TokenUsageSchema, contract.ParseTokenUsage,
		`{"inputTokens":1,"outputTokens":2}`, `{"inputTokens":1,"outputTokens":2,"totalTokens":3,"cacheReadInputTokens":0,"cacheCreationInputTokens":4,"reasoningTokens":5,"cost":0.25}`)
}

func FuzzParseSafeEndpoint(f *testing.F) {
	obsFuzzParse(f, contract.KindSafeEndpoint, contract.SafeEndpointSchema, contract.ParseSafeEndpoint)
}

func FuzzParseEnvironmentObservation(f *testing.F) {
	obsFuzzParse(f, contract.KindEnvironmentObservation, contract.EnvironmentObservationSchema, contract.ParseEnvironmentObservation)
}

func FuzzParseExecutionLimitObservation(f *testing.F) {
	obsFuzzParse(f, contract.KindExecutionLimitObservation, contract.ExecutionLimitObservationSchema, contract.ParseExecutionLimitObservation)
}

func FuzzParseConfidentialAttestation(f *testing.F) {
	obsFuzzParse(f, contract.KindConfidentialAttestation, contract.ConfidentialAttestationSchema, contract.ParseConfidentialAttestation)
}

func FuzzParseConfidentialExecutionRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindConfidentialExecutionRequest, contract.ConfidentialExecutionRequestSchema, contract.ParseConfidentialExecutionRequest)
}
