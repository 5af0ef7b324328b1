package contract

import "github.com/agentrt/agentrt/schema"

// contextKinds lists the wire kinds of message parts, backend messages and
// portable context transfer (Interface 5).
func contextKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindInputPart, Node: InputPartSchema},
		{Name: KindBackendMessage, Node: BackendMessageSchema},
		{Name: KindPortableConversationContext, Node: PortableConversationContextSchema},
		{Name: KindPortableContextDestination, Node: PortableContextDestinationSchema},
		{Name: KindPortableContextPartPlan, Node: PortableContextPartPlanSchema},
		{Name: KindPortableContextMessagePlan, Node: PortableContextMessagePlanSchema},
		{Name: KindPortableContextPlan, Node: PortableContextPlanSchema},
		{Name: KindPortableContextPlanRequest, Node: PortableContextPlanRequestSchema},
		{Name: KindPortableContextPlanResult, Node: PortableContextPlanResultSchema},
		{Name: KindPortableContextTransferPlan, Node: PortableContextTransferPlanSchema},
		{Name: KindContextPlanAcceptance, Node: ContextPlanAcceptanceSchema},
		{Name: KindContextTransferRequest, Node: ContextTransferRequestSchema},
		{Name: KindContextTransferReceipt, Node: ContextTransferReceiptSchema},
		{Name: KindContextTransferResult, Node: ContextTransferResultSchema},
	}
}
