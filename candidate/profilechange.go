package candidate

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

var (
	// ProfileChangeStepSchema is AgentProfileImprovementChangeStep: one
	// strict profile diff that changes the profile, whose resource
	// patches carry inline content (the measured bytes).
	ProfileChangeStepSchema = profile.DiffSchema.Refine(checkChangeStep)

	// ProfileChangeSchema is AgentProfileImprovementChange: a non-empty
	// ordered list of change steps that together alter at least one
	// improvement surface.
	ProfileChangeSchema = schema.Refined(nonEmptyTuple(ProfileChangeStepSchema), func(c *schema.Context, v canonjson.Value) {
		if len(changedSurfaces(v.Items())) == 0 {
			c.Custom("profile improvement change must alter at least one supported surface")
		}
	})
)

// profileSurfaceOrder is the order changed surfaces are reported in.
var profileSurfaceOrder = []string{"prompt", "skills", "tools", "mcp", "hooks", "subagents", "agent-profile"}

// ChangedSurfaces returns the improvement surfaces a profile change
// alters, in the reference's order (prompt, skills, tools, mcp, hooks,
// subagents, agent-profile). Resource collections count as their own
// surface (skills, tools; agents as subagents); every other changed axis
// counts as agent-profile. A proposal's changedSurfaces must equal it.
func ChangedSurfaces(change []profile.Diff) ([]string, error) {
	v, err := valueOf(change)
	if err != nil {
		return nil, err
	}
	return changedSurfaces(v.Items()), nil
}

func changedSurfaces(steps []canonjson.Value) []string {
	found := map[string]bool{}
	for _, step := range steps {
		var d profile.Diff
		if canonjson.FromValue(step, &d) != nil {
			continue
		}
		for _, axis := range profile.ChangedAxes(&d) {
			switch axis {
			case "prompt", "tools", "mcp", "hooks", "subagents":
				found[axis] = true
			case "resources":
				resourceSurfaces(step, found)
			default:
				found["agent-profile"] = true
			}
		}
	}
	var out []string
	for _, s := range profileSurfaceOrder {
		if found[s] {
			out = append(out, s)
		}
	}
	return out
}

// resourceSurfaces adds the surfaces a step's resource set and removal
// touch: skills and tools as themselves, agents as subagents, anything
// else (and an empty resource set) as agent-profile.
func resourceSurfaces(step canonjson.Value, found map[string]bool) {
	add := func(key string) {
		switch key {
		case "skills", "tools":
			found[key] = true
		case "agents":
			found["subagents"] = true
		default:
			found["agent-profile"] = true
		}
	}
	if set, ok := at(step, "set").Get("resources"); ok {
		for _, m := range set.Members() {
			add(m.Name)
		}
		if len(set.Members()) == 0 {
			found["agent-profile"] = true
		}
	}
	remove, ok := at(step, "remove").Get("resources")
	if !ok {
		return
	}
	if remove.Kind() == canonjson.Bool && remove.Bool() {
		for _, s := range []string{"skills", "tools", "subagents", "agent-profile"} {
			found[s] = true
		}
		return
	}
	for _, m := range remove.Members() {
		if m.Value.Kind() == canonjson.Array && m.Value.Len() > 0 || m.Value.Kind() == canonjson.Bool && m.Value.Bool() {
			add(m.Name)
		}
	}
}

// checkChangeStep refuses a step that changes nothing and resource
// patches that are not inline content.
func checkChangeStep(c *schema.Context, v canonjson.Value) {
	if len(changedSurfaces([]canonjson.Value{v})) == 0 {
		c.Custom("profile improvement patch must change the agent profile")
	}
	resources, ok := at(v, "set").Get("resources")
	if !ok {
		return
	}
	const message = "measured profile resource patches require inline content with exact bytes"
	for _, group := range []string{"files", "tools", "skills", "agents", "commands"} {
		for i, ref := range at(resources, group).Items() {
			if group == "files" {
				ref = at(ref, "resource")
			}
			if member(ref, "kind") != "inline" {
				c.Custom(message, "set", "resources", group, canonjson.IndexToken(i))
			}
		}
	}
	if in, ok := resources.Get("instructions"); ok && in.Kind() == canonjson.Object && member(in, "kind") != "inline" {
		c.Custom(message, "set", "resources", "instructions")
	}
}
