package canonjson

import (
	"math"
	"strconv"
)

// Kind is the JSON type of a [Value].
type Kind uint8

// The JSON kinds. The zero Kind is Invalid: the zero [Value] represents
// "absent" and is never produced by [Decode].
const (
	Invalid Kind = iota
	Null
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"invalid", "null", "boolean", "number", "string", "array", "object"}

// String returns the JSON name of the kind ("object", "number", …).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is an immutable decoded JSON value. Object members keep the order in
// which they were written; canonical encoding sorts them. The zero Value is
// Invalid and stands for "absent".
type Value struct {
	kind    Kind
	boolean bool
	// wellFormed records that a decoded string is known to be valid UTF-8
	// (it held no lone-surrogate escape), sparing the check when encoding.
	wellFormed bool
	num        float64
	str        string
	items      []Value
	members    []Member
}

// Member is one name/value pair of a JSON object.
type Member struct {
	Name  string
	Value Value
}

// NullValue returns JSON null.
func NullValue() Value { return Value{kind: Null} }

// BoolValue returns a JSON boolean.
func BoolValue(b bool) Value { return Value{kind: Bool, boolean: b} }

// NumberValue returns a JSON number. Non-finite numbers are representable
// (JSON.parse produces them for overflowing literals) but not canonical.
func NumberValue(f float64) Value { return Value{kind: Number, num: f} }

// StringValue returns a JSON string holding s (WTF-8; see the package doc).
func StringValue(s string) Value { return Value{kind: String, str: s} }

// ArrayValue returns a JSON array. The slice is retained, not copied.
func ArrayValue(items []Value) Value {
	if items == nil {
		items = []Value{}
	}
	return Value{kind: Array, items: items}
}

// ObjectValue returns a JSON object with members in the given order. The
// slice is retained, not copied. Duplicate names are representable but are
// refused by [Canonical].
func ObjectValue(members []Member) Value {
	if members == nil {
		members = []Member{}
	}
	return Value{kind: Object, members: members}
}

// Kind reports the JSON type of v.
func (v Value) Kind() Kind { return v.kind }

// IsValid reports whether v holds a JSON value (is not the absent zero Value).
func (v Value) IsValid() bool { return v.kind != Invalid }

// Bool returns the boolean held by v, or false for other kinds.
func (v Value) Bool() bool { return v.boolean }

// Float returns the number held by v, or 0 for other kinds.
func (v Value) Float() float64 { return v.num }

// Str returns the string held by v, or "" for other kinds.
func (v Value) Str() string { return v.str }

// Len returns the number of array items or object members.
func (v Value) Len() int {
	switch v.kind {
	case Array:
		return len(v.items)
	case Object:
		return len(v.members)
	}
	return 0
}

// Items returns the items of an array. The caller must not modify them.
func (v Value) Items() []Value { return v.items }

// Members returns the members of an object in written order. The caller
// must not modify them.
func (v Value) Members() []Member { return v.members }

// Get returns the member named name and whether it exists. For a Value built
// with duplicate names, the last one wins, as in JSON.parse.
func (v Value) Get(name string) (Value, bool) {
	for i := len(v.members) - 1; i >= 0; i-- {
		if v.members[i].Name == name {
			return v.members[i].Value, true
		}
	}
	return Value{}, false
}

// Without returns a copy of the object v without the members named name.
// v itself is not changed.
func (v Value) Without(name string) Value {
	members := make([]Member, 0, len(v.members))
	for _, m := range v.members {
		if m.Name != name {
			members = append(members, m)
		}
	}
	return ObjectValue(members)
}

// With returns a copy of the object v with member name set to m: replaced
// where it was, else added last. v itself is not changed; a v that is not
// an object is treated as an empty one.
func (v Value) With(name string, m Value) Value {
	return ObjectValue(append(v.Without(name).members, Member{Name: name, Value: m}))
}

// IsSafeInteger reports whether v is a number that is an integer with
// magnitude at most 2^53-1 (JavaScript's Number.isSafeInteger).
func (v Value) IsSafeInteger() bool {
	return v.kind == Number && IsSafeInteger(v.num)
}

// MaxSafeInteger is 2^53-1, the largest integer a double holds exactly
// together with all smaller integers.
const MaxSafeInteger = 1<<53 - 1

// IsSafeInteger reports whether f is an integer with |f| ≤ 2^53-1.
func IsSafeInteger(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) <= MaxSafeInteger
}

// IsFinite reports whether f is neither NaN nor ±Inf.
func IsFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Equal reports whether a and b are the same JSON value: same kind, same
// numbers (so 0 equals -0), same strings, same items in order, and the same
// member names with equal values regardless of member order.
func Equal(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case Invalid, Null:
		return true
	case Bool:
		return a.boolean == b.boolean
	case Number:
		return a.num == b.num
	case String:
		return a.str == b.str
	case Array:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !Equal(a.items[i], b.items[i]) {
				return false
			}
		}
		return true
	case Object:
		if len(a.members) != len(b.members) {
			return false
		}
		for _, m := range a.members {
			o, ok := b.Get(m.Name)
			if !ok || !Equal(m.Value, o) {
				return false
			}
		}
		return true
	}
	return false
}
