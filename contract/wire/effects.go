package wire

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// PathEffects (GET) answers Effects: the served provider's own counts of
// its durable effects (admitted context transfers, fresh sessions,
// native continuations, …), for an operator or a conformance run that
// must prove a replay or a refusal over the wire dispatched nothing. It
// is served only for a provider that counts its effects; otherwise it is
// refused with CodeUnsupported.
const PathEffects = "/v1/effects"

// Effects is the served provider's effect counts, by name.
type Effects struct {
	Counts map[string]int64 `json:"counts"`
}

// KindEffects names Effects, for errors.
const KindEffects = "SidecarEffects"

// EffectsSchema is the strict Effects shape: non-negative integer counts
// under identifier names, within the contract bounds.
var EffectsSchema = schema.Object(schema.Req("counts", schema.Refined(
	schema.Record(schema.Number(schema.Int, schema.NonNegative)).Keys(contract.BoundedIdentifier),
	func(c *schema.Context, v canonjson.Value) {
		if !contract.IsBoundedJSON(v) {
			c.Custom("the counts exceed the contract bounds")
		}
	})))

// ParseEffects decodes an effects answer.
func ParseEffects(data []byte) (*Effects, error) {
	return parse[Effects](KindEffects, EffectsSchema, data)
}
