package contract

import "github.com/agentrt/agentrt/schema"

// turnKinds lists the turn group's wire kinds; the group fills it in.
func turnKinds() []schema.Kind { return nil }
