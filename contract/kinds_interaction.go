package contract

import "github.com/agentrt/agentrt/schema"

// interactionKinds lists the interaction group's wire kinds: posture,
// answer fields, requests, responses and their envelopes, capabilities,
// and the durable plan shapes.
func interactionKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindRequestedInteractions, Node: RequestedInteractionsSchema},
		{Name: KindInteractionFieldName, Node: InteractionFieldNameSchema},
		{Name: KindInteractionField, Node: InteractionFieldSchema},
		{Name: KindInteractionAnswerSpec, Node: InteractionAnswerSpecSchema},
		{Name: KindInteractionCapabilities, Node: InteractionCapabilitiesSchema},
		{Name: KindPermissionGrant, Node: PermissionGrantSchema},
		{Name: KindInteractionSecretReference, Node: InteractionSecretReferenceSchema},
		{Name: KindInteractionData, Node: InteractionDataSchema},
		{Name: KindInteractionResolution, Node: InteractionResolutionSchema},
		{Name: KindInteractionSubject, Node: InteractionSubjectSchema},
		{Name: KindInteractionRequestBinding, Node: InteractionRequestBindingSchema},
		{Name: KindInteractionExecutionBinding, Node: InteractionExecutionBindingSchema},
		{Name: KindInteractionBinding, Node: InteractionBindingSchema},
		{Name: KindInteractionRequest, Node: InteractionRequestSchema},
		{Name: KindInteractionResponse, Node: InteractionResponseSchema},
		{Name: KindInteractionResponseCommand, Node: InteractionResponseCommandSchema},
		{Name: KindInteractionAcknowledgement, Node: InteractionAcknowledgementSchema},
		{Name: KindPlanProviderState, Node: PlanProviderStateSchema},
		{Name: KindDurablePlan, Node: DurablePlanSchema},
		{Name: KindPlanSubmission, Node: PlanSubmissionSchema},
		{Name: KindPlanDecision, Node: PlanDecisionSchema},
		{Name: KindPlanContinuation, Node: PlanContinuationSchema},
		{Name: KindAgentExecutionOutcome, Node: AgentExecutionOutcomeSchema},
	}
}
