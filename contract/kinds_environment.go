package contract

import "github.com/agentrt/agentrt/schema"

// environmentKinds lists the environment group's wire kinds; the group fills it in.
func environmentKinds() []schema.Kind { return nil }
