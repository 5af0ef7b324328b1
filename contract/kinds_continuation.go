package contract

import "github.com/agentrt/agentrt/schema"

// continuationKinds lists the continuation group's wire kinds; the group fills it in.
func continuationKinds() []schema.Kind { return nil }
