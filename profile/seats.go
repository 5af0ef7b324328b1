package profile

import (
	"fmt"
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/schema"
)

// checkSeats applies the seat-chain rules of seed 000 to a profile whose
// shape matched:
//
//  1. The first stage equals the top-level harness, model.provider and
//     model.default (a missing top-level value is unequal), so the initial
//     run cannot silently change its authored model.
//  2. Every stage's provider is the one its model resolves to, its harness
//     honors a model choice and can run the model at the profile's
//     reasoning effort, it can express that effort, and it owns every
//     system-prompt intent the profile carries.
//  3. A tools or permissions map on the first stage equals the top-level
//     map (compared canonically; absent is not {}).
func checkSeats(c *schema.Context, v canonjson.Value) {
	seats, ok := v.Get("seats")
	if !ok {
		return
	}
	model, _ := v.Get("model")
	effortValue, _ := model.Get("reasoningEffort")
	effort := harness.ReasoningEffort(effortValue.Str())
	prompt, _ := v.Get("prompt")
	_, wantsReplace := prompt.Get("systemPrompt")
	_, wantsAppend := prompt.Get("appendSystemPrompt")

	items := seats.Items()
	if len(items) == 0 {
		return // refused by the array's length check
	}
	first := items[0]
	if !sameString(v, "harness", first, "harness") || !sameString(model, "provider", first, "provider") ||
		!sameString(model, "default", first, "model") {
		c.Custom("the first seat must equal the profile's harness, model.provider and model.default", "seats", "0")
	}
	for i, seat := range items {
		idx := strconv.Itoa(i)
		h := harness.Type(member(seat, "harness"))
		provider := member(seat, "provider")
		modelID := member(seat, "model")
		if resolved, ok := harness.ResolveModelProvider(modelID); !ok || resolved != provider {
			c.Custom(fmt.Sprintf("seat provider %q is not the provider model %q resolves to", provider, modelID), "seats", idx, "provider")
		}
		if !harness.HonorsModel(h) {
			c.Custom(fmt.Sprintf("harness %s does not honor a model choice", h), "seats", idx, "harness")
		}
		if support := harness.CheckModelSupport(h, modelID, effort); !support.Supported {
			c.Custom(support.Message, "seats", idx, "model")
		}
		if effort != "" && (!harness.HonorsEffort(h) || !containsEffort(harness.ReasoningEfforts(h), effort)) {
			c.Custom(fmt.Sprintf("harness %s cannot express reasoning effort %q", h, effort), "seats", idx, "harness")
		}
		intents := harness.PromptIntents(h)
		if wantsReplace && !intents.Replace {
			c.Custom(fmt.Sprintf("harness %s cannot replace its system prompt, and the profile sets prompt.systemPrompt", h), "seats", idx, "harness")
		}
		if wantsAppend && !intents.Append {
			c.Custom(fmt.Sprintf("harness %s cannot append to its system prompt, and the profile sets prompt.appendSystemPrompt", h), "seats", idx, "harness")
		}
	}
	for _, name := range []string{"tools", "permissions"} {
		stageMap, ok := first.Get(name)
		if !ok {
			continue
		}
		top, ok := v.Get(name)
		if !ok || !canonicalEqual(stageMap, top) {
			c.Custom("the first seat's "+name+" map must equal the profile's "+name+" map", "seats", "0", name)
		}
	}
}

func member(v canonjson.Value, name string) string {
	m, _ := v.Get(name)
	return m.Str()
}

func sameString(a canonjson.Value, an string, b canonjson.Value, bn string) bool {
	x, ok := a.Get(an)
	if !ok || x.Kind() != canonjson.String {
		return false
	}
	y, ok := b.Get(bn)
	return ok && y.Kind() == canonjson.String && x.Str() == y.Str()
}

func containsEffort(efforts []harness.ReasoningEffort, e harness.ReasoningEffort) bool {
	for _, x := range efforts {
		if x == e {
			return true
		}
	}
	return false
}

// canonicalEqual compares two values by their canonical JSON; values
// without a canonical form are compared structurally.
func canonicalEqual(a, b canonjson.Value) bool {
	ca, errA := canonjson.Canonical(a)
	cb, errB := canonjson.Canonical(b)
	if errA != nil || errB != nil {
		return canonjson.Equal(a, b)
	}
	return string(ca) == string(cb)
}

// Project returns the provider-facing profile for seat stage k of p (seed
// 000): a deep copy of p without seats whose harness, model.provider and
// model.default are the stage's; every other model hint is kept. A stage's
// tools or permissions map replaces the profile-level map wholesale; an
// explicit empty map removes it (the key is omitted); an absent stage map
// inherits the profile's. The authored profile p keeps its identity (its
// digest includes seats); the projection's digest is the effective one.
//
// For a profile without seats, Project(p, 0) is p itself (copied).
func Project(p *Profile, k int) (*Profile, error) {
	out, err := Clone(p)
	if err != nil {
		return nil, err
	}
	if len(p.Seats) == 0 {
		if k != 0 {
			return nil, fmt.Errorf("profile has no seats; stage %d does not exist", k)
		}
		return out, nil
	}
	if k < 0 || k >= len(p.Seats) {
		return nil, fmt.Errorf("profile has %d seat stages; stage %d does not exist", len(p.Seats), k)
	}
	stage := out.Seats[k]
	out.Seats = nil
	out.Harness = stage.Harness
	if out.Model == nil {
		out.Model = &ModelHints{}
	}
	provider, model := stage.Provider, stage.Model
	out.Model.Provider, out.Model.Default = &provider, &model
	if stage.Tools != nil {
		out.Tools = nonEmpty(stage.Tools)
	}
	if stage.Permissions != nil {
		out.Permissions = nonEmpty(stage.Permissions)
	}
	return out, nil
}

func nonEmpty[M ~map[string]V, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}
