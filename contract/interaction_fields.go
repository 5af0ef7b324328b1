package contract

import (
	"fmt"
	"math"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind names of interaction posture, answer fields and capabilities.
const (
	KindRequestedInteractions   = "RequestedInteractions"
	KindInteractionFieldName    = "InteractionFieldName"
	KindInteractionField        = "InteractionField"
	KindInteractionAnswerSpec   = "InteractionAnswerSpec"
	KindInteractionCapabilities = "InteractionCapabilities"
	KindPermissionGrant         = "PermissionGrant"
)

// Well-known interaction kinds. Their meaning is the same on every
// provider; a provider's own kinds are namespaced ("vendor.kind").
const (
	// InteractionKindQuestion asks the user to answer or choose; the answer
	// is the chosen field values.
	InteractionKindQuestion = "question"
	// InteractionKindPermission asks for approval to run a tool or command;
	// the answer is a PermissionGrant in the "grant" field.
	InteractionKindPermission = "permission"
	// InteractionKindPlan shares a plan for review or approval.
	InteractionKindPlan = "plan"
)

// IsWellKnownInteractionKind reports whether kind is question, permission
// or plan.
func IsWellKnownInteractionKind(kind string) bool {
	return kind == InteractionKindQuestion || kind == InteractionKindPermission || kind == InteractionKindPlan
}

// IsNamespacedInteractionKind reports whether kind is a provider's own
// interaction kind: dotted, with no empty segment.
func IsNamespacedInteractionKind(kind string) bool {
	return strings.Contains(kind, ".") && !strings.HasPrefix(kind, ".") && !strings.HasSuffix(kind, ".") && !strings.Contains(kind, "..")
}

// RequestedInteractions is the bounded per-turn interaction posture: which
// interaction kinds (well-known or namespaced) a provider may originate
// during one turn. An omitted (nil) posture leaves the provider's defaults
// unchanged; a present posture enables exactly the kinds mapped to true,
// so an empty one enables none.
type RequestedInteractions map[string]bool

// Allows reports whether a turn carrying posture p may originate kind.
// providerDefault answers for an omitted (nil) posture.
func (p RequestedInteractions) Allows(kind string, providerDefault bool) bool {
	if p == nil {
		return providerDefault
	}
	return p[kind]
}

var (
	intRequestedKindKey = schema.Refined(BoundedIdentifier, func(c *schema.Context, v canonjson.Value) {
		if k := v.Str(); !IsWellKnownInteractionKind(k) && !IsNamespacedInteractionKind(k) {
			c.Custom("a provider's own interaction kind must be namespaced (vendor.kind)")
		}
	})

	// RequestedInteractionsSchema is the RequestedInteractions shape: at
	// most MaxMapEntries kinds, each well-known or namespaced, mapped to a
	// boolean.
	RequestedInteractionsSchema = schema.Refined(schema.Record(schema.Bool()).Keys(intRequestedKindKey), func(c *schema.Context, v canonjson.Value) {
		if v.Len() > MaxMapEntries {
			c.Custom(fmt.Sprintf("interaction posture exceeds %d kinds", MaxMapEntries))
		}
	})
)

// ParseRequestedInteractions decodes and validates an interaction posture.
func ParseRequestedInteractions(data []byte) (RequestedInteractions, error) {
	p, err := Parse[RequestedInteractions](KindRequestedInteractions, RequestedInteractionsSchema, data)
	if err != nil {
		return nil, err
	}
	return *p, nil
}

// IsReservedInteractionFieldName reports whether name collides with
// object internals on the reference runtime ("__proto__", "constructor",
// "prototype"); such names are refused as field names and answer keys.
func IsReservedInteractionFieldName(name string) bool {
	return name == "__proto__" || name == "constructor" || name == "prototype"
}

// InteractionFieldType names the form control of an answer field.
type InteractionFieldType string

// Answer field types.
const (
	InteractionFieldTypeText    InteractionFieldType = "text"
	InteractionFieldTypeNumber  InteractionFieldType = "number"
	InteractionFieldTypeBoolean InteractionFieldType = "boolean"
	InteractionFieldTypeSelect  InteractionFieldType = "select"
	// InteractionFieldTypeSecret is text whose value is sensitive (a token
	// or key): masked when entered and never echoed or persisted.
	InteractionFieldTypeSecret InteractionFieldType = "secret"
)

// InteractionResponseScope is how far an accepted answer may be reused by
// an explicit policy: this interaction only, the session, or persistently.
type InteractionResponseScope string

// Response scopes.
const (
	ResponseScopeInteraction InteractionResponseScope = "interaction"
	ResponseScopeSession     InteractionResponseScope = "session"
	ResponseScopePersistent  InteractionResponseScope = "persistent"
)

// InteractionFieldOption is one choice of a select field.
type InteractionFieldOption struct {
	Value       string  `json:"value"`
	Label       string  `json:"label"`
	Description *string `json:"description,omitzero"`
}

// InteractionField is one field of an answer form. Type selects which of
// the optional members apply:
//
//   - text: Multiline, Placeholder, MaxLength, Default (Text);
//   - number: Min, Max, Default (Number);
//   - boolean: Default (Boolean);
//   - select: Options (required), Multi, AllowCustom, Default (Choices);
//   - secret: Placeholder, MaxLength (never a default).
//
// The answer to the field is returned under Name in the response data.
type InteractionField struct {
	Type     InteractionFieldType `json:"type"`
	Name     string               `json:"name"`
	Label    string               `json:"label"`
	Required *bool                `json:"required,omitzero"`

	Multiline   *bool   `json:"multiline,omitzero"`
	Placeholder *string `json:"placeholder,omitzero"`
	// MaxLength bounds the answer's length in UTF-16 code units.
	MaxLength *int     `json:"maxLength,omitzero"`
	Min       *float64 `json:"min,omitzero"`
	Max       *float64 `json:"max,omitzero"`

	Options []InteractionFieldOption `json:"options,omitzero"`
	// Multi lets the user pick more than one option.
	Multi *bool `json:"multi,omitzero"`
	// AllowCustom admits write-in values outside Options (still non-blank
	// strings).
	AllowCustom *bool `json:"allowCustom,omitzero"`

	// Default pre-fills the field; its JSON type follows Type.
	Default *InteractionDataValue `json:"default,omitzero"`
}

// InteractionAnswerSpec describes a valid answer: its fields, with unique
// names.
type InteractionAnswerSpec struct {
	Fields []InteractionField `json:"fields"`
}

// MarshalValue writes the spec, with a nil Fields as an empty list.
func (s InteractionAnswerSpec) MarshalValue() (canonjson.Value, error) {
	if s.Fields == nil {
		s.Fields = []InteractionField{}
	}
	type plain InteractionAnswerSpec
	return canonjson.ToValue(plain(s))
}

// InteractionCapabilities is a provider's negotiated interaction
// behaviour. An environment declares it only when it can both originate
// typed requests and answer them; its absence means interactions are
// unsupported.
type InteractionCapabilities struct {
	// Kinds lists the request kinds the provider can originate.
	Kinds            []string                   `json:"kinds"`
	AnswerFieldTypes []InteractionFieldType     `json:"answerFieldTypes"`
	ResponseScopes   []InteractionResponseScope `json:"responseScopes"`
	// SecretAnswers must agree with "secret" being among AnswerFieldTypes.
	SecretAnswers bool `json:"secretAnswers"`
	// ConcurrentRequests: more than one request may be outstanding.
	ConcurrentRequests bool `json:"concurrentRequests"`
	// Replay: outstanding requests are replayed to a reconnecting client.
	Replay bool `json:"replay"`
	// ResponseIdempotency: a repeated response command gets the same
	// acknowledgement.
	ResponseIdempotency bool `json:"responseIdempotency"`
}

var (
	intFieldTypes = []string{string(InteractionFieldTypeText), string(InteractionFieldTypeNumber),
		string(InteractionFieldTypeBoolean), string(InteractionFieldTypeSelect), string(InteractionFieldTypeSecret)}
	intResponseScopes = []string{string(ResponseScopeInteraction), string(ResponseScopeSession), string(ResponseScopePersistent)}

	// intLabel is a non-empty bounded string.
	intLabel = schema.String(schema.MaxLen(MaxStringLength), schema.MinLen(1))

	// InteractionFieldNameSchema is a field name: an identifier that is
	// not a reserved name.
	InteractionFieldNameSchema = schema.Refined(BoundedIdentifier, func(c *schema.Context, v canonjson.Value) {
		if IsReservedInteractionFieldName(v.Str()) {
			c.Custom("interaction field name is reserved")
		}
	})

	intAnswerMaxLength = intInteger(schema.Positive, schema.Max(MaxStringLength))

	intFieldOptionSchema = schema.Object(
		schema.Req("value", BoundedIdentifier),
		schema.Req("label", intLabel),
		schema.Opt("description", BoundedString),
	)

	// InteractionFieldSchema is the InteractionField shape with its
	// per-type default and bound rules.
	InteractionFieldSchema = schema.Refined(schema.Discriminated("type", map[string]schema.Node{
		string(InteractionFieldTypeText): intFieldVariant(InteractionFieldTypeText,
			schema.Opt("multiline", schema.Bool()),
			schema.Opt("placeholder", BoundedString),
			schema.Opt("maxLength", intAnswerMaxLength),
			schema.Opt("default", BoundedString)),
		string(InteractionFieldTypeNumber): intFieldVariant(InteractionFieldTypeNumber,
			schema.Opt("min", schema.Number()),
			schema.Opt("max", schema.Number()),
			schema.Opt("default", schema.Number())),
		string(InteractionFieldTypeBoolean): intFieldVariant(InteractionFieldTypeBoolean,
			schema.Opt("default", schema.Bool())),
		string(InteractionFieldTypeSelect): intFieldVariant(InteractionFieldTypeSelect,
			schema.Req("options", schema.Array(intFieldOptionSchema).MinItems(1).MaxItems(MaxArrayLength)),
			schema.Opt("multi", schema.Bool()),
			schema.Opt("allowCustom", schema.Bool()),
			schema.Opt("default", schema.Array(BoundedIdentifier).MaxItems(MaxArrayLength))),
		string(InteractionFieldTypeSecret): intFieldVariant(InteractionFieldTypeSecret,
			schema.Opt("placeholder", BoundedString),
			schema.Opt("maxLength", intAnswerMaxLength)),
	}), intCheckField)

	// InteractionAnswerSpecSchema is the InteractionAnswerSpec shape:
	// at most MaxArrayLength fields with unique names.
	InteractionAnswerSpecSchema = schema.Object(
		schema.Req("fields", schema.Array(InteractionFieldSchema).MaxItems(MaxArrayLength)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		fields, _ := v.Get("fields")
		names := make([]canonjson.Value, 0, fields.Len())
		for _, f := range fields.Items() {
			n, _ := f.Get("name")
			names = append(names, n)
		}
		if !intUniqueStrings(names) {
			c.Custom("interaction field names must be unique", "fields")
		}
	})

	// PermissionGrantSchema is a permission decision.
	PermissionGrantSchema = schema.Enum(string(GrantAllowOnce), string(GrantAllowSession), string(GrantAllowAlways), string(GrantDeny))

	// InteractionCapabilitiesSchema is the InteractionCapabilities shape.
	InteractionCapabilitiesSchema = schema.Object(
		schema.Req("kinds", schema.Array(BoundedIdentifier).MinItems(1).MaxItems(MaxArrayLength)),
		schema.Req("answerFieldTypes", schema.Array(schema.Enum(intFieldTypes...)).MinItems(1).MaxItems(MaxArrayLength)),
		schema.Req("responseScopes", schema.Array(schema.Enum(intResponseScopes...)).MinItems(1).MaxItems(MaxArrayLength)),
		schema.Req("secretAnswers", schema.Bool()),
		schema.Req("concurrentRequests", schema.Bool()),
		schema.Req("replay", schema.Bool()),
		schema.Req("responseIdempotency", schema.Bool()),
	).Refine(intCheckCapabilities)
)

func intFieldVariant(t InteractionFieldType, extra ...schema.Field) *schema.ObjectNode {
	fields := []schema.Field{
		schema.Req("type", schema.LiteralString(string(t))),
		schema.Req("name", InteractionFieldNameSchema),
		schema.Req("label", intLabel),
		schema.Opt("required", schema.Bool()),
	}
	return schema.Object(append(fields, extra...)...)
}

func intCheckField(c *schema.Context, v canonjson.Value) {
	def, hasDefault := v.Get("default")
	switch str(v, "type") {
	case string(InteractionFieldTypeText):
		if max, ok := v.Get("maxLength"); ok && hasDefault && float64(canonjson.UTF16Len(def.Str())) > max.Float() {
			c.Custom("text field default exceeds maxLength", "default")
		}
	case string(InteractionFieldTypeNumber):
		min, hasMin := v.Get("min")
		max, hasMax := v.Get("max")
		if hasMin && hasMax && min.Float() > max.Float() {
			c.Custom("number field max must be greater than or equal to min", "max")
		}
		if hasDefault && hasMin && def.Float() < min.Float() {
			c.Custom("number field default must be greater than or equal to min", "default")
		}
		if hasDefault && hasMax && def.Float() > max.Float() {
			c.Custom("number field default must be less than or equal to max", "default")
		}
	case string(InteractionFieldTypeSelect):
		options, _ := v.Get("options")
		values := make([]canonjson.Value, 0, options.Len())
		allowed := make(map[string]bool, options.Len())
		for _, o := range options.Items() {
			ov, _ := o.Get("value")
			values = append(values, ov)
			allowed[ov.Str()] = true
		}
		if !intUniqueStrings(values) {
			c.Custom("select option values must be unique", "options")
		}
		if !hasDefault {
			return
		}
		if !intUniqueStrings(def.Items()) {
			c.Custom("select default values must be unique", "default")
		}
		if !intFlag(v, "multi") && def.Len() > 1 {
			c.Custom("single-select default may contain at most one value", "default")
		}
		if intFlag(v, "required") && def.Len() == 0 {
			c.Custom("required select default must contain a value", "default")
		}
		for _, d := range def.Items() {
			if allowed[d.Str()] || intFlag(v, "allowCustom") && canonjson.TrimJS(d.Str()) != "" {
				continue
			}
			c.Custom(`select default contains unknown option "`+d.Str()+`"`, "default")
		}
	}
}

func intCheckCapabilities(c *schema.Context, v canonjson.Value) {
	types, _ := v.Get("answerFieldTypes")
	advertisesSecret := false
	for _, t := range types.Items() {
		if t.Str() == string(InteractionFieldTypeSecret) {
			advertisesSecret = true
		}
	}
	if secret, _ := v.Get("secretAnswers"); secret.Bool() != advertisesSecret {
		c.Custom("secretAnswers must agree with the secret answer field capability", "secretAnswers")
	}
	for _, m := range []struct{ name, what string }{
		{"kinds", "interaction kinds"},
		{"answerFieldTypes", "interaction answer field types"},
		{"responseScopes", "interaction response scopes"},
	} {
		if list, _ := v.Get(m.name); !intUniqueStrings(list.Items()) {
			c.Custom(m.what+" must be unique", m.name)
		}
	}
}

// intFlag reports whether the boolean member name of v is present and
// true.
func intFlag(v canonjson.Value, name string) bool {
	b, ok := v.Get(name)
	return ok && b.Kind() == canonjson.Bool && b.Bool()
}

// intUniqueStrings reports whether no string occurs twice among items
// (non-strings are ignored).
func intUniqueStrings(items []canonjson.Value) bool {
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		if it.Kind() != canonjson.String {
			continue
		}
		if seen[it.Str()] {
			return false
		}
		seen[it.Str()] = true
	}
	return true
}

// intInteger accepts a number that is an integer (fatally refusing a
// fraction, as the reference does) and reports a number beyond ±(2^53-1)
// and any failed rule as non-fatal checks.
func intInteger(rules ...schema.Rule[float64]) schema.Node {
	number := schema.Number(rules...)
	return schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if v.Kind() != canonjson.Number || !canonjson.IsFinite(v.Float()) {
			return number.Check(c, v)
		}
		f := v.Float()
		if f != math.Trunc(f) {
			c.Fatal(schema.CodeInvalidType, "expected an integer, got a fraction")
			return v
		}
		switch {
		case f > canonjson.MaxSafeInteger:
			c.Check(schema.CodeTooBig, "must be at most 2^53-1")
		case f < -canonjson.MaxSafeInteger:
			c.Check(schema.CodeTooSmall, "must be at least -(2^53-1)")
		}
		return number.Check(c, v)
	})
}

// ParseInteractionField decodes and validates one answer field.
func ParseInteractionField(data []byte) (*InteractionField, error) {
	return Parse[InteractionField](KindInteractionField, InteractionFieldSchema, data)
}

// ParseInteractionAnswerSpec decodes and validates an answer spec.
func ParseInteractionAnswerSpec(data []byte) (*InteractionAnswerSpec, error) {
	return Parse[InteractionAnswerSpec](KindInteractionAnswerSpec, InteractionAnswerSpecSchema, data)
}

// ParseInteractionCapabilities decodes and validates an interaction
// capability declaration.
func ParseInteractionCapabilities(data []byte) (*InteractionCapabilities, error) {
	return Parse[InteractionCapabilities](KindInteractionCapabilities, InteractionCapabilitiesSchema, data)
}

// SupportsKind reports whether the provider can originate interaction
// requests of kind.
func (c *InteractionCapabilities) SupportsKind(kind string) bool {
	if c == nil {
		return false
	}
	for _, k := range c.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}
