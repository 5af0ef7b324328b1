package canonjson

import (
	"math"
	"strconv"
	"unsafe"
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
	// A Value is three words, whatever its kind, because a decoded
	// document is mostly Values: ptr and n together hold a string, the
	// items of an array or the members of an object (data pointer and
	// length), n alone holds a number's IEEE-754 bits or a boolean.
	_    [0]func() // not comparable with ==; use Equal
	ptr  unsafe.Pointer
	n    uint64
	kind Kind
	// wellFormed records, for a decoded string, that it is known to be
	// valid UTF-8 (it held no lone-surrogate escape), sparing the check
	// when encoding; for a decoded array or object, that every member
	// name in it, at any depth, is.
	wellFormed bool
	// plain records that a decoded string was written without escapes,
	// so its text holds nothing RFC 8785 escapes: its canonical form is
	// the text itself in quotes. For a decoded object it records the same
	// of every one of its member names.
	plain bool
}

// namesKnown returns the array or object v with what the decoder knows
// of its member names: namesOK when every name at any depth is
// well-formed, plainNames when every name of the object itself was
// written without escapes.
func namesKnown(v Value, namesOK, plainNames bool) Value {
	v.wellFormed, v.plain = namesOK, plainNames
	return v
}

// IsWellFormedString reports whether v is a string of well-formed Unicode
// (no lone surrogate), as IsWellFormed(v.Str()) does; for a string Decode
// read, which records this as it reads, it answers without looking at
// the text again.
func (v Value) IsWellFormedString() bool {
	return v.kind == String && (v.wellFormed || IsWellFormed(v.Str()))
}

// NamesWellFormed reports whether every member name in v, at any depth,
// is known to be well-formed Unicode: true for a scalar, and for an array
// or object Decode produced whose names are all well-formed. It is false
// when some name is ill-formed and also when nobody checked — for arrays
// and objects built with ArrayValue or ObjectValue — so a false answer
// means "look", never "ill-formed".
func (v Value) NamesWellFormed() bool {
	switch v.kind {
	case Array, Object:
		return v.wellFormed
	}
	return true
}

// Member is one name/value pair of a JSON object.
type Member struct {
	Name  string
	Value Value
}

// NullValue returns JSON null.
func NullValue() Value { return Value{kind: Null} }

// BoolValue returns a JSON boolean.
func BoolValue(b bool) Value {
	if b {
		return Value{kind: Bool, n: 1}
	}
	return Value{kind: Bool}
}

// NumberValue returns a JSON number. Non-finite numbers are representable
// (JSON.parse produces them for overflowing literals) but not canonical.
func NumberValue(f float64) Value { return Value{kind: Number, n: math.Float64bits(f)} }

// StringValue returns a JSON string holding s (WTF-8; see the package doc).
func StringValue(s string) Value { return stringValue(s, false) }

func stringValue(s string, wellFormed bool) Value {
	return Value{kind: String, ptr: unsafe.Pointer(unsafe.StringData(s)), n: uint64(len(s)), wellFormed: wellFormed}
}

// ArrayValue returns a JSON array. The slice is retained, not copied.
func ArrayValue(items []Value) Value {
	if items == nil {
		items = []Value{}
	}
	return Value{kind: Array, ptr: unsafe.Pointer(unsafe.SliceData(items)), n: uint64(len(items))}
}

// ObjectValue returns a JSON object with members in the given order. The
// slice is retained, not copied. Duplicate names are representable but are
// refused by [Canonical].
func ObjectValue(members []Member) Value {
	if members == nil {
		members = []Member{}
	}
	return Value{kind: Object, ptr: unsafe.Pointer(unsafe.SliceData(members)), n: uint64(len(members))}
}

// Identical reports whether v and w are the very same value: the same
// kind holding the same number bits or boolean, or the same text, items
// or members in memory. It is the cheap test of "nothing changed" after a
// step that returns its input when it has nothing to change; values that
// are only equal need Equal.
func (v Value) Identical(w Value) bool {
	return v.kind == w.kind && v.ptr == w.ptr && v.n == w.n
}

// Kind reports the JSON type of v.
func (v Value) Kind() Kind { return v.kind }

// IsValid reports whether v holds a JSON value (is not the absent zero Value).
func (v Value) IsValid() bool { return v.kind != Invalid }

// Bool returns the boolean held by v, or false for other kinds.
func (v Value) Bool() bool { return v.kind == Bool && v.n != 0 }

// Float returns the number held by v, or 0 for other kinds.
func (v Value) Float() float64 {
	if v.kind != Number {
		return 0
	}
	return math.Float64frombits(v.n)
}

// Str returns the string held by v, or "" for other kinds.
func (v Value) Str() string {
	if v.kind != String {
		return ""
	}
	return unsafe.String((*byte)(v.ptr), int(v.n))
}

// Len returns the number of array items or object members.
func (v Value) Len() int {
	switch v.kind {
	case Array, Object:
		return int(v.n)
	}
	return 0
}

// Items returns the items of an array, or nil for other kinds. The caller
// must not modify them.
func (v Value) Items() []Value {
	if v.kind != Array {
		return nil
	}
	return unsafe.Slice((*Value)(v.ptr), int(v.n))
}

// Members returns the members of an object in written order, or nil for
// other kinds. The caller must not modify them.
func (v Value) Members() []Member {
	if v.kind != Object {
		return nil
	}
	return unsafe.Slice((*Member)(v.ptr), int(v.n))
}

// Get returns the member named name and whether it exists. For a Value built
// with duplicate names, the last one wins, as in JSON.parse.
func (v Value) Get(name string) (Value, bool) {
	members := v.Members()
	for i := len(members) - 1; i >= 0; i-- {
		if members[i].Name == name {
			return members[i].Value, true
		}
	}
	return Value{}, false
}

// Without returns a copy of the object v without the members named name.
// v itself is not changed.
func (v Value) Without(name string) Value {
	members := make([]Member, 0, v.Len())
	for _, m := range v.Members() {
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
	return ObjectValue(append(v.Without(name).Members(), Member{Name: name, Value: m}))
}

// IsSafeInteger reports whether v is a number that is an integer with
// magnitude at most 2^53-1 (JavaScript's Number.isSafeInteger).
func (v Value) IsSafeInteger() bool {
	return v.kind == Number && IsSafeInteger(v.Float())
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
		return a.Bool() == b.Bool()
	case Number:
		return a.Float() == b.Float()
	case String:
		return a.Str() == b.Str()
	case Array:
		as, bs := a.Items(), b.Items()
		if len(as) != len(bs) {
			return false
		}
		for i := range as {
			if !Equal(as[i], bs[i]) {
				return false
			}
		}
		return true
	case Object:
		if a.Len() != b.Len() {
			return false
		}
		for _, m := range a.Members() {
			o, ok := b.Get(m.Name)
			if !ok || !Equal(m.Value, o) {
				return false
			}
		}
		return true
	}
	return false
}
