package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/google/jsonschema-go/jsonschema"
)

// A ToolOption adjusts NewTool.
type ToolOption func(*toolConfig)

type toolConfig struct {
	schema *jsonschema.Schema
	infer  *jsonschema.ForOptions
}

// WithInputSchema replaces the schema NewTool would infer from In. Use it
// to add what a Go type cannot say (enums, bounds, patterns); the schema
// must still describe a JSON object that decodes into In.
func WithInputSchema(s *jsonschema.Schema) ToolOption {
	return func(c *toolConfig) { c.schema = s }
}

// WithInference passes options to the schema inference (types with a
// schema of their own, ignored fields), see jsonschema.ForOptions.
func WithInference(o *jsonschema.ForOptions) ToolOption {
	return func(c *toolConfig) { c.infer = o }
}

// NewTool returns the tool named name that runs fn. Its InputSchema is
// inferred from In (WithInputSchema replaces it) and must describe a JSON
// object: In is a struct (required members are the fields not tagged
// omitempty or omitzero, unknown members are refused, a field's
// `jsonschema:"…"` tag is its description) or a map with string keys.
//
// Each call's arguments are checked against the schema (see Validator)
// and then decoded into In by encoding/json, refusing unknown members;
// arguments that fail either are an *ArgumentsError and fn is not
// called. The tool checks its own arguments so that it is safe wherever it
// is called; kernel's tool loop checks them too, before, against the same
// schema (a few microseconds per call). The Out fn returns is the call's result, encoded as
// encoding/json encodes it (a canonjson.Value or canonjson.ValueMarshaler
// as itself). An error fn returns is the call's failure, as is:
// return a *contract.ToolRefusal to refuse a call.
//
// NewTool fails when no schema can be inferred from In (channels,
// functions, cycles, …), when the schema is not an object schema, or when
// it does not compile.
func NewTool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...ToolOption) (contract.Tool, error) {
	var c toolConfig
	for _, o := range opts {
		o(&c)
	}
	if name == "" || fn == nil {
		return contract.Tool{}, errors.New("tools: a tool needs a name and a function")
	}
	s := c.schema
	if s == nil {
		var err error
		if s, err = jsonschema.For[In](c.infer); err != nil {
			return contract.Tool{}, fmt.Errorf("tools: tool %s: inferring the input schema: %w", name, err)
		}
	}
	if s.Type != "object" {
		return contract.Tool{}, fmt.Errorf("tools: tool %s: the input schema is of type %q, not \"object\" (tool arguments are a JSON object; use a struct or map type)", name, s.Type)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return contract.Tool{}, fmt.Errorf("tools: tool %s: encoding the input schema: %w", name, err)
	}
	schema, err := canonjson.Decode(raw)
	if err != nil {
		return contract.Tool{}, fmt.Errorf("tools: tool %s: encoding the input schema: %w", name, err)
	}
	t := contract.Tool{Name: name, Description: description, InputSchema: schema}
	// The validator is compiled from the schema the model is shown.
	v, err := NewValidator(t)
	if err != nil {
		return contract.Tool{}, err
	}
	t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		if err := v.Check(args); err != nil {
			return canonjson.Value{}, err
		}
		in, err := decode[In](args)
		if err != nil {
			return canonjson.Value{}, err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return canonjson.Value{}, err
		}
		res, err := encode(out)
		if err != nil {
			return canonjson.Value{}, fmt.Errorf("tools: tool %s: encoding the result: %w", name, err)
		}
		return res, nil
	}
	return t, nil
}

// Must returns t, and panics when err is not nil. It is for tools
// defined once at start-up, as in
//
//	var weather = tools.Must(tools.NewTool("weather", "…", getWeather))
func Must(t contract.Tool, err error) contract.Tool {
	if err != nil {
		panic(err)
	}
	return t
}

// decode decodes checked arguments into an In, refusing members In does
// not have.
func decode[In any](args canonjson.Value) (In, error) {
	var in In
	d := json.NewDecoder(bytes.NewReader(canonjson.Marshal(args)))
	d.DisallowUnknownFields()
	if err := d.Decode(&in); err != nil {
		return in, decodeError(err)
	}
	return in, nil
}

// encode is out as a Value.
func encode(out any) (canonjson.Value, error) {
	switch o := out.(type) {
	case canonjson.Value:
		return o, nil
	case canonjson.ValueMarshaler:
		return canonjson.ToValue(o)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return canonjson.Value{}, err
	}
	return canonjson.Decode(raw)
}
