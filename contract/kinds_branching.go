package contract

import "github.com/agentrt/agentrt/schema"

// branchingKinds lists the branching group's wire kinds; the group fills it in.
func branchingKinds() []schema.Kind { return nil }
