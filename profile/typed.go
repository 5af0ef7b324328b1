package profile

import (
	"fmt"
	"math"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
)

// This file converts a value Schema validated into a *Profile without
// reflection: the hot half of Parse and ParseDigest. It decodes exactly
// as canonjson.FromValue does over the same struct tags — the same nil
// and empty maps and slices, the same strictness (an unknown member, a
// missing required one, a wrong kind or an integer that does not fit is
// an *canonjson.UnmarshalError with its pointer) — which
// TestTypedMatchesFromValue holds it to, vector by vector and for a
// profile that sets every field. Validation stays Schema's: a value that
// passed it never fails here.

// typed converts the validated value out to a Profile.
func typed(out canonjson.Value) (*Profile, error) {
	p := new(Profile)
	var cv conv
	if err := p.fromValue(&cv, out); err != nil {
		return nil, fmt.Errorf("profile: validated value does not fit the Go type: %w", err)
	}
	return p, nil
}

// convError is a conversion failure: its pointer is built as it unwinds,
// innermost token first.
type convError struct {
	tokens []string // innermost first
	reason string
}

func (e *convError) Error() string { return e.unmarshalError().Error() }

// Unwrap gives the *canonjson.UnmarshalError FromValue would report.
func (e *convError) Unwrap() error { return e.unmarshalError() }

func (e *convError) unmarshalError() *canonjson.UnmarshalError {
	var b []byte
	for i := len(e.tokens) - 1; i >= 0; i-- {
		b = canonjson.AppendPointerToken(b, e.tokens[i])
	}
	return &canonjson.UnmarshalError{Pointer: string(b), Reason: e.reason}
}

// at adds token to the pointer of a conversion error.
func at(err error, token string) error {
	if ce, ok := err.(*convError); ok {
		ce.tokens = append(ce.tokens, token)
	}
	return err
}

func wantKind(what string, v canonjson.Value) error {
	return &convError{reason: "expected " + what + ", got " + v.Kind().String()}
}

func members(v canonjson.Value) ([]canonjson.Member, error) {
	if v.Kind() != canonjson.Object {
		return nil, wantKind("object", v)
	}
	return v.Members(), nil
}

func unknown(name string) error {
	return &convError{reason: fmt.Sprintf("unknown member %q", name)}
}

func missing(name string) error {
	return &convError{reason: fmt.Sprintf("missing required member %q", name)}
}

func toStr(v canonjson.Value) (string, error) {
	if v.Kind() != canonjson.String {
		return "", wantKind("string", v)
	}
	return v.Str(), nil
}

// conv holds one conversion's scratch: the strings its *string fields
// point into.
type conv struct {
	strs []string
}

// strChunk is how many strings one chunk of conv.strs holds: most
// profiles set fewer than eight optional text fields, so one chunk
// usually serves the whole conversion.
const strChunk = 8

// strPtr returns a pointer to the string v holds, drawn from chunks of
// strings so that a profile's optional text fields do not cost an
// allocation each.
func (cv *conv) strPtr(v canonjson.Value) (*string, error) {
	s, err := toStr(v)
	if err != nil {
		return nil, err
	}
	if len(cv.strs) == cap(cv.strs) {
		cv.strs = make([]string, 0, strChunk)
	}
	cv.strs = append(cv.strs, s)
	return &cv.strs[len(cv.strs)-1], nil
}

func boolPtr(v canonjson.Value) (*bool, error) {
	if v.Kind() != canonjson.Bool {
		return nil, wantKind("boolean", v)
	}
	b := v.Bool()
	return &b, nil
}

func float64Ptr(v canonjson.Value) (*float64, error) {
	if v.Kind() != canonjson.Number {
		return nil, wantKind("number", v)
	}
	f := v.Float()
	return &f, nil
}

func int64Ptr(v canonjson.Value) (*int64, error) {
	if v.Kind() != canonjson.Number {
		return nil, wantKind("number", v)
	}
	f := v.Float()
	if !canonjson.IsSafeInteger(f) || f < math.MinInt64 || f > math.MaxInt64 {
		return nil, &convError{reason: fmt.Sprintf("number %v is not an integer that fits int64", f)}
	}
	n := int64(f)
	return &n, nil
}

// sliceOf converts an array item by item.
func sliceOf[T any](v canonjson.Value, item func(canonjson.Value) (T, error)) ([]T, error) {
	if v.Kind() != canonjson.Array {
		return nil, wantKind("array", v)
	}
	items := v.Items()
	out := make([]T, len(items))
	for i, x := range items {
		var err error
		if out[i], err = item(x); err != nil {
			return nil, at(err, canonjson.IndexToken(i))
		}
	}
	return out, nil
}

// mapOf converts an object member by member.
func mapOf[T any](v canonjson.Value, elem func(canonjson.Value) (T, error)) (map[string]T, error) {
	ms, err := members(v)
	if err != nil {
		return nil, err
	}
	out := make(map[string]T, len(ms))
	for _, m := range ms {
		x, err := elem(m.Value)
		if err != nil {
			return nil, at(err, m.Name)
		}
		out[m.Name] = x
	}
	return out, nil
}

func self(v canonjson.Value) (canonjson.Value, error) { return v, nil }

func toBool(v canonjson.Value) (bool, error) {
	if v.Kind() != canonjson.Bool {
		return false, wantKind("boolean", v)
	}
	return v.Bool(), nil
}

func strs(v canonjson.Value) ([]string, error)                       { return sliceOf(v, toStr) }
func boolMap(v canonjson.Value) (map[string]bool, error)             { return mapOf(v, toBool) }
func valueMap(v canonjson.Value) (map[string]canonjson.Value, error) { return mapOf(v, self) }
func permissions(v canonjson.Value) (map[string]Permission, error)   { return mapOf(v, permission) }
func (cv *conv) configValues(v canonjson.Value) (map[string]ConfigValue, error) {
	return mapOf(v, cv.configValue)
}
func permissionValue(v canonjson.Value) (PermissionValue, error) {
	s, err := toStr(v)
	return PermissionValue(s), err
}

func extensions(v canonjson.Value) (map[string]map[string]canonjson.Value, error) {
	return mapOf(v, valueMap)
}

// set runs one member's conversion, naming the member in its error.
func set[T any](dst *T, v canonjson.Value, name string, conv func(canonjson.Value) (T, error)) error {
	x, err := conv(v)
	if err != nil {
		return at(err, name)
	}
	*dst = x
	return nil
}

func (p *Profile) fromValue(cv *conv, v canonjson.Value) error {
	ms, err := members(v)
	if err != nil {
		return err
	}
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "name":
			err = set(&p.Name, x, m.Name, cv.strPtr)
		case "description":
			err = set(&p.Description, x, m.Name, cv.strPtr)
		case "version":
			err = set(&p.Version, x, m.Name, cv.strPtr)
		case "tags":
			err = set(&p.Tags, x, m.Name, strs)
		case "prompt":
			err = set(&p.Prompt, x, m.Name, cv.prompt)
		case "model":
			err = set(&p.Model, x, m.Name, cv.modelHints)
		case "harness":
			err = set(&p.Harness, x, m.Name, harnessType)
		case "seats":
			err = set(&p.Seats, x, m.Name, func(v canonjson.Value) ([]Seat, error) { return sliceOf(v, cv.seat) })
		case "permissions":
			err = set(&p.Permissions, x, m.Name, permissions)
		case "tools":
			err = set(&p.Tools, x, m.Name, boolMap)
		case "mcp":
			err = set(&p.MCP, x, m.Name, func(v canonjson.Value) (map[string]MCPServer, error) { return mapOf(v, cv.mcpServer) })
		case "connections":
			err = set(&p.Connections, x, m.Name, func(v canonjson.Value) ([]Connection, error) { return sliceOf(v, cv.connection) })
		case "subagents":
			err = set(&p.Subagents, x, m.Name, func(v canonjson.Value) (map[string]Subagent, error) { return mapOf(v, cv.subagent) })
		case "resources":
			err = set(&p.Resources, x, m.Name, cv.resources)
		case "hooks":
			err = set(&p.Hooks, x, m.Name, func(v canonjson.Value) (map[string][]HookCommand, error) {
				return mapOf(v, func(v canonjson.Value) ([]HookCommand, error) { return sliceOf(v, cv.hookCommand) })
			})
		case "modes":
			err = set(&p.Modes, x, m.Name, func(v canonjson.Value) (map[string]Mode, error) { return mapOf(v, cv.mode) })
		case "confidential":
			err = set(&p.Confidential, x, m.Name, cv.confidential)
		case "metadata":
			err = set(&p.Metadata, x, m.Name, valueMap)
		case "extensions":
			err = set(&p.Extensions, x, m.Name, extensions)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func harnessType(v canonjson.Value) (harness.Type, error) {
	s, err := toStr(v)
	return harness.Type(s), err
}

func (cv *conv) prompt(v canonjson.Value) (*Prompt, error) {
	ms, err := members(v)
	if err != nil {
		return nil, err
	}
	p := new(Prompt)
	for _, m := range ms {
		var err error
		switch m.Name {
		case "systemPrompt":
			err = set(&p.SystemPrompt, m.Value, m.Name, cv.strPtr)
		case "appendSystemPrompt":
			err = set(&p.AppendSystemPrompt, m.Value, m.Name, cv.strPtr)
		case "instructions":
			err = set(&p.Instructions, m.Value, m.Name, strs)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (cv *conv) modelHints(v canonjson.Value) (*ModelHints, error) {
	ms, err := members(v)
	if err != nil {
		return nil, err
	}
	h := new(ModelHints)
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "default":
			err = set(&h.Default, x, m.Name, cv.strPtr)
		case "small":
			err = set(&h.Small, x, m.Name, cv.strPtr)
		case "provider":
			err = set(&h.Provider, x, m.Name, cv.strPtr)
		case "reasoningEffort":
			err = set(&h.ReasoningEffort, x, m.Name, func(v canonjson.Value) (harness.ReasoningEffort, error) {
				s, err := toStr(v)
				return harness.ReasoningEffort(s), err
			})
		case "maxVisibleOutputTokens":
			err = set(&h.MaxVisibleOutputTokens, x, m.Name, int64Ptr)
		case "maxReasoningTokens":
			err = set(&h.MaxReasoningTokens, x, m.Name, int64Ptr)
		case "maxTotalOutputTokens":
			err = set(&h.MaxTotalOutputTokens, x, m.Name, int64Ptr)
		case "metadata":
			err = set(&h.Metadata, x, m.Name, valueMap)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (cv *conv) seat(v canonjson.Value) (Seat, error) {
	var s Seat
	ms, err := members(v)
	if err != nil {
		return s, err
	}
	// The required members in UTF-16 order, the order FromValue reports
	// the first one missing in.
	required := [4]string{"harness", "model", "provider", "selector"}
	var seen [4]bool
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "harness":
			seen[0], err = true, set(&s.Harness, x, m.Name, harnessType)
		case "model":
			seen[1], err = true, set(&s.Model, x, m.Name, toStr)
		case "provider":
			seen[2], err = true, set(&s.Provider, x, m.Name, toStr)
		case "selector":
			seen[3], err = true, set(&s.Selector, x, m.Name, cv.seatSelector)
		case "tools":
			err = set(&s.Tools, x, m.Name, boolMap)
		case "permissions":
			err = set(&s.Permissions, x, m.Name, permissions)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return s, err
		}
	}
	for i, name := range required {
		if !seen[i] {
			return s, missing(name)
		}
	}
	return s, nil
}

func (cv *conv) seatSelector(v canonjson.Value) (SeatSelector, error) {
	var s SeatSelector
	ms, err := members(v)
	if err != nil {
		return s, err
	}
	kind := false
	for _, m := range ms {
		var err error
		switch m.Name {
		case "kind":
			kind, err = true, set(&s.Kind, m.Value, m.Name, toStr)
		case "id":
			err = set(&s.ID, m.Value, m.Name, cv.strPtr)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return s, err
		}
	}
	if !kind {
		return s, missing("kind")
	}
	return s, nil
}

// permission decodes as Permission.UnmarshalValue does.
func permission(v canonjson.Value) (Permission, error) {
	if v.Kind() == canonjson.String {
		return Permission{Value: PermissionValue(v.Str())}, nil
	}
	patterns, err := mapOf(v, permissionValue)
	return Permission{Patterns: patterns}, err
}

func (cv *conv) resourceRef(v canonjson.Value) (ResourceRef, error) {
	var r ResourceRef
	ms, err := members(v)
	if err != nil {
		return r, err
	}
	kind := false
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "kind":
			kind, err = true, set(&r.Kind, x, m.Name, toStr)
		case "name":
			err = set(&r.Name, x, m.Name, cv.strPtr)
		case "content":
			err = set(&r.Content, x, m.Name, cv.strPtr)
		case "repository":
			err = set(&r.Repository, x, m.Name, cv.strPtr)
		case "path":
			err = set(&r.Path, x, m.Name, cv.strPtr)
		case "ref":
			err = set(&r.Ref, x, m.Name, cv.strPtr)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return r, err
		}
	}
	if !kind {
		return r, missing("kind")
	}
	return r, nil
}

func (cv *conv) resourceRefs(v canonjson.Value) ([]ResourceRef, error) {
	return sliceOf(v, cv.resourceRef)
}

func (cv *conv) fileMount(v canonjson.Value) (FileMount, error) {
	var f FileMount
	ms, err := members(v)
	if err != nil {
		return f, err
	}
	path, resource := false, false
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "path":
			path, err = true, set(&f.Path, x, m.Name, toStr)
		case "resource":
			resource, err = true, set(&f.Resource, x, m.Name, cv.resourceRef)
		case "executable":
			err = set(&f.Executable, x, m.Name, boolPtr)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return f, err
		}
	}
	switch {
	case !path:
		return f, missing("path")
	case !resource:
		return f, missing("resource")
	}
	return f, nil
}

func (cv *conv) resources(v canonjson.Value) (*Resources, error) {
	ms, err := members(v)
	if err != nil {
		return nil, err
	}
	r := new(Resources)
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "files":
			err = set(&r.Files, x, m.Name, func(v canonjson.Value) ([]FileMount, error) { return sliceOf(v, cv.fileMount) })
		case "tools":
			err = set(&r.Tools, x, m.Name, cv.resourceRefs)
		case "skills":
			err = set(&r.Skills, x, m.Name, cv.resourceRefs)
		case "agents":
			err = set(&r.Agents, x, m.Name, cv.resourceRefs)
		case "commands":
			err = set(&r.Commands, x, m.Name, cv.resourceRefs)
		case "instructions":
			err = set(&r.Instructions, x, m.Name, cv.instructions)
		case "failOnError":
			err = set(&r.FailOnError, x, m.Name, boolPtr)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// instructions decodes as TextOrRef.UnmarshalValue does.
func (cv *conv) instructions(v canonjson.Value) (*Instructions, error) {
	if v.Kind() == canonjson.String {
		s, _ := cv.strPtr(v)
		return &Instructions{Text: s}, nil
	}
	ref, err := cv.resourceRef(v)
	if err != nil {
		return nil, err
	}
	return &Instructions{Ref: &ref}, nil
}

func (cv *conv) mcpServer(v canonjson.Value) (MCPServer, error) {
	var s MCPServer
	ms, err := members(v)
	if err != nil {
		return s, err
	}
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "transport":
			err = set(&s.Transport, x, m.Name, cv.strPtr)
		case "command":
			err = set(&s.Command, x, m.Name, cv.strPtr)
		case "args":
			err = set(&s.Args, x, m.Name, func(v canonjson.Value) ([]ConfigValue, error) { return sliceOf(v, cv.configValue) })
		case "env":
			err = set(&s.Env, x, m.Name, cv.configValues)
		case "cwd":
			err = set(&s.Cwd, x, m.Name, cv.strPtr)
		case "url":
			err = set(&s.URL, x, m.Name, cv.strPtr)
		case "headers":
			err = set(&s.Headers, x, m.Name, cv.configValues)
		case "enabled":
			err = set(&s.Enabled, x, m.Name, boolPtr)
		case "metadata":
			err = set(&s.Metadata, x, m.Name, valueMap)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

func (cv *conv) configValue(v canonjson.Value) (ConfigValue, error) {
	var c ConfigValue
	ms, err := members(v)
	if err != nil {
		return c, err
	}
	kind := false
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "kind":
			kind, err = true, set(&c.Kind, x, m.Name, toStr)
		case "value":
			err = set(&c.Value, x, m.Name, cv.strPtr)
		case "key":
			err = set(&c.Key, x, m.Name, cv.strPtr)
		case "format":
			err = set(&c.Format, x, m.Name, cv.strPtr)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return c, err
		}
	}
	if !kind {
		return c, missing("kind")
	}
	return c, nil
}

func (cv *conv) connection(v canonjson.Value) (Connection, error) {
	var c Connection
	ms, err := members(v)
	if err != nil {
		return c, err
	}
	id, caps := false, false
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "connectionId":
			id, err = true, set(&c.ConnectionID, x, m.Name, toStr)
		case "capabilities":
			caps, err = true, set(&c.Capabilities, x, m.Name, strs)
		case "alias":
			err = set(&c.Alias, x, m.Name, cv.strPtr)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return c, err
		}
	}
	switch {
	case !caps:
		return c, missing("capabilities")
	case !id:
		return c, missing("connectionId")
	}
	return c, nil
}

func (cv *conv) subagent(v canonjson.Value) (Subagent, error) {
	var s Subagent
	ms, err := members(v)
	if err != nil {
		return s, err
	}
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "description":
			err = set(&s.Description, x, m.Name, cv.strPtr)
		case "prompt":
			err = set(&s.Prompt, x, m.Name, cv.strPtr)
		case "model":
			err = set(&s.Model, x, m.Name, cv.strPtr)
		case "tools":
			err = set(&s.Tools, x, m.Name, boolMap)
		case "permissions":
			err = set(&s.Permissions, x, m.Name, permissions)
		case "maxSteps":
			err = set(&s.MaxSteps, x, m.Name, float64Ptr)
		case "metadata":
			err = set(&s.Metadata, x, m.Name, valueMap)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

func (cv *conv) hookCommand(v canonjson.Value) (HookCommand, error) {
	var h HookCommand
	ms, err := members(v)
	if err != nil {
		return h, err
	}
	command := false
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "command":
			command, err = true, set(&h.Command, x, m.Name, toStr)
		case "timeoutMs":
			err = set(&h.TimeoutMs, x, m.Name, float64Ptr)
		case "blocking":
			err = set(&h.Blocking, x, m.Name, boolPtr)
		case "matcher":
			err = set(&h.Matcher, x, m.Name, cv.strPtr)
		case "env":
			err = set(&h.Env, x, m.Name, cv.configValues)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return h, err
		}
	}
	if !command {
		return h, missing("command")
	}
	return h, nil
}

func (cv *conv) mode(v canonjson.Value) (Mode, error) {
	var md Mode
	ms, err := members(v)
	if err != nil {
		return md, err
	}
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "description":
			err = set(&md.Description, x, m.Name, cv.strPtr)
		case "model":
			err = set(&md.Model, x, m.Name, cv.strPtr)
		case "prompt":
			err = set(&md.Prompt, x, m.Name, cv.strPtr)
		case "tools":
			err = set(&md.Tools, x, m.Name, boolMap)
		case "permissions":
			err = set(&md.Permissions, x, m.Name, permissions)
		case "metadata":
			err = set(&md.Metadata, x, m.Name, valueMap)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return md, err
		}
	}
	return md, nil
}

func (cv *conv) confidential(v canonjson.Value) (*Confidential, error) {
	ms, err := members(v)
	if err != nil {
		return nil, err
	}
	c := new(Confidential)
	for _, m := range ms {
		var err error
		switch x := m.Value; m.Name {
		case "tee":
			err = set(&c.Tee, x, m.Name, cv.strPtr)
		case "attestationNonce":
			err = set(&c.AttestationNonce, x, m.Name, cv.strPtr)
		case "sealed":
			err = set(&c.Sealed, x, m.Name, boolPtr)
		case "attestationRefresh":
			err = set(&c.AttestationRefresh, x, m.Name, boolPtr)
		default:
			err = unknown(m.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}
