package contract

import "github.com/agentrt/agentrt/schema"

// contextKinds lists the context group's wire kinds; the group fills it in.
func contextKinds() []schema.Kind { return nil }
