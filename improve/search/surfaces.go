package search

import (
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
)

// The surfaces beyond prompt, tools, mcp and agent-profile (runtime §3.9:
// "prompt, skills, memory, tools, mcp, hooks, subagents, agent-profile,
// named components; code uses isolated git worktrees").
const (
	// SurfaceSkills is the profile's skill resources
	// (/resources/skills); with Options.Skills it is the content of one
	// named inline skill.
	SurfaceSkills Surface = "skills"
	// SurfaceMemory is the profile's project memory: the
	// AGENTS.md/CLAUDE.md-style instructions document it mounts
	// (/resources/instructions, text or a resource reference). An
	// AgentProfile has no other memory member (spec profile §A).
	SurfaceMemory Surface = "memory"
	// SurfaceHooks is the profile's hooks map (/hooks). Hooks run
	// commands: every candidate with one, and a baseline with one, runs
	// only when Options.AuthorizeSensitiveCandidate authorizes it.
	SurfaceHooks Surface = "hooks"
	// SurfaceSubagents is the profile's subagents map (/subagents).
	SurfaceSubagents Surface = "subagents"
	// SurfaceComponent is a named component of the profile the caller
	// reads and applies itself (Options.ProfileComponents); the method
	// sees the component's encoding as a JSON string.
	SurfaceComponent Surface = "profile-component"
	// SurfaceCode is a repository's code: a candidate is a git patch
	// against Options.Code's pinned commit, run in its own git worktree.
	SurfaceCode Surface = "code"
)

// profileSurfaces maps each surface that is a member of the profile to
// its JSON pointer tokens ("" for the whole profile is the empty path).
var profileSurfaces = map[Surface][]string{
	SurfacePrompt:       {"prompt"},
	SurfaceTools:        {"tools"},
	SurfaceMCP:          {"mcp"},
	SurfaceHooks:        {"hooks"},
	SurfaceSubagents:    {"subagents"},
	SurfaceSkills:       {"resources", "skills"},
	SurfaceMemory:       {"resources", "instructions"},
	SurfaceAgentProfile: {},
}

// activationSurfaces maps each search surface to the improvement surface
// of the activation contract (candidate.ImprovementSurfaces) that an
// activation of its candidate targets: the surface the candidate's
// proposal names (candidate.ChangedSurfaces of its diffs). Memory is the
// profile's resources.instructions, which the reference's profile change
// rule counts as agent-profile (the contract's memory surface names a
// memory store outside the profile, which no profile search changes); a
// named component is a part of the profile only the caller can cut out,
// so activating it replaces the agent profile.
var activationSurfaces = map[Surface]string{
	SurfacePrompt:       "prompt",
	SurfaceSkills:       "skills",
	SurfaceMemory:       "agent-profile",
	SurfaceTools:        "tools",
	SurfaceMCP:          "mcp",
	SurfaceHooks:        "hooks",
	SurfaceSubagents:    "subagents",
	SurfaceAgentProfile: "agent-profile",
	SurfaceComponent:    "agent-profile",
	SurfaceCode:         "code",
}

// ActivationSurface returns the improvement surface of the activation
// contract (one of candidate.ImprovementSurfaces) that an activation of a
// candidate of s targets, and false for an unknown surface. For a profile
// surface it is the surface the candidate's Proposal names; a code
// candidate is a code state of a candidate bundle (surface code), not a
// profile proposal.
func (s Surface) ActivationSurface() (string, bool) {
	a, ok := activationSurfaces[s]
	if !ok || !slices.Contains(candidate.ImprovementSurfaces(), a) {
		return "", false
	}
	return a, true
}

// Skills narrows the skills surface to one skill (runtime §3.9
// skills?{resourceName}).
type Skills struct {
	// ResourceName names an inline skill of the base profile's
	// resources.skills; the surface is then that skill's content (a JSON
	// string), and a candidate replaces that content only.
	ResourceName string
}

// checkSurface refuses a surface Improve does not know, or one whose
// options are missing or contradictory.
func checkSurface(o *Options) error {
	bad := func(path, format string, args ...any) error {
		return &OptionsError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if _, ok := o.Surface.ActivationSurface(); !ok {
		return bad("/surface", "%q is not a surface; use one of %v", o.Surface, Surfaces())
	}
	if o.Skills != nil {
		if o.Surface != SurfaceSkills {
			return bad("/skills", "skills.resourceName narrows the skills surface, not %s", o.Surface)
		}
		if o.Skills.ResourceName == "" {
			return bad("/skills/resourceName", "name the inline skill to search")
		}
	}
	if o.ProfileComponents != nil && o.Surface != SurfaceComponent {
		return bad("/profileComponents", "profile components are searched with surface %s, not %s", SurfaceComponent, o.Surface)
	}
	if o.Code != nil && o.Surface != SurfaceCode {
		return bad("/code", "a code repository is searched with surface %s, not %s", SurfaceCode, o.Surface)
	}
	switch o.Surface {
	case SurfaceComponent:
		return checkComponents(o.ProfileComponents)
	case SurfaceCode:
		return checkCode(o)
	}
	return nil
}

// surfaceRecipe is what the surface's options add to the recipe identity
// (the absent Value when nothing).
func surfaceRecipe(o *Options) canonjson.Value {
	var members []canonjson.Member
	if o.Skills != nil {
		members = append(members, canonjson.Member{Name: "skillsResourceName", Value: canonjson.StringValue(o.Skills.ResourceName)})
	}
	if c := o.ProfileComponents; c != nil {
		members = append(members,
			canonjson.Member{Name: "component", Value: canonjson.StringValue(c.Name)},
			canonjson.Member{Name: "componentEncoding", Value: canonjson.StringValue(c.encoding())})
	}
	if c := o.Code; c != nil {
		members = append(members, canonjson.Member{Name: "codeCommit", Value: canonjson.StringValue(c.Commit)})
	}
	if members == nil {
		return canonjson.Value{}
	}
	return canonjson.ObjectValue(members)
}

// extractSurface returns the base's current value of the searched
// surface (the absent Value when the base omits it).
func (r *run) extractSurface() (canonjson.Value, error) {
	switch r.o.Surface {
	case SurfaceComponent:
		return r.readComponent(r.base)
	case SurfaceCode:
		return canonjson.StringValue(""), nil
	}
	v := valueAt(r.baseValue, profileSurfaces[r.o.Surface])
	if s := r.o.Skills; s != nil {
		i, err := namedSkill(v, s.ResourceName)
		if err != nil {
			return canonjson.Value{}, err
		}
		return member(v.Items()[i], "content"), nil
	}
	return v, nil
}

// replaceSurface returns the base profile value with the searched
// surface set to v (removed when v is absent).
func (r *run) replaceSurface(v canonjson.Value) (canonjson.Value, error) {
	path := profileSurfaces[r.o.Surface]
	if s := r.o.Skills; s != nil {
		if v.Kind() != canonjson.String {
			return canonjson.Value{}, fmt.Errorf("the content of skill %q must be a JSON string, not %s", s.ResourceName, kindName(v))
		}
		skills := valueAt(r.baseValue, path)
		i, err := namedSkill(skills, s.ResourceName)
		if err != nil {
			return canonjson.Value{}, err
		}
		items := slices.Clone(skills.Items())
		items[i] = items[i].With("content", v)
		v = canonjson.ArrayValue(items)
	}
	return valueWith(r.baseValue, path, v), nil
}

// namedSkill returns the index of the inline skill named name in a
// resources.skills array.
func namedSkill(skills canonjson.Value, name string) (int, error) {
	for i, ref := range skills.Items() {
		if profile.ResourceName(resourceRefOf(ref)) != name {
			continue
		}
		if member(ref, "kind").Str() != profile.ResourceInline {
			return 0, &OptionsError{Path: "/skills/resourceName", Reason: fmt.Sprintf("skill %q is not inline: only an inline skill's content can be searched", name)}
		}
		return i, nil
	}
	return 0, &OptionsError{Path: "/skills/resourceName", Reason: fmt.Sprintf("the base profile has no skill named %q in resources.skills", name)}
}

// resourceRefOf decodes a resource reference value (a zero ref when it is
// not one).
func resourceRefOf(v canonjson.Value) profile.ResourceRef {
	var ref profile.ResourceRef
	if canonjson.FromValue(v, &ref) != nil {
		return profile.ResourceRef{}
	}
	return ref
}

// valueAt returns the value at path in v, absent when any step is.
func valueAt(v canonjson.Value, path []string) canonjson.Value {
	for _, name := range path {
		next, ok := v.Get(name)
		if !ok {
			return canonjson.Value{}
		}
		v = next
	}
	return v
}

// valueWith returns v with the member at path set to m (removed when m is
// absent); an object on the way that the removal empties, and that v did
// not hold empty, is removed too, so a removal gives the profile without
// the surface rather than an empty shell.
func valueWith(v canonjson.Value, path []string, m canonjson.Value) canonjson.Value {
	if len(path) == 0 {
		return m
	}
	parent, had := v.Get(path[0])
	if len(path) > 1 {
		m = valueWith(parent, path[1:], m)
		if m.IsValid() && m.Len() == 0 && m.Kind() == canonjson.Object && !(had && parent.Len() == 0) {
			m = canonjson.Value{}
		}
	}
	if !m.IsValid() {
		return v.Without(path[0])
	}
	return v.With(path[0], m)
}

func kindName(v canonjson.Value) string {
	switch v.Kind() {
	case canonjson.Invalid:
		return "absent"
	case canonjson.Null:
		return "null"
	case canonjson.Bool:
		return "a boolean"
	case canonjson.Number:
		return "a number"
	case canonjson.String:
		return "a string"
	case canonjson.Array:
		return "an array"
	}
	return "an object"
}
