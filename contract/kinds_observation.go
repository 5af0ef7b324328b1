package contract

import "github.com/agentrt/agentrt/schema"

// observationKinds lists the observation group's wire kinds; the group fills it in.
func observationKinds() []schema.Kind { return nil }
