package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Contract limits, applied before a value is hashed, copied or sent to a
// provider. Lengths count UTF-16 code units.
const (
	MaxStringLength     = 16384
	MaxIdentifierLength = 512
	MaxArrayLength      = 1024
	MaxMapEntries       = 256
	MaxJSONDepth        = 16
	MaxJSONBytes        = 1 << 20
	MaxJSONNodes        = 8192
)

var (
	// BoundedString is a string of at most MaxStringLength units.
	BoundedString = schema.String(schema.MaxLen(MaxStringLength))

	// BoundedIdentifier is 1..MaxIdentifierLength units with no outer
	// (JavaScript) whitespace.
	BoundedIdentifier = schema.String(schema.MaxLen(MaxStringLength), schema.MinLen(1), schema.MaxLen(MaxIdentifierLength),
		schema.Rule[string]{Code: schema.CodeCustom, Message: "an identifier cannot have outer whitespace", Test: func(s string) bool { return canonjson.TrimJS(s) == s }})

	// Digest is "sha256:" and 64 lowercase hex digits.
	Digest = schema.String(schema.Matches("must be sha256: followed by 64 lowercase hex digits", canonjson.IsDigest))

	// Timestamp is an ISO 8601 UTC timestamp (z.iso.datetime()).
	Timestamp = schema.String(schema.ISODateTime)

	// BoundedJSON is any JSON value within the contract bounds.
	BoundedJSON schema.Node = schema.Refined(schema.Any(), func(c *schema.Context, v canonjson.Value) {
		if !IsBoundedJSON(v) {
			c.Custom("value exceeds the contract bounds or is not finite JSON")
		}
	})

	// BoundedJSONRecord is a JSON object within the contract bounds. Its
	// members are kept as given, "__proto__" included.
	BoundedJSONRecord schema.Node = schema.Refined(schema.Any(), func(c *schema.Context, v canonjson.Value) {
		if v.Kind() != canonjson.Object || !IsBoundedJSON(v) {
			c.Custom("metadata exceeds the contract bounds or is not a JSON object")
		}
	})
)

// IsBoundedJSON reports whether v is finite JSON within the contract
// bounds: strings of at most MaxStringLength units, containers nested less
// than MaxJSONDepth deep (the root is depth 0), arrays of at most
// MaxArrayLength items, objects of at most MaxMapEntries members whose
// names are at most MaxIdentifierLength units, and at most MaxJSONNodes
// nodes, where (as in the reference) a container counts twice: once on
// entry and once on leaving.
func IsBoundedJSON(v canonjson.Value) bool {
	nodes := 0
	return boundedWalk(v, 0, &nodes)
}

func boundedWalk(v canonjson.Value, depth int, nodes *int) bool {
	*nodes++
	if *nodes > MaxJSONNodes {
		return false
	}
	switch v.Kind() {
	case canonjson.Null, canonjson.Bool:
		return true
	case canonjson.String:
		return canonjson.UTF16Len(v.Str()) <= MaxStringLength
	case canonjson.Number:
		return canonjson.IsFinite(v.Float())
	case canonjson.Array:
		if depth >= MaxJSONDepth || v.Len() > MaxArrayLength {
			return false
		}
		for _, item := range v.Items() {
			if !boundedWalk(item, depth+1, nodes) {
				return false
			}
		}
	case canonjson.Object:
		if depth >= MaxJSONDepth || v.Len() > MaxMapEntries {
			return false
		}
		for _, m := range v.Members() {
			if canonjson.UTF16Len(m.Name) > MaxIdentifierLength || !boundedWalk(m.Value, depth+1, nodes) {
				return false
			}
		}
	default:
		return false
	}
	*nodes++ // leaving the container
	return *nodes <= MaxJSONNodes
}
