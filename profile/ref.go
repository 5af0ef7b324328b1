package profile

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Ref is an AgentProfileRef: an inline profile or the id of a profile in a
// provider's catalog. Exactly one of Inline and CatalogID is set.
type Ref struct {
	Inline    *Profile
	CatalogID string
}

// MarshalValue implements canonjson.ValueMarshaler.
func (r Ref) MarshalValue() (canonjson.Value, error) {
	if r.Inline != nil {
		return canonjson.ToValue(r.Inline)
	}
	return canonjson.StringValue(r.CatalogID), nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (r *Ref) UnmarshalValue(v canonjson.Value) error {
	*r = Ref{}
	if v.Kind() == canonjson.String {
		r.CatalogID = v.Str()
		return nil
	}
	r.Inline = new(Profile)
	return canonjson.FromValue(v, r.Inline)
}

// RefSchema accepts an inline AgentProfile or a catalog id string.
var RefSchema = schema.Union(schema.String(), Schema)
