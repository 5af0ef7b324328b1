package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
)

// Issue codes. They follow the reference implementation's vocabulary so the
// two can be compared; messages are agentrt's own.
const (
	CodeInvalidType      = "invalid_type"
	CodeUnrecognizedKeys = "unrecognized_keys"
	CodeInvalidValue     = "invalid_value"
	CodeInvalidUnion     = "invalid_union"
	CodeInvalidKey       = "invalid_key"
	CodeTooSmall         = "too_small"
	CodeTooBig           = "too_big"
	CodeInvalidFormat    = "invalid_format"
	CodeCustom           = "custom"
	CodeInvalidJSON      = "invalid_json"
)

// Issue is one problem found in a value.
type Issue struct {
	// Path is the RFC 6901 pointer of the offending value; an unknown
	// member is reported at the object that holds it ("" is the root).
	Path string `json:"path"`
	// Code classifies the problem (the Code* constants).
	Code string `json:"code"`
	// Message says what is wrong, for people.
	Message string `json:"message"`

	fatal bool
}

// Error is a refused value with every issue found in it.
type Error struct {
	// Kind names what was being validated, such as "AgentProfile".
	Kind   string
	Issues []Issue
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid ")
	if e.Kind != "" {
		b.WriteString(e.Kind)
	} else {
		b.WriteString("value")
	}
	for i, is := range e.Issues {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Issues)-3)
			break
		}
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		path := is.Path
		if path == "" {
			path = "(root)"
		}
		b.WriteString(path)
		b.WriteString(": ")
		b.WriteString(is.Message)
	}
	return b.String()
}

type token struct {
	name  string
	index int // -1 for a member name
}

// Context accumulates issues while a value is checked and tracks where in
// the value the check is. The zero Context is ready to use.
type Context struct {
	path   []token
	issues []Issue
	fatal  int
	// quiet counts the enclosing unions trying their options. An option
	// that fails there is rewound and, if its issues are wanted, checked
	// again outside, so while quiet > 0 issues are counted but their
	// paths and messages are never built.
	quiet int
}

// Quiet reports whether the issues reported now are only counted: the
// check runs inside a union trying its options, and the message of a
// failed option is never read. A node whose message is costly to build
// may report an empty one when Quiet is true.
func (c *Context) Quiet() bool { return c.quiet > 0 }

// Push descends into the member name.
func (c *Context) Push(name string) { c.path = append(c.path, token{name: name, index: -1}) }

// PushIndex descends into array index i.
func (c *Context) PushIndex(i int) { c.path = append(c.path, token{index: i}) }

// Pop returns to the parent value.
func (c *Context) Pop() { c.path = c.path[:len(c.path)-1] }

// Pointer returns the pointer of the current position followed by rel.
func (c *Context) Pointer(rel ...string) string {
	var b []byte
	for _, t := range c.path {
		if t.index >= 0 {
			b = append(b, '/')
			b = strconv.AppendInt(b, int64(t.index), 10)
		} else {
			b = canonjson.AppendPointerToken(b, t.name)
		}
	}
	for _, r := range rel {
		b = canonjson.AppendPointerToken(b, r)
	}
	return string(b)
}

// Fatal reports a shape problem at the current position, followed by the
// relative tokens rel. Fatal issues stop refinements of enclosing objects.
func (c *Context) Fatal(code, message string, rel ...string) {
	c.fatal++
	if c.quiet > 0 {
		c.issues = append(c.issues, Issue{Code: code, fatal: true})
		return
	}
	c.issues = append(c.issues, Issue{Path: c.Pointer(rel...), Code: code, Message: message, fatal: true})
}

// Check reports a failed check (length, range, format, custom rule) at the
// current position followed by rel. The value's shape still counts as
// matched.
func (c *Context) Check(code, message string, rel ...string) {
	if c.quiet > 0 {
		c.issues = append(c.issues, Issue{Code: code})
		return
	}
	c.issues = append(c.issues, Issue{Path: c.Pointer(rel...), Code: code, Message: message})
}

// Custom reports a failed custom rule at the current position followed by
// rel; it is Check with CodeCustom.
func (c *Context) Custom(message string, rel ...string) { c.Check(CodeCustom, message, rel...) }

// Issues returns every issue reported so far.
func (c *Context) Issues() []Issue { return c.issues }

// Failed reports whether any issue was reported.
func (c *Context) Failed() bool { return len(c.issues) > 0 }

// mark captures the issue counts so a node can tell what it added.
type mark struct{ issues, fatal int }

func (c *Context) mark() mark { return mark{len(c.issues), c.fatal} }

func (c *Context) fatalSince(m mark) bool { return c.fatal > m.fatal }

func (c *Context) issuesSince(m mark) bool { return len(c.issues) > m.issues }

// rewind forgets the issues reported since m.
func (c *Context) rewind(m mark) {
	clear(c.issues[m.issues:])
	c.issues = c.issues[:m.issues]
	c.fatal = m.fatal
}

func received(v canonjson.Value) string {
	if !v.IsValid() {
		return "nothing"
	}
	if v.Kind() == canonjson.Number && !canonjson.IsFinite(v.Float()) {
		return "a non-finite number"
	}
	return "a " + v.Kind().String()
}

// Decode decodes data strictly (canonjson.Decode) and turns a refusal into
// an *Error naming kind, so callers see one error type for bad JSON and bad
// shapes alike.
func Decode(kind string, data []byte) (canonjson.Value, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		var de *canonjson.DecodeError
		if errors.As(err, &de) {
			code := CodeInvalidJSON
			if de.Code == canonjson.CodeDuplicateName {
				code = de.Code
			}
			return canonjson.Value{}, &Error{Kind: kind, Issues: []Issue{{Path: de.Pointer, Code: code, Message: de.Message, fatal: true}}}
		}
		return canonjson.Value{}, err
	}
	return v, nil
}

// Kind describes one wire kind for generic checking (`agentrt check`).
type Kind struct {
	// Name is the kind's contract name, such as "AgentProfile".
	Name string
	// Node validates the kind and returns the accepted value.
	Node Node
	// Identity, when set, adds kind-specific identity members (such as
	// AgentProfile's profileDigest) computed from the accepted value.
	Identity func(accepted canonjson.Value) []canonjson.Member
}
