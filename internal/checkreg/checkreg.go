package checkreg

import (
	"errors"
	"fmt"
	"sort"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Registry maps kind and function names to their checks.
type Registry struct {
	kinds     map[string]schema.Kind
	functions map[string]Function
}

// Function is a contract function callable with JSON arguments.
type Function struct {
	Name string
	// Arity is the number of arguments the function takes; trailing
	// optional arguments may be omitted down to MinArity.
	MinArity, Arity int
	Call            func(args []canonjson.Value) (canonjson.Value, error)
}

// New returns the registry of everything agentrt implements.
func New() *Registry {
	r := &Registry{kinds: map[string]schema.Kind{}, functions: map[string]Function{}}
	for _, group := range [][]schema.Kind{profile.Kinds(), contract.Kinds(), candidate.Kinds()} {
		for _, k := range group {
			r.kinds[k.Name] = k
		}
	}
	for _, f := range functions() {
		r.functions[f.Name] = f
	}
	return r
}

// HasKind reports whether kind is registered.
func (r *Registry) HasKind(kind string) bool { _, ok := r.kinds[kind]; return ok }

// HasFunction reports whether name is registered.
func (r *Registry) HasFunction(name string) bool { _, ok := r.functions[name]; return ok }

// Kinds returns the registered kind names, sorted.
func (r *Registry) Kinds() []string { return sortedKeys(r.kinds) }

// Functions returns the registered function names, sorted.
func (r *Registry) Functions() []string { return sortedKeys(r.functions) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ErrUnknown is returned for a kind or function that is not registered.
var ErrUnknown = errors.New("not registered")

// Result is the verdict of Check, in the shape `agentrt check` prints.
type Result struct {
	Valid  bool
	Issues []schema.Issue
	// Canonical and Digest are set when the accepted value has an RFC
	// 8785 form.
	Canonical, Digest *string
	// Identity holds kind-specific members (profileDigest, …).
	Identity []canonjson.Member
}

// Value returns r as the JSON object `agentrt check` prints:
// {"valid","issues","canonical","digest",…identity}, with null for a
// canonical form or digest that does not exist.
func (r Result) Value() canonjson.Value {
	issues := make([]canonjson.Value, len(r.Issues))
	for i, is := range r.Issues {
		issues[i] = canonjson.ObjectValue([]canonjson.Member{
			{Name: "path", Value: canonjson.StringValue(is.Path)},
			{Name: "code", Value: canonjson.StringValue(is.Code)},
			{Name: "message", Value: canonjson.StringValue(is.Message)},
		})
	}
	members := []canonjson.Member{
		{Name: "valid", Value: canonjson.BoolValue(r.Valid)},
		{Name: "issues", Value: canonjson.ArrayValue(issues)},
		{Name: "canonical", Value: nullable(r.Canonical)},
		{Name: "digest", Value: nullable(r.Digest)},
	}
	return canonjson.ObjectValue(append(members, r.Identity...))
}

func nullable(s *string) canonjson.Value {
	if s == nil {
		return canonjson.NullValue()
	}
	return canonjson.StringValue(*s)
}

// Check decodes data strictly and validates it as kind.
func (r *Registry) Check(kind string, data []byte) (Result, error) {
	k, ok := r.kinds[kind]
	if !ok {
		return Result{}, fmt.Errorf("kind %q: %w", kind, ErrUnknown)
	}
	v, err := schema.Decode(kind, data)
	if err == nil {
		v, err = schema.Run(kind, k.Node, v)
	}
	if err != nil {
		var se *schema.Error
		if !errors.As(err, &se) {
			return Result{}, err
		}
		return Result{Issues: se.Issues}, nil
	}
	res := Result{Valid: true, Issues: []schema.Issue{}}
	if c, err := canonjson.Canonical(v); err == nil {
		s, d := string(c), canonjson.DigestBytes(c)
		res.Canonical, res.Digest = &s, &d
	}
	if k.Identity != nil {
		res.Identity = k.Identity(v)
	}
	return res, nil
}

// Call calls function name with the JSON array in data as its arguments.
func (r *Registry) Call(name string, data []byte) (canonjson.Value, error) {
	f, ok := r.functions[name]
	if !ok {
		return canonjson.Value{}, fmt.Errorf("function %q: %w", name, ErrUnknown)
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		return canonjson.Value{}, err
	}
	if v.Kind() != canonjson.Array {
		return canonjson.Value{}, fmt.Errorf("arguments must be a JSON array, got %s", v.Kind())
	}
	args := v.Items()
	if len(args) < f.MinArity || len(args) > f.Arity {
		return canonjson.Value{}, fmt.Errorf("%s takes %d to %d arguments, got %d", name, f.MinArity, f.Arity, len(args))
	}
	return f.Call(args)
}

func stringArg(args []canonjson.Value, i int, name string) (string, error) {
	if args[i].Kind() != canonjson.String {
		return "", fmt.Errorf("argument %d (%s) must be a string, got %s", i, name, args[i].Kind())
	}
	return args[i].Str(), nil
}

func harnessArg(args []canonjson.Value, i int) (harness.Type, error) {
	s, err := stringArg(args, i, "harness")
	if err != nil {
		return "", err
	}
	// Like the reference, an unknown harness is not an error: it has no
	// table entries and answers with the defaults.
	return harness.Type(s), nil
}

// effortArg reads an optional reasoning effort: absent or null is "".
func effortArg(args []canonjson.Value, i int) (harness.ReasoningEffort, error) {
	if i >= len(args) || args[i].Kind() == canonjson.Null {
		return "", nil
	}
	s, err := stringArg(args, i, "effort")
	if err != nil {
		return "", err
	}
	return harness.ReasoningEffort(s), nil
}

func strings[T ~string](xs []T) canonjson.Value {
	if xs == nil {
		return canonjson.NullValue()
	}
	items := make([]canonjson.Value, len(xs))
	for i, x := range xs {
		items[i] = canonjson.StringValue(string(x))
	}
	return canonjson.ArrayValue(items)
}

func optional(s string, ok bool) canonjson.Value {
	if !ok {
		return canonjson.NullValue()
	}
	return canonjson.StringValue(s)
}

func predicate(name string, fn func(string) bool) Function {
	return Function{Name: name, MinArity: 1, Arity: 1, Call: func(a []canonjson.Value) (canonjson.Value, error) {
		s, err := stringArg(a, 0, "name")
		if err != nil {
			return canonjson.Value{}, err
		}
		return canonjson.BoolValue(fn(s)), nil
	}}
}

func functions() []Function {
	return []Function{
		predicate("isRuntimeProcessControlEnvironmentName", profile.IsRuntimeProcessControlEnvironmentName),
		predicate("isCredentialBearingProfileConfigName", profile.IsCredentialBearingProfileConfigName),
		{Name: "harnessSupportsModel", MinArity: 2, Arity: 2, Call: func(a []canonjson.Value) (canonjson.Value, error) {
			h, err := harnessArg(a, 0)
			if err != nil {
				return canonjson.Value{}, err
			}
			m, err := stringArg(a, 1, "model")
			if err != nil {
				return canonjson.Value{}, err
			}
			return canonjson.BoolValue(harness.SupportsModel(h, m)), nil
		}},
		{Name: "reasoningEffortsFor", MinArity: 1, Arity: 2, Call: func(a []canonjson.Value) (canonjson.Value, error) {
			h, err := harnessArg(a, 0)
			if err != nil {
				return canonjson.Value{}, err
			}
			var m *harness.ModelReasoning
			if len(a) > 1 && a[1].Kind() == canonjson.Object {
				m = &harness.ModelReasoning{}
				if s, ok := a[1].Get("supportsReasoning"); ok && s.Kind() == canonjson.Bool {
					b := s.Bool()
					m.SupportsReasoning = &b
				}
				if e, ok := a[1].Get("maxEffort"); ok && e.Kind() == canonjson.String {
					m.MaxEffort = harness.ReasoningEffort(e.Str())
				}
			} else if len(a) > 1 && a[1].Kind() != canonjson.Null {
				return canonjson.Value{}, errors.New("argument 1 (model) must be an object or null")
			}
			return strings(harness.ReasoningEffortsFor(h, m)), nil
		}},
		{Name: "nativeReasoningControl", MinArity: 1, Arity: 2, Call: func(a []canonjson.Value) (canonjson.Value, error) {
			h, err := harnessArg(a, 0)
			if err != nil {
				return canonjson.Value{}, err
			}
			e, err := effortArg(a, 1)
			if err != nil {
				return canonjson.Value{}, err
			}
			return optional(harness.NativeReasoningControl(h, e)), nil
		}},
		{Name: "harnessProviders", MinArity: 1, Arity: 1, Call: func(a []canonjson.Value) (canonjson.Value, error) {
			h, err := harnessArg(a, 0)
			if err != nil {
				return canonjson.Value{}, err
			}
			return strings(harness.Providers(h)), nil
		}},
		{Name: "modelProvider", MinArity: 1, Arity: 1, Call: func(a []canonjson.Value) (canonjson.Value, error) {
			m, err := stringArg(a, 0, "model")
			if err != nil {
				return canonjson.Value{}, err
			}
			return optional(harness.ModelProvider(m)), nil
		}},
		{Name: "validateInteractionResponse", MinArity: 2, Arity: 2, Call: func(a []canonjson.Value) (canonjson.Value, error) {
			return contract.ValidateInteractionResponseValue(a[0], a[1]), nil
		}},
		{Name: "preferredHarnessForModel", MinArity: 1, Arity: 1, Call: func(a []canonjson.Value) (canonjson.Value, error) {
			m, err := stringArg(a, 0, "model")
			if err != nil {
				return canonjson.Value{}, err
			}
			h, ok := harness.PreferredHarnessForModel(m)
			return optional(string(h), ok), nil
		}},
	}
}
