package schema

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
)

// Node checks one JSON value, reports issues to c, and returns the value it
// accepts (its input, or a canonicalized copy).
type Node interface {
	Check(c *Context, v canonjson.Value) canonjson.Value
}

// NodeFunc adapts a function to Node.
type NodeFunc func(c *Context, v canonjson.Value) canonjson.Value

// Check calls f.
func (f NodeFunc) Check(c *Context, v canonjson.Value) canonjson.Value { return f(c, v) }

// Run checks v against n from the root and returns the accepted value, or
// an *Error naming kind with every issue.
func Run(kind string, n Node, v canonjson.Value) (canonjson.Value, error) {
	c := contextPool.Get().(*Context)
	failed := false
	defer func() {
		clear(c.path[:cap(c.path)])
		// The issues of a failed run belong to its Error; otherwise the
		// slice only held the rewound issues of union options that did
		// not match (rewind cleared them), and is kept for the next run.
		issues := c.issues[:0]
		if failed {
			issues = nil
		}
		*c = Context{path: c.path[:0], issues: issues}
		contextPool.Put(c)
	}()
	out := n.Check(c, v)
	if failed = c.Failed(); failed {
		return canonjson.Value{}, &Error{Kind: kind, Issues: c.Issues()}
	}
	return out, nil
}

// contextPool recycles check contexts (their path stacks, and the issue
// slices of runs that passed); a recycled context holds no issues.
var contextPool = sync.Pool{New: func() any { return &Context{path: make([]token, 0, 16)} }}

// ---- scalars ---------------------------------------------------------------

// Rule is a check of a string or number. Test returns false when the value
// breaks the rule. A broken rule is reported as a check issue, or as a
// fatal one when Fatal is set (and then no later rule runs). Then, when set,
// runs only if this rule held.
type Rule[T any] struct {
	Code    string
	Message string
	Test    func(T) bool
	Fatal   bool
	Then    *Rule[T]
}

// apply runs r (and its chain) on x and reports whether a fatal issue was
// raised.
func (r Rule[T]) apply(c *Context, x T) (fatal bool) {
	for rule := &r; rule != nil; rule = rule.Then {
		if rule.Test(x) {
			continue
		}
		if rule.Fatal {
			c.Fatal(rule.Code, rule.Message)
			return true
		}
		c.Check(rule.Code, rule.Message)
		return false
	}
	return false
}

// StringNode accepts a JSON string that passes every rule.
type StringNode struct{ rules []Rule[string] }

// String returns a node accepting strings that pass rules.
func String(rules ...Rule[string]) StringNode { return StringNode{rules: rules} }

// Check implements Node.
func (n StringNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if v.Kind() != canonjson.String {
		c.Fatal(CodeInvalidType, "expected a string, got "+received(v))
		return v
	}
	for _, r := range n.rules {
		if r.apply(c, v.Str()) {
			break
		}
	}
	return v
}

// MinLen requires at least n UTF-16 code units.
func MinLen(n int) Rule[string] {
	msg := fmt.Sprintf("must be at least %d characters (UTF-16 units) long", n)
	if n == 1 {
		msg = "must not be empty"
	}
	return Rule[string]{Code: CodeTooSmall, Message: msg, Test: func(s string) bool { return len(s) >= n && canonjson.UTF16Len(s) >= n }}
}

// MaxLen allows at most n UTF-16 code units.
func MaxLen(n int) Rule[string] {
	return Rule[string]{Code: CodeTooBig, Message: fmt.Sprintf("must be at most %d characters (UTF-16 units) long", n),
		Test: func(s string) bool { return len(s) <= n || canonjson.UTF16Len(s) <= n }}
}

// NonBlank requires something besides JavaScript whitespace.
var NonBlank = Rule[string]{Code: CodeCustom, Message: "must not be blank", Test: func(s string) bool { return canonjson.TrimJS(s) != "" }}

// Trimmed requires no leading or trailing JavaScript whitespace.
var Trimmed = Rule[string]{Code: CodeCustom, Message: "must not have leading or trailing whitespace", Test: func(s string) bool { return canonjson.TrimJS(s) == s }}

// WellFormed requires well-formed Unicode (no lone surrogate).
var WellFormed = Rule[string]{Code: CodeCustom, Message: "must be well-formed Unicode (no lone surrogates)", Test: canonjson.IsWellFormed}

// NoControl forbids C0 control characters and U+007F.
var NoControl = Rule[string]{Code: CodeCustom, Message: "must not contain control characters", Test: func(s string) bool { return !canonjson.HasControl(s) }}

// Matches requires test(s); use it for patterns, with a message that names
// the pattern.
func Matches(message string, test func(string) bool) Rule[string] {
	return Rule[string]{Code: CodeInvalidFormat, Message: message, Test: test}
}

// NumberNode accepts a finite JSON number that passes every rule.
type NumberNode struct{ rules []Rule[float64] }

// Number returns a node accepting finite numbers that pass rules.
func Number(rules ...Rule[float64]) NumberNode { return NumberNode{rules: rules} }

// Check implements Node.
func (n NumberNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if v.Kind() != canonjson.Number || !canonjson.IsFinite(v.Float()) {
		c.Fatal(CodeInvalidType, "expected a finite number, got "+received(v))
		return v
	}
	for _, r := range n.rules {
		if r.apply(c, v.Float()) {
			break
		}
	}
	return v
}

// Int requires a safe integer, as the reference's .int() does: a fraction
// is a fatal type error; an integer beyond ±(2^53-1) is a range check.
var Int = Rule[float64]{Code: CodeInvalidType, Message: "must be an integer", Fatal: true,
	Test: func(f float64) bool { return f == math.Trunc(f) },
	Then: &Rule[float64]{Code: CodeTooBig, Message: "must be an integer between -(2^53-1) and 2^53-1", Test: canonjson.IsSafeInteger}}

// Positive requires n > 0.
var Positive = Rule[float64]{Code: CodeTooSmall, Message: "must be greater than 0", Test: func(f float64) bool { return f > 0 }}

// NonNegative requires n ≥ 0.
var NonNegative = Rule[float64]{Code: CodeTooSmall, Message: "must not be negative", Test: func(f float64) bool { return f >= 0 }}

// Min requires n ≥ min.
func Min(min float64) Rule[float64] {
	return Rule[float64]{Code: CodeTooSmall, Message: fmt.Sprintf("must be at least %v", min), Test: func(f float64) bool { return f >= min }}
}

// Max requires n ≤ max.
func Max(max float64) Rule[float64] {
	return Rule[float64]{Code: CodeTooBig, Message: fmt.Sprintf("must be at most %v", max), Test: func(f float64) bool { return f <= max }}
}

type boolNode struct{}

func (boolNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if v.Kind() != canonjson.Bool {
		c.Fatal(CodeInvalidType, "expected a boolean, got "+received(v))
	}
	return v
}

// Bool accepts true or false.
func Bool() Node { return boolNode{} }

type anyNode struct{}

func (anyNode) Check(c *Context, v canonjson.Value) canonjson.Value { return v }

// Any accepts every JSON value unchanged, including non-finite numbers and
// lone surrogates (identity checks refuse those later).
func Any() Node { return anyNode{} }

// LiteralNode accepts exactly one JSON value.
type LiteralNode struct{ want canonjson.Value }

// Literal accepts exactly want (a string, number, boolean or null).
func Literal(want canonjson.Value) LiteralNode { return LiteralNode{want: want} }

// LiteralString accepts exactly the string s.
func LiteralString(s string) LiteralNode { return Literal(canonjson.StringValue(s)) }

// Check implements Node.
func (n LiteralNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if !canonjson.Equal(v, n.want) {
		if c.Quiet() {
			c.Fatal(CodeInvalidValue, "")
			return v
		}
		c.Fatal(CodeInvalidValue, "expected "+string(canonjson.Marshal(n.want))+", got "+describe(v))
	}
	return v
}

// EnumNode accepts one of a fixed set of strings.
type EnumNode struct{ values []string }

// Enum accepts exactly one of values.
func Enum(values ...string) EnumNode { return EnumNode{values: values} }

// Values returns the accepted strings.
func (n EnumNode) Values() []string { return slices.Clone(n.values) }

// Check implements Node.
func (n EnumNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if v.Kind() != canonjson.String || !slices.Contains(n.values, v.Str()) {
		if c.Quiet() {
			c.Fatal(CodeInvalidValue, "")
			return v
		}
		c.Fatal(CodeInvalidValue, "expected one of "+quoteAll(n.values)+", got "+describe(v))
	}
	return v
}

func quoteAll(values []string) string {
	q := make([]string, len(values))
	for i, s := range values {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// describe names a value in a message without echoing long or secret text.
func describe(v canonjson.Value) string {
	switch v.Kind() {
	case canonjson.String:
		s := v.Str()
		if len(s) > 40 || !canonjson.IsWellFormed(s) {
			return "another string"
		}
		return fmt.Sprintf("%q", s)
	case canonjson.Number, canonjson.Bool, canonjson.Null:
		return string(canonjson.Marshal(v))
	}
	return received(v)
}

// ---- containers ----------------------------------------------------------

// ArrayNode accepts an array whose items all pass item.
type ArrayNode struct {
	item     Node
	min, max int // max < 0: unbounded
}

// Array accepts arrays of item.
func Array(item Node) ArrayNode { return ArrayNode{item: item, max: -1} }

// MinItems returns a copy that requires at least n items.
func (n ArrayNode) MinItems(min int) ArrayNode { n.min = min; return n }

// MaxItems returns a copy that allows at most n items.
func (n ArrayNode) MaxItems(max int) ArrayNode { n.max = max; return n }

// Check implements Node.
func (n ArrayNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if v.Kind() != canonjson.Array {
		c.Fatal(CodeInvalidType, "expected an array, got "+received(v))
		return v
	}
	items := v.Items()
	var out []canonjson.Value
	for i, item := range items {
		c.PushIndex(i)
		got := n.item.Check(c, item)
		c.Pop()
		out = keepChanged(out, items, i, item, got)
	}
	if len(items) < n.min {
		if n.min == 1 {
			c.Check(CodeTooSmall, "must not be empty")
		} else {
			c.Check(CodeTooSmall, fmt.Sprintf("must have at least %d items", n.min))
		}
	}
	if n.max >= 0 && len(items) > n.max {
		c.Check(CodeTooBig, fmt.Sprintf("must have at most %d items", n.max))
	}
	if out != nil {
		return canonjson.ArrayValue(out)
	}
	return v
}

// keepChanged copies items into out lazily, once some item changed.
func keepChanged(out, items []canonjson.Value, i int, before, after canonjson.Value) []canonjson.Value {
	if out == nil {
		if sameValue(before, after) {
			return nil
		}
		out = make([]canonjson.Value, i, len(items))
		copy(out, items[:i])
	}
	return append(out, after)
}

// sameValue reports whether a node returned its input unchanged. Nodes that
// change nothing return the very value they got, so a shallow comparison of
// kinds and backing arrays suffices; it errs towards "changed". The very
// same value, the common case, is settled inline.
func sameValue(a, b canonjson.Value) bool {
	return a.Identical(b) || sameShallow(a, b)
}

func sameShallow(a, b canonjson.Value) bool {
	if a.Kind() != b.Kind() {
		return false
	}
	switch a.Kind() {
	case canonjson.Array:
		ai, bi := a.Items(), b.Items()
		return len(ai) == len(bi) && (len(ai) == 0 || &ai[0] == &bi[0])
	case canonjson.Object:
		am, bm := a.Members(), b.Members()
		return len(am) == len(bm) && (len(am) == 0 || &am[0] == &bm[0])
	case canonjson.String:
		return a.Str() == b.Str()
	case canonjson.Number:
		return a.Float() == b.Float()
	case canonjson.Bool:
		return a.Bool() == b.Bool()
	}
	return canonjson.Equal(a, b)
}

// RecordNode accepts an object used as a map: any member names (subject to
// an optional key node), every value passing the value node.
type RecordNode struct {
	key     Node
	value   Node
	ownKeys bool
}

// Record accepts a string-keyed map of value. Like the reference's plain
// record, it ignores (drops) a member named "__proto__".
func Record(value Node) RecordNode { return RecordNode{value: value} }

// Keys returns a copy whose member names must pass key (checked as JSON
// strings; a failure is a fatal "invalid_key" at the member).
func (n RecordNode) Keys(key Node) RecordNode { n.key = key; return n }

// OwnKeys returns a copy that keeps and validates every member, including
// "__proto__", and requires well-formed member names, as the reference's
// AgentProfile records do.
func (n RecordNode) OwnKeys() RecordNode { n.ownKeys = true; return n }

// Check implements Node.
func (n RecordNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if v.Kind() != canonjson.Object {
		c.Fatal(CodeInvalidType, "expected an object, got "+received(v))
		return v
	}
	members := v.Members()
	var out []canonjson.Member
	changed := false
	namesOK := v.NamesWellFormed()
	for i, m := range members {
		if m.Name == "__proto__" && !n.ownKeys {
			if !changed {
				out = append(make([]canonjson.Member, 0, len(members)), members[:i]...)
				changed = true
			}
			continue
		}
		keyOK := true
		if n.ownKeys && !namesOK && !canonjson.IsWellFormed(m.Name) {
			c.Fatal(CodeInvalidKey, "member names must be well-formed Unicode", m.Name)
			keyOK = false
		} else if n.key != nil {
			var kc Context
			n.key.Check(&kc, canonjson.StringValue(m.Name))
			if kc.Failed() {
				c.Fatal(CodeInvalidKey, "invalid member name: "+kc.issues[0].Message, m.Name)
				keyOK = false
			}
		}
		got := m.Value
		if keyOK {
			c.Push(m.Name)
			got = n.value.Check(c, m.Value)
			c.Pop()
		}
		if changed {
			out = append(out, canonjson.Member{Name: m.Name, Value: got})
		} else if !sameValue(m.Value, got) {
			out = append(make([]canonjson.Member, 0, len(members)), members[:i]...)
			out = append(out, canonjson.Member{Name: m.Name, Value: got})
			changed = true
		}
	}
	if changed {
		return canonjson.ObjectValue(out)
	}
	return v
}

// Field is one member of an object shape.
type Field struct {
	Name     string
	Node     Node
	Optional bool
}

// Req declares a required member.
func Req(name string, n Node) Field { return Field{Name: name, Node: n} }

// Opt declares an optional member. Optional is not nullable: a present
// null must pass n.
func Opt(name string, n Node) Field { return Field{Name: name, Node: n, Optional: true} }

// Refinement checks a value whose shape matched. It reports with c, whose
// position is the value's.
type Refinement func(c *Context, v canonjson.Value)

// ObjectNode accepts a strict object of declared fields.
type ObjectNode struct {
	fields   []Field
	index    map[string]int
	required int // how many fields are not Optional
	refines  []Refinement
	strip    bool
}

// Object returns a strict object node: unknown members are refused.
func Object(fields ...Field) *ObjectNode {
	o := &ObjectNode{fields: fields, index: make(map[string]int, len(fields))}
	for i, f := range fields {
		if _, dup := o.index[f.Name]; dup {
			panic("schema: field " + f.Name + " declared twice")
		}
		o.index[f.Name] = i
		if !f.Optional {
			o.required++
		}
	}
	return o
}

// Refine returns a copy of o that also runs fn when nothing fatal was found
// inside the object.
func (o *ObjectNode) Refine(fn Refinement) *ObjectNode {
	cp := *o
	cp.refines = append(slices.Clip(o.refines), fn)
	return &cp
}

// Strip returns a copy of o that drops unknown members instead of refusing
// them (the reference's non-strict objects).
func (o *ObjectNode) Strip() *ObjectNode {
	cp := *o
	cp.strip = true
	return &cp
}

// Extend returns a new object node with o's fields followed by fields (a
// field of the same name replaces o's). Refinements are not carried over.
func (o *ObjectNode) Extend(fields ...Field) *ObjectNode {
	all := slices.Clone(o.fields)
	for _, f := range fields {
		if i, ok := o.index[f.Name]; ok {
			all[i] = f
		} else {
			all = append(all, f)
		}
	}
	n := Object(all...)
	n.strip = o.strip
	return n
}

// Omit returns a new object node without the named fields. Refinements are
// not carried over.
func (o *ObjectNode) Omit(names ...string) *ObjectNode {
	var kept []Field
	for _, f := range o.fields {
		if !slices.Contains(names, f.Name) {
			kept = append(kept, f)
		}
	}
	n := Object(kept...)
	n.strip = o.strip
	return n
}

// Fields returns the declared fields in order.
func (o *ObjectNode) Fields() []Field { return slices.Clone(o.fields) }

// scanFields is the field count up to which field looks a name up by
// comparing it with each field name: the comparisons, mostly settled by
// the lengths, cost less than hashing the name.
const scanFields = 8

// field returns the index of the field named name and whether there is one.
func (o *ObjectNode) field(name string) (int, bool) {
	if len(o.fields) <= scanFields {
		for i := range o.fields {
			if o.fields[i].Name == name {
				return i, true
			}
		}
		return 0, false
	}
	i, ok := o.index[name]
	return i, ok
}

// Check implements Node.
func (o *ObjectNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	if v.Kind() != canonjson.Object {
		c.Fatal(CodeInvalidType, "expected an object, got "+received(v))
		return v
	}
	start := c.mark()
	members := v.Members()
	var seenBuf [24]bool
	var seen []bool
	if len(o.fields) <= len(seenBuf) {
		seen = seenBuf[:len(o.fields)]
	} else {
		seen = make([]bool, len(o.fields))
	}
	var out []canonjson.Member
	changed := false
	var unknown []string
	requiredSeen := 0
	for i := range members {
		m := &members[i]
		fi, known := o.field(m.Name)
		if !known {
			if m.Name != "__proto__" && !o.strip {
				unknown = append(unknown, m.Name)
			}
			if !changed {
				out = append(make([]canonjson.Member, 0, len(members)), members[:i]...)
				changed = true
			}
			continue
		}
		if !seen[fi] {
			seen[fi] = true
			if !o.fields[fi].Optional {
				requiredSeen++
			}
		}
		c.Push(m.Name)
		got := o.fields[fi].Node.Check(c, m.Value)
		c.Pop()
		if changed {
			out = append(out, canonjson.Member{Name: m.Name, Value: got})
		} else if !sameValue(m.Value, got) {
			out = append(make([]canonjson.Member, 0, len(members)), members[:i]...)
			out = append(out, canonjson.Member{Name: m.Name, Value: got})
			changed = true
		}
	}
	if requiredSeen < o.required {
		for i, f := range o.fields {
			if !seen[i] && !f.Optional {
				c.Fatal(CodeInvalidType, "is required", f.Name)
			}
		}
	}
	if len(unknown) > 0 && c.Quiet() {
		c.Fatal(CodeUnrecognizedKeys, "")
	} else if len(unknown) > 0 {
		msg := "unknown member"
		if len(unknown) > 1 {
			msg += "s"
		}
		c.Fatal(CodeUnrecognizedKeys, msg+" "+quoteAll(unknown))
	}
	if changed {
		v = canonjson.ObjectValue(out)
	}
	if !c.fatalSince(start) {
		for _, fn := range o.refines {
			fn(c, v)
		}
	}
	return v
}

// ---- combinators -----------------------------------------------------------

// Refined wraps n with fn, which runs when n found nothing fatal.
func Refined(n Node, fn Refinement) Node {
	return NodeFunc(func(c *Context, v canonjson.Value) canonjson.Value {
		start := c.mark()
		out := n.Check(c, v)
		if !c.fatalSince(start) {
			fn(c, out)
		}
		return out
	})
}

// Transform wraps n with fn, which maps the accepted value to its canonical
// form when n reported nothing at all.
func Transform(n Node, fn func(canonjson.Value) canonjson.Value) Node {
	return NodeFunc(func(c *Context, v canonjson.Value) canonjson.Value {
		start := c.mark()
		out := n.Check(c, v)
		if c.issuesSince(start) {
			return out
		}
		return fn(out)
	})
}

// Union accepts a value that passes one of options, tried in order.
func Union(options ...Node) Node {
	if len(options) == 1 {
		return options[0]
	}
	return unionNode{options: options}
}

type unionNode struct{ options []Node }

func (u unionNode) Check(c *Context, v canonjson.Value) canonjson.Value {
	// Options run on c itself and are rewound when they fail, so the
	// common case (some option matches) allocates nothing. Failures are
	// rare: the one option whose issues get reported is simply re-run.
	// While trying, c is quiet: a failed option's messages are never
	// read, so they are not built.
	start := c.mark()
	matched, shapeMatches := -1, 0
	c.quiet++
	for i, opt := range u.options {
		out := opt.Check(c, v)
		if !c.issuesSince(start) {
			c.quiet--
			return out
		}
		if !c.fatalSince(start) {
			matched = i
			shapeMatches++
		}
		c.rewind(start)
	}
	c.quiet--
	if shapeMatches == 1 {
		return u.options[matched].Check(c, v)
	}
	c.Fatal(CodeInvalidUnion, "matches none of the accepted shapes")
	return v
}

// Discriminated accepts an object whose member key selects the node it
// must pass. An object without a known key value is refused at key.
func Discriminated(key string, options map[string]Node) Node {
	keys := make([]string, 0, len(options))
	for k := range options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return NodeFunc(func(c *Context, v canonjson.Value) canonjson.Value {
		if v.Kind() != canonjson.Object {
			c.Fatal(CodeInvalidType, "expected an object, got "+received(v))
			return v
		}
		d, _ := v.Get(key)
		if d.Kind() == canonjson.String {
			if n, ok := options[d.Str()]; ok {
				return n.Check(c, v)
			}
		}
		if c.Quiet() {
			c.Fatal(CodeInvalidUnion, "")
			return v
		}
		c.Fatal(CodeInvalidUnion, "expected "+key+" to be one of "+quoteAll(keys), key)
		return v
	})
}

// Lazy defers building a node, for recursive shapes.
func Lazy(build func() Node) Node {
	get := sync.OnceValue(build)
	return NodeFunc(func(c *Context, v canonjson.Value) canonjson.Value {
		return get().Check(c, v)
	})
}
