package supervise

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/profile"
)

// namedModel is one model a profile names, with the JSON pointer (within
// the profile) of where it names it.
type namedModel struct {
	Pointer string
	Model   string
}

// modelsOf is every model p names: model.default and model.small, each
// seat's, each subagent's and each mode's — what AllowedModels holds a
// profile to (a model hidden in a subagent or a mode runs too). Map
// entries come in key order.
func modelsOf(p *profile.Profile) []namedModel {
	if p == nil {
		return nil
	}
	var out []namedModel
	add := func(ptr string, m *string) {
		if m != nil && *m != "" {
			out = append(out, namedModel{ptr, *m})
		}
	}
	if p.Model != nil {
		add("/model/default", p.Model.Default)
		add("/model/small", p.Model.Small)
	}
	for i, s := range p.Seats {
		add("/seats/"+strconv.Itoa(i)+"/model", &s.Model)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Subagents)) {
		add("/subagents/"+pointerToken(k)+"/model", p.Subagents[k].Model)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Modes)) {
		add("/modes/"+pointerToken(k)+"/model", p.Modes[k].Model)
	}
	return out
}

// ModelsOf is every model p names, in the order AllowedModels checks them
// (model.default, model.small, seats, subagents and modes, maps in key
// order), without repeats: the list a caller builds AllowedModels from
// when it means "the models these workers declare".
func ModelsOf(p *profile.Profile) []string {
	var out []string
	for _, m := range modelsOf(p) {
		if !slices.Contains(out, m.Model) {
			out = append(out, m.Model)
		}
	}
	return out
}

// disallowedModel returns the first model p names outside allowed (none
// when allowed is empty: AllowedModels unset is unrestricted).
func disallowedModel(p *profile.Profile, allowed []string) (namedModel, bool) {
	if len(allowed) == 0 {
		return namedModel{}, false
	}
	for _, m := range modelsOf(p) {
		if !slices.Contains(allowed, m.Model) {
			return m, true
		}
	}
	return namedModel{}, false
}

// pointerToken escapes a map key as one JSON-pointer token (RFC 6901).
func pointerToken(k string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(k) }
