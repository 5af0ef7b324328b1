package contract

import "github.com/agentrt/agentrt/schema"

// Kinds lists the wire kinds this package owns, for `agentrt check`. Each
// group of files contributes its own list.
func Kinds() []schema.Kind {
	var all []schema.Kind
	for _, group := range [][]schema.Kind{
		cwdKinds(),
		controlKinds(),
		interactionKinds(),
		observationKinds(),
		branchingKinds(),
		contextKinds(),
		continuationKinds(),
		environmentKinds(),
		turnKinds(),
		eventKinds(),
	} {
		all = append(all, group...)
	}
	return all
}
