package contract

import "github.com/agentrt/agentrt/schema"

// turnKinds lists the wire kinds of turns, their results and events, and
// the native continuation result.
func turnKinds() []schema.Kind {
	return []schema.Kind{
		{Name: KindTurnInput, Node: TurnInputSchema},
		{Name: KindTurnResult, Node: TurnResultSchema},
		{Name: KindEnvironmentEvent, Node: EnvironmentEventSchema},
		{Name: KindNativeContinuationResult, Node: NativeContinuationResultSchema},
	}
}
