package contract

import "github.com/agentrt/agentrt/schema"

// observationKinds lists the observation group's wire kinds: environment
// observation, usage, execution limits and confidential execution.
func observationKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindSafeEndpoint, Node: SafeEndpointSchema},
		{Name: KindEnvironmentObservation, Node: EnvironmentObservationSchema},
		{Name: KindExecutionLimitObservation, Node: ExecutionLimitObservationSchema},
		{Name: KindTokenUsage, Node: TokenUsageSchema},
		{Name: KindModelUsage, Node: ModelUsageSchema},
		{Name: KindConfidentialAttestation, Node: ConfidentialAttestationSchema},
		{Name: KindConfidentialExecutionRequest, Node: ConfidentialExecutionRequestSchema},
	}
}
