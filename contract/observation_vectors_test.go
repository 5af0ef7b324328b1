package contract_test

import (
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
)

func TestObservationVectors(t *testing.T) {
	// Reference verdicts, canonical forms and digests of the observation,
	// limit and confidential-execution kinds (RTP-09: absent stays absent).
	vectors.CheckKind(t, contract.KindSafeEndpoint, acceptVia[contract.SafeEndpoint](contract.KindSafeEndpoint, contract.SafeEndpointSchema))
	vectors.CheckKind(t, contract.KindEnvironmentObservation, acceptVia[contract.EnvironmentObservation](contract.KindEnvironmentObservation, contract.EnvironmentObservationSchema))
	vectors.CheckKind(t, contract.KindExecutionLimitObservation, acceptVia[contract.ExecutionLimitObservation](contract.KindExecutionLimitObservation, contract.ExecutionLimitObservationSchema))
	vectors.CheckKind(t, contract.KindConfidentialAttestation, acceptVia[contract.ConfidentialAttestation](contract.KindConfidentialAttestation, contract.ConfidentialAttestationSchema))
	vectors.CheckKind(t, contract.KindConfidentialExecutionRequest, acceptVia[contract.ConfidentialExecutionRequest](contract.KindConfidentialExecutionRequest, contract.ConfidentialExecutionRequestSchema))
}
