package contract

import "github.com/agentrt/agentrt/schema"

// eventKinds lists the event group's wire kinds; the group fills it in.
func eventKinds() []schema.Kind { return nil }
