package contract

import "github.com/agentrt/agentrt/schema"

// interactionKinds lists the interaction group's wire kinds; the group fills it in.
func interactionKinds() []schema.Kind { return nil }
