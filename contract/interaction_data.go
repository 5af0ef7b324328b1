package contract

import (
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of interaction answer data.
const (
	KindInteractionSecretReference = "InteractionSecretReference"
	KindInteractionData            = "InteractionData"
	KindInteractionResolution      = "InteractionResolution"
)

// InteractionSecretReferenceKind is the only kind of secret reference.
const InteractionSecretReferenceKind = "secret_handle"

// InteractionSecretReference stands in for a secret answer: a one-use
// handle the provider redeems, so the secret itself never travels in a
// response, journal or log.
type InteractionSecretReference struct {
	// Kind is always InteractionSecretReferenceKind.
	Kind     string `json:"kind"`
	HandleID string `json:"handleId"`
	// OneUse is always true.
	OneUse bool `json:"oneUse"`
}

// NewInteractionSecretReference returns the one-use reference to handle.
func NewInteractionSecretReference(handleID string) InteractionSecretReference {
	return InteractionSecretReference{Kind: InteractionSecretReferenceKind, HandleID: handleID, OneUse: true}
}

// InteractionDataValue is one answer value (or a field default). Exactly
// one member is set: Text (text and secret fields), Number, Boolean,
// Choices (select fields; non-nil, possibly empty) or Secret (a secret
// field answered by handle). The zero value is absent.
type InteractionDataValue struct {
	Text    *string
	Number  *float64
	Boolean *bool
	Choices []string
	Secret  *InteractionSecretReference
}

// TextAnswer returns a text (or secret) answer.
func TextAnswer(s string) InteractionDataValue { return InteractionDataValue{Text: &s} }

// NumberAnswer returns a number answer.
func NumberAnswer(f float64) InteractionDataValue { return InteractionDataValue{Number: &f} }

// BooleanAnswer returns a boolean answer.
func BooleanAnswer(b bool) InteractionDataValue { return InteractionDataValue{Boolean: &b} }

// ChoiceAnswer returns a select answer: the chosen option values (an
// empty selection when none are given).
func ChoiceAnswer(values ...string) InteractionDataValue {
	if values == nil {
		values = []string{}
	}
	return InteractionDataValue{Choices: values}
}

// SecretAnswer returns a secret answer given as a one-use handle.
func SecretAnswer(handleID string) InteractionDataValue {
	ref := NewInteractionSecretReference(handleID)
	return InteractionDataValue{Secret: &ref}
}

// MarshalValue implements canonjson.ValueMarshaler.
func (d InteractionDataValue) MarshalValue() (canonjson.Value, error) {
	var out canonjson.Value
	set := 0
	if d.Text != nil {
		out, set = canonjson.StringValue(*d.Text), set+1
	}
	if d.Number != nil {
		out, set = canonjson.NumberValue(*d.Number), set+1
	}
	if d.Boolean != nil {
		out, set = canonjson.BoolValue(*d.Boolean), set+1
	}
	if d.Choices != nil {
		items := make([]canonjson.Value, len(d.Choices))
		for i, c := range d.Choices {
			items[i] = canonjson.StringValue(c)
		}
		out, set = canonjson.ArrayValue(items), set+1
	}
	if d.Secret != nil {
		v, err := canonjson.ToValue(d.Secret)
		if err != nil {
			return canonjson.Value{}, err
		}
		out, set = v, set+1
	}
	if set > 1 {
		return canonjson.Value{}, errors.New("an interaction data value sets more than one member")
	}
	return out, nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (d *InteractionDataValue) UnmarshalValue(v canonjson.Value) error {
	*d = InteractionDataValue{}
	switch v.Kind() {
	case canonjson.String:
		s := v.Str()
		d.Text = &s
	case canonjson.Number:
		f := v.Float()
		d.Number = &f
	case canonjson.Bool:
		b := v.Bool()
		d.Boolean = &b
	case canonjson.Array:
		d.Choices = make([]string, v.Len())
		for i, item := range v.Items() {
			if item.Kind() != canonjson.String {
				return &canonjson.UnmarshalError{Pointer: "/" + canonjson.IndexToken(i), Reason: "expected string, got " + item.Kind().String()}
			}
			d.Choices[i] = item.Str()
		}
	case canonjson.Object:
		d.Secret = new(InteractionSecretReference)
		return canonjson.FromValue(v, d.Secret)
	default:
		return fmt.Errorf("an interaction data value cannot be %s", v.Kind())
	}
	return nil
}

// InteractionData holds answer values keyed by field name.
type InteractionData map[string]InteractionDataValue

// InteractionOutcome is how an interaction was resolved.
type InteractionOutcome string

// Interaction outcomes.
const (
	InteractionOutcomeAccepted  InteractionOutcome = "accepted"
	InteractionOutcomeDeclined  InteractionOutcome = "declined"
	InteractionOutcomeCancelled InteractionOutcome = "cancelled"
)

// InteractionResolution is an outcome with its answer data: a request's
// default. Only an accepted resolution carries answer fields.
type InteractionResolution struct {
	Outcome InteractionOutcome `json:"outcome"`
	Data    InteractionData    `json:"data,omitzero"`
}

var (
	intOutcomes = []string{string(InteractionOutcomeAccepted), string(InteractionOutcomeDeclined), string(InteractionOutcomeCancelled)}

	// InteractionSecretReferenceSchema is the InteractionSecretReference
	// shape.
	InteractionSecretReferenceSchema = schema.Object(
		schema.Req("kind", schema.LiteralString(InteractionSecretReferenceKind)),
		schema.Req("handleId", BoundedIdentifier),
		schema.Req("oneUse", schema.Literal(canonjson.BoolValue(true))),
	)

	intDataValueSchema = schema.Union(
		BoundedString,
		schema.Number(),
		schema.Bool(),
		schema.Array(BoundedString).MaxItems(MaxArrayLength),
		InteractionSecretReferenceSchema,
	)

	intDataRecord = schema.Refined(schema.Record(intDataValueSchema).Keys(InteractionFieldNameSchema), func(c *schema.Context, v canonjson.Value) {
		if v.Len() > MaxMapEntries {
			c.Custom("interaction data has too many fields")
		}
	})

	// InteractionDataSchema is the InteractionData shape: at most
	// MaxMapEntries answers keyed by field name. A reserved name (even
	// "__proto__") is refused rather than dropped, so the schema and
	// response validation refuse the same values.
	InteractionDataSchema schema.Node = schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if v.Kind() == canonjson.Object {
			reserved := false
			for _, m := range v.Members() {
				if IsReservedInteractionFieldName(m.Name) {
					c.Custom(`interaction field name "` + m.Name + `" is reserved`)
					reserved = true
				}
			}
			if reserved {
				return v
			}
		}
		return intDataRecord.Check(c, v)
	})

	// InteractionResolutionSchema is the InteractionResolution shape.
	InteractionResolutionSchema = schema.Discriminated("outcome", intOutcomeVariants())
)

// intOutcomeVariants returns one strict object per outcome, each with the
// given leading fields, the outcome literal and optional data.
func intOutcomeVariants(fields ...schema.Field) map[string]schema.Node {
	out := make(map[string]schema.Node, len(intOutcomes))
	for _, o := range intOutcomes {
		all := append(append([]schema.Field(nil), fields...),
			schema.Req("outcome", schema.LiteralString(o)),
			schema.Opt("data", InteractionDataSchema))
		out[o] = schema.Object(all...)
	}
	return out
}

// ParseInteractionSecretReference decodes and validates a secret
// reference.
func ParseInteractionSecretReference(data []byte) (*InteractionSecretReference, error) {
	return Parse[InteractionSecretReference](KindInteractionSecretReference, InteractionSecretReferenceSchema, data)
}

// ParseInteractionData decodes and validates answer data.
func ParseInteractionData(data []byte) (InteractionData, error) {
	d, err := Parse[InteractionData](KindInteractionData, InteractionDataSchema, data)
	if err != nil {
		return nil, err
	}
	return *d, nil
}
