package profile

import (
	"slices"

	"github.com/agentrt/agentrt/canonjson"
)

// Diff axes, as ChangedAxes reports them.
const (
	AxisIdentity = "identity"
)

// diffAxes are the top-level fields Diff compares one by one, besides
// identity (name, description, version) and tags.
var diffAxes = []string{"prompt", "model", "harness", "seats", "permissions", "tools", "mcp",
	"connections", "subagents", "resources", "hooks", "modes", "confidential", "metadata", "extensions"}

var resourceAxes = []string{"files", "tools", "skills", "agents", "commands", "instructions", "failOnError"}

// Diffs returns the diffs that turn baseline into candidate: nothing when
// their canonical forms are equal; otherwise a removal of every changed
// axis followed, when candidate sets any of them, by a diff setting
// candidate's values. Resources are compared per collection, telling an
// absent resources object from an empty one.
func Diffs(baseline, candidate *Profile) ([]Diff, error) {
	a, err := canonjson.ToValue(nonNil(baseline))
	if err != nil {
		return nil, err
	}
	b, err := canonjson.ToValue(nonNil(candidate))
	if err != nil {
		return nil, err
	}
	var removeMembers, setMembers []canonjson.Member

	changed := func(name string) bool { return differs(field(a, name), field(b, name)) }
	if changed("name") || changed("description") || changed("version") {
		removeMembers = append(removeMembers, canonjson.Member{Name: "identity", Value: canonjson.BoolValue(true)})
		for _, name := range []string{"name", "description", "version"} {
			if v, ok := b.Get(name); ok {
				setMembers = append(setMembers, canonjson.Member{Name: name, Value: v})
			}
		}
	}
	if changed("tags") {
		removeMembers = append(removeMembers, canonjson.Member{Name: "tags", Value: canonjson.BoolValue(true)})
		if v, ok := b.Get("tags"); ok {
			setMembers = append(setMembers, canonjson.Member{Name: "tags", Value: v})
		}
	}
	for _, axis := range diffAxes {
		if axis == "resources" {
			rm, set, ok := diffResources(field(a, axis), field(b, axis))
			if ok {
				removeMembers = append(removeMembers, canonjson.Member{Name: axis, Value: rm})
				if set.IsValid() {
					setMembers = append(setMembers, canonjson.Member{Name: axis, Value: set})
				}
			}
			continue
		}
		if !changed(axis) {
			continue
		}
		removeMembers = append(removeMembers, canonjson.Member{Name: axis, Value: canonjson.BoolValue(true)})
		if v, ok := b.Get(axis); ok {
			setMembers = append(setMembers, canonjson.Member{Name: axis, Value: v})
		}
	}
	if len(removeMembers) == 0 {
		return nil, nil
	}
	remove := canonjson.ObjectValue(removeMembers)
	var out []Diff
	reset := Diff{Kind: DiffKind, Remove: new(Removal)}
	if err := canonjson.FromValue(remove, reset.Remove); err != nil {
		return nil, err
	}
	out = append(out, reset)
	if len(setMembers) > 0 {
		set := Diff{Kind: DiffKind, Set: new(Profile)}
		if err := canonjson.FromValue(canonjson.ObjectValue(setMembers), set.Set); err != nil {
			return nil, err
		}
		out = append(out, set)
	}
	return out, nil
}

func nonNil(p *Profile) *Profile {
	if p == nil {
		return &Profile{}
	}
	return p
}

func field(v canonjson.Value, name string) canonjson.Value {
	f, _ := v.Get(name)
	return f
}

// differs compares two possibly absent values by canonical JSON.
func differs(a, b canonjson.Value) bool {
	if a.IsValid() != b.IsValid() {
		return true
	}
	if !a.IsValid() {
		return false
	}
	return !canonicalEqual(a, b)
}

// diffResources returns the resources removal and set values, and whether
// resources changed at all.
func diffResources(a, b canonjson.Value) (remove, set canonjson.Value, changed bool) {
	if !differs(a, b) {
		return canonjson.Value{}, canonjson.Value{}, false
	}
	var rm, st []canonjson.Member
	for _, axis := range resourceAxes {
		if !differs(field(a, axis), field(b, axis)) {
			continue
		}
		rm = append(rm, canonjson.Member{Name: axis, Value: canonjson.BoolValue(true)})
		if v, ok := b.Get(axis); ok {
			st = append(st, canonjson.Member{Name: axis, Value: v})
		}
	}
	if len(rm) == 0 {
		// Only presence differs: an absent resources object versus {}.
		return canonjson.BoolValue(true), b, true
	}
	if len(st) > 0 || b.IsValid() && b.Len() == 0 {
		set = canonjson.ObjectValue(st)
	}
	return canonjson.ObjectValue(rm), set, true
}

// ApplyDiff merges d.Set into base and then applies d.Remove. Removing from
// a record deletes keys; from a list, filters values; containers left empty
// are deleted, never kept as empty placeholders.
func ApplyDiff(base *Profile, d *Diff) *Profile {
	next := Merge(base, d.Set)
	if next == nil {
		next = &Profile{}
	}
	r := d.Remove
	if r == nil {
		return next
	}
	if r.Identity {
		next.Name, next.Description, next.Version = nil, nil, nil
	}
	if r.Tags != nil {
		next.Tags = removeValues(next.Tags, r.Tags)
	}
	if r.Prompt != nil && next.Prompt != nil {
		if r.Prompt.All {
			next.Prompt = nil
		} else {
			p := *next.Prompt
			if r.Prompt.SystemPrompt {
				p.SystemPrompt = nil
			}
			if r.Prompt.AppendSystemPrompt {
				p.AppendSystemPrompt = nil
			}
			p.Instructions = removeValues(p.Instructions, r.Prompt.Instructions)
			next.Prompt = &p
			if p.SystemPrompt == nil && p.AppendSystemPrompt == nil && p.Instructions == nil {
				next.Prompt = nil
			}
		}
	}
	if r.Model != nil && next.Model != nil {
		next.Model = removeModelKeys(next.Model, r.Model)
	}
	if r.Harness {
		next.Harness = ""
	}
	if r.Seats {
		next.Seats = nil
	}
	next.Permissions = removeKeys(next.Permissions, r.Permissions)
	next.Tools = removeKeys(next.Tools, r.Tools)
	next.MCP = removeKeys(next.MCP, r.MCP)
	next.Subagents = removeKeys(next.Subagents, r.Subagents)
	if r.Resources != nil {
		next.Resources = removeResources(next.Resources, r.Resources)
	}
	next.Hooks = removeKeys(next.Hooks, r.Hooks)
	next.Modes = removeKeys(next.Modes, r.Modes)
	if r.Confidential {
		next.Confidential = nil
	}
	next.Metadata = removeKeys(next.Metadata, r.Metadata)
	next.Extensions = removeKeys(next.Extensions, r.Extensions)
	if next.Connections != nil && r.Connections != nil {
		if r.Connections.All {
			next.Connections = nil
		} else {
			next.Connections = slices.DeleteFunc(next.Connections, func(c Connection) bool {
				return slices.Contains(r.Connections.Names, c.ConnectionID) ||
					c.Alias != nil && slices.Contains(r.Connections.Names, *c.Alias)
			})
			if len(next.Connections) == 0 {
				next.Connections = nil
			}
		}
	}
	return next
}

func removeValues(values []string, r *RemoveList) []string {
	if values == nil || r == nil {
		return values
	}
	if r.All {
		return nil
	}
	out := slices.DeleteFunc(slices.Clone(values), func(v string) bool { return slices.Contains(r.Names, v) })
	if len(out) == 0 {
		return nil
	}
	return out
}

func removeKeys[M ~map[string]V, V any](m M, r *RemoveList) M {
	if m == nil || r == nil {
		return m
	}
	if r.All {
		return nil
	}
	for _, name := range r.Names {
		delete(m, name)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// removeModelKeys deletes model hint members by name.
func removeModelKeys(m *ModelHints, r *RemoveList) *ModelHints {
	if r.All {
		return nil
	}
	v, err := canonjson.ToValue(m)
	if err != nil {
		return m
	}
	var kept []canonjson.Member
	for _, mem := range v.Members() {
		if !slices.Contains(r.Names, mem.Name) {
			kept = append(kept, mem)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out := new(ModelHints)
	if err := canonjson.FromValue(canonjson.ObjectValue(kept), out); err != nil {
		return m
	}
	return out
}

// ResourceName is the name a removal matches a resource reference by: its
// name, or for a GitHub reference without one, its path.
func ResourceName(r ResourceRef) string {
	if r.Name != nil {
		return *r.Name
	}
	if r.Kind == ResourceGitHub && r.Path != nil {
		return *r.Path
	}
	return ""
}

func removeRefs(refs []ResourceRef, r *RemoveList) []ResourceRef {
	if refs == nil || r == nil {
		return refs
	}
	if r.All {
		return nil
	}
	out := slices.DeleteFunc(slices.Clone(refs), func(ref ResourceRef) bool {
		name := ResourceName(ref)
		return name != "" && slices.Contains(r.Names, name)
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

func removeResources(res *Resources, r *ResourceRemoval) *Resources {
	if res == nil {
		return nil
	}
	if r.All {
		return nil
	}
	next := *res
	if r.Files != nil {
		if r.Files.All {
			next.Files = nil
		} else {
			next.Files = slices.DeleteFunc(slices.Clone(next.Files), func(f FileMount) bool {
				name := ResourceName(f.Resource)
				return slices.Contains(r.Files.Names, f.Path) || name != "" && slices.Contains(r.Files.Names, name)
			})
		}
	}
	next.Tools = removeRefs(next.Tools, r.Tools)
	next.Skills = removeRefs(next.Skills, r.Skills)
	next.Agents = removeRefs(next.Agents, r.Agents)
	next.Commands = removeRefs(next.Commands, r.Commands)
	if r.Instructions {
		next.Instructions = nil
	}
	if r.FailOnError {
		next.FailOnError = nil
	}
	for _, s := range []*[]ResourceRef{&next.Tools, &next.Skills, &next.Agents, &next.Commands} {
		if *s != nil && len(*s) == 0 {
			*s = nil
		}
	}
	if next.Files != nil && len(next.Files) == 0 {
		next.Files = nil
	}
	if next.Files == nil && next.Tools == nil && next.Skills == nil && next.Agents == nil &&
		next.Commands == nil && next.Instructions == nil && next.FailOnError == nil {
		return nil
	}
	return &next
}

// ChangedAxes returns the sorted axes a diff sets or removes: "identity"
// (name, description, version, tags) and the top-level profile fields.
func ChangedAxes(d *Diff) []string {
	axes := map[string]bool{}
	if d.Set != nil {
		if v, err := canonjson.ToValue(d.Set); err == nil {
			for _, m := range v.Members() {
				switch m.Name {
				case "name", "description", "version", "tags":
					axes[AxisIdentity] = true
				default:
					axes[m.Name] = true
				}
			}
		}
	}
	if d.Remove != nil {
		if v, err := canonjson.ToValue(d.Remove); err == nil {
			for _, m := range v.Members() {
				if !removesSomething(m.Value) {
					continue
				}
				switch m.Name {
				case "identity", "tags":
					axes[AxisIdentity] = true
				default:
					axes[m.Name] = true
				}
			}
		}
	}
	out := make([]string, 0, len(axes))
	for a := range axes {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

func removesSomething(v canonjson.Value) bool {
	switch v.Kind() {
	case canonjson.Bool:
		return v.Bool()
	case canonjson.Array:
		return v.Len() > 0
	case canonjson.Object:
		for _, m := range v.Members() {
			if removesSomething(m.Value) {
				return true
			}
		}
	}
	return false
}
