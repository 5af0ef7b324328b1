package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/google/jsonschema-go/jsonschema"
)

// ArgumentsError is the refusal of a tool call's arguments: the tool was
// not run.
type ArgumentsError struct {
	// Path is the JSON pointer, into the arguments, of the value that was
	// refused; "" is the arguments as a whole (or a value the schema
	// location does not pin down further).
	Path string
	// Reason says why, as a verb phrase completing "the arguments …".
	Reason string
}

func (e *ArgumentsError) Error() string {
	if e.Path == "" {
		return "the arguments " + e.Reason
	}
	return "the arguments at " + e.Path + " " + e.Reason
}

// A Validator checks the arguments of calls of one tool. It is immutable
// and safe for concurrent use.
type Validator struct {
	resolved *jsonschema.Resolved // nil: the tool has no input schema
}

// NewValidator compiles t's InputSchema (JSON Schema draft 2020-12 or
// draft-07) once, for every later Check. A tool without an InputSchema
// gets a Validator that checks only that the arguments are an object. A
// schema that is not a JSON object, does not compile, or refers to a
// schema outside itself is an error.
func NewValidator(t contract.Tool) (*Validator, error) {
	if !t.InputSchema.IsValid() {
		return &Validator{}, nil
	}
	if t.InputSchema.Kind() != canonjson.Object {
		return nil, fmt.Errorf("tools: tool %s: the input schema is a JSON %s, not an object", t.Name, t.InputSchema.Kind())
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(canonjson.Marshal(t.InputSchema), &s); err != nil {
		return nil, fmt.Errorf("tools: tool %s: the input schema: %w", t.Name, err)
	}
	return compile(t.Name, &s)
}

func compile(name string, s *jsonschema.Schema) (*Validator, error) {
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("tools: tool %s: the input schema does not compile: %w", name, err)
	}
	return &Validator{resolved: rs}, nil
}

// Check reports whether args may be passed to the tool: nil, or an
// *ArgumentsError saying where and why not.
func (v *Validator) Check(args canonjson.Value) error {
	if args.Kind() != canonjson.Object {
		what := "absent or not JSON"
		if args.IsValid() {
			what = "a JSON " + args.Kind().String()
		}
		return &ArgumentsError{Reason: "are " + what + ", not a JSON object"}
	}
	if v.resolved == nil {
		return nil
	}
	if err := v.resolved.Validate(plain(args)); err != nil {
		return refusal(err)
	}
	return nil
}

// plain converts v to the values encoding/json decodes into an any, which
// is what the schema validator walks.
func plain(v canonjson.Value) any {
	switch v.Kind() {
	case canonjson.Bool:
		return v.Bool()
	case canonjson.Number:
		return v.Float()
	case canonjson.String:
		return v.Str()
	case canonjson.Array:
		items := make([]any, len(v.Items()))
		for i, item := range v.Items() {
			items[i] = plain(item)
		}
		return items
	case canonjson.Object:
		m := make(map[string]any, len(v.Members()))
		for _, mem := range v.Members() {
			m[mem.Name] = plain(mem.Value)
		}
		return m
	}
	return nil
}

// refusal turns the validator's error into an *ArgumentsError. The
// validator says where in the schema validation failed, as a chain of
// "validating <schema location>: " prefixes before the reason; the path
// into the arguments follows from the chain's properties and index
// steps. A step that names no single member or item (items,
// additionalProperties, …) ends the path, and the reason says which kind
// of value below it failed.
func refusal(err error) *ArgumentsError {
	msg := err.Error()
	var path []byte
	var below string
	prev := ""
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		loc, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		msg = after
		if loc == "root" {
			prev = ""
			continue
		}
		if below != "" {
			prev = loc
			continue
		}
		step, ok := strings.CutPrefix(loc, prev+"/")
		prev = loc
		if !ok || !strings.HasPrefix(loc, "/") {
			continue // a $ref or a named schema: the same value
		}
		path, below = instanceSteps(path, strings.Split(step, "/"))
	}
	r := "do not match the input schema: " + msg
	if below != "" {
		r = "do not match the input schema (" + below + "): " + msg
	}
	return &ArgumentsError{Path: string(path), Reason: r}
}

// instanceSteps appends to path the argument steps of the schema-location
// steps (JSON-pointer segments, escaped as the path needs them), and returns what the path cannot name when a step has no single
// member or item ("" when it named every one).
func instanceSteps(path []byte, steps []string) ([]byte, string) {
	for i := 0; i < len(steps); i++ {
		switch steps[i] {
		case "properties", "prefixItems":
			if i+1 < len(steps) {
				i++
				path = append(append(path, '/'), steps[i]...)
			}
		case "items":
			if i+1 < len(steps) {
				if _, err := strconv.Atoi(steps[i+1]); err == nil { // draft-07 items array
					i++
					path = append(append(path, '/'), steps[i]...)
					continue
				}
			}
			return path, "an item"
		case "additionalItems", "unevaluatedItems", "contains":
			return path, "an item"
		case "additionalProperties", "patternProperties", "unevaluatedProperties", "propertyNames":
			return path, "a member"
		case "allOf", "anyOf", "oneOf", "dependentSchemas", "$defs", "definitions", "dependencies":
			i++ // the next step names the subschema, not a value
		}
		// not, if, then, else: the same value.
	}
	return path, ""
}

// decodeError is the refusal of arguments that passed the schema but do
// not decode into the tool's input type.
func decodeError(err error) *ArgumentsError {
	var path []byte
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		for f := range strings.SplitSeq(te.Field, ".") {
			path = canonjson.AppendPointerToken(path, f)
		}
	}
	return &ArgumentsError{Path: string(path), Reason: "do not decode into the tool's input: " + strings.TrimPrefix(err.Error(), "json: ")}
}
