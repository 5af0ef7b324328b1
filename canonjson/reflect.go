package canonjson

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// ValueMarshaler is implemented by Go types with their own JSON shape, such
// as unions. MarshalValue returns the absent (zero) Value to be omitted.
type ValueMarshaler interface {
	MarshalValue() (Value, error)
}

// ValueUnmarshaler is implemented by pointer types that decode themselves
// from a Value.
type ValueUnmarshaler interface {
	UnmarshalValue(Value) error
}

// MarshalError reports a Go value that has no JSON form.
type MarshalError struct {
	Pointer string
	Reason  string
}

func (e *MarshalError) Error() string {
	return fmt.Sprintf("cannot convert to JSON at %q: %s", e.Pointer, e.Reason)
}

// UnmarshalError reports a JSON value that does not fit the Go type it is
// decoded into. Pointer locates the value.
type UnmarshalError struct {
	Pointer string
	Reason  string
}

func (e *UnmarshalError) Error() string {
	return fmt.Sprintf("cannot decode JSON at %q: %s", e.Pointer, e.Reason)
}

var (
	valueType       = reflect.TypeFor[Value]()
	marshalerType   = reflect.TypeFor[ValueMarshaler]()
	unmarshalerType = reflect.TypeFor[ValueUnmarshaler]()
)

// field is one JSON member of a struct type.
type field struct {
	name     string
	index    []int
	optional bool // tagged omitzero or omitempty
}

type structPlan struct {
	fields []field        // in UTF-16 order of name
	byName map[string]int // name → position in fields
	// dupNames: two fields share a name (embedded structs), which
	// Canonical refuses when both are present.
	dupNames bool
}

// plans caches struct plans; it is a memo of pure functions of the type.
var plans sync.Map // reflect.Type → *structPlan

func planFor(t reflect.Type) *structPlan {
	if p, ok := plans.Load(t); ok {
		return p.(*structPlan)
	}
	p := &structPlan{byName: map[string]int{}}
	collectFields(t, nil, p)
	slices.SortFunc(p.fields, func(a, b field) int { return CompareUTF16(a.name, b.name) })
	for i, f := range p.fields {
		p.byName[f.name] = i
		p.dupNames = p.dupNames || i > 0 && p.fields[i-1].name == f.name
	}
	actual, _ := plans.LoadOrStore(t, p)
	return actual.(*structPlan)
}

func collectFields(t reflect.Type, index []int, p *structPlan) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		idx := append(slices.Clone(index), i)
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			collectFields(sf.Type, idx, p)
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		optional := strings.Contains(","+opts+",", ",omitzero,") || strings.Contains(","+opts+",", ",omitempty,")
		p.fields = append(p.fields, field{name: name, index: idx, optional: optional})
	}
}

// StructFields returns the JSON member names of a struct type and whether
// each is optional (tagged omitzero), in UTF-16 name order. Schema
// derivation and drift tests use it.
func StructFields(t reflect.Type) (names []string, optional []bool) {
	for _, f := range planFor(t).fields {
		names = append(names, f.name)
		optional = append(optional, f.optional)
	}
	return names, optional
}

// ToValue converts a Go value to a Value following encoding/json struct
// tags: nil pointers, maps, slices and interfaces are absent (omitted from
// objects), fields tagged omitzero are omitted when zero, and empty non-nil
// maps and slices are present. Maps must have string keys.
func ToValue(x any) (Value, error) {
	e := toValue{}
	v, err := e.convert(reflect.ValueOf(x))
	if err != nil {
		return Value{}, err
	}
	if !v.IsValid() {
		return Value{}, e.fail("value is absent")
	}
	return v, nil
}

type toValue struct {
	path    []pathToken
	members []Member // stack of object members under construction
}

// take pops the members pushed since base into an exact-size slice.
func (e *toValue) take(base int) []Member {
	members := make([]Member, len(e.members)-base)
	copy(members, e.members[base:])
	clear(e.members[base:])
	e.members = e.members[:base]
	return members
}

func (e *toValue) fail(reason string) error {
	d := decoder{path: e.path}
	return &MarshalError{Pointer: d.pointer(), Reason: reason}
}

func (e *toValue) convert(rv reflect.Value) (Value, error) {
	if !rv.IsValid() {
		return Value{}, nil
	}
	t := rv.Type()
	if t == valueType {
		return rv.Interface().(Value), nil
	}
	// An interface goes on to what it holds (below): a nil one is
	// absent, and a marshaler it holds is that value's own.
	if t.Kind() != reflect.Interface && t.Implements(marshalerType) {
		if t.Kind() == reflect.Pointer && rv.IsNil() {
			return Value{}, nil
		}
		v, err := rv.Interface().(ValueMarshaler).MarshalValue()
		if err != nil {
			return Value{}, wrapAt(e, err)
		}
		return v, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return BoolValue(rv.Bool()), nil
	case reflect.String:
		return StringValue(rv.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		if n > MaxSafeInteger || n < -MaxSafeInteger {
			return Value{}, e.fail(fmt.Sprintf("integer %d is beyond ±2^53-1", n))
		}
		return NumberValue(float64(n)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := rv.Uint()
		if n > MaxSafeInteger {
			return Value{}, e.fail(fmt.Sprintf("integer %d is beyond 2^53-1", n))
		}
		return NumberValue(float64(n)), nil
	case reflect.Float32, reflect.Float64:
		return NumberValue(rv.Float()), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return Value{}, nil
		}
		return e.convert(rv.Elem())
	case reflect.Slice:
		if rv.IsNil() {
			return Value{}, nil
		}
		fallthrough
	case reflect.Array:
		items := make([]Value, rv.Len())
		e.path = append(e.path, pathToken{})
		for i := range items {
			e.path[len(e.path)-1].index = i
			v, err := e.convert(rv.Index(i))
			if err != nil {
				return Value{}, err
			}
			if !v.IsValid() {
				return Value{}, e.fail("array item is absent")
			}
			items[i] = v
		}
		e.path = e.path[:len(e.path)-1]
		return ArrayValue(items), nil
	case reflect.Map:
		if rv.IsNil() {
			return Value{}, nil
		}
		if t.Key().Kind() != reflect.String {
			return Value{}, e.fail("map key type " + t.Key().String() + " is not a string")
		}
		base := len(e.members)
		iter := rv.MapRange()
		for iter.Next() {
			name := iter.Key().String()
			e.path = append(e.path, pathToken{name: name, index: -1})
			v, err := e.convert(iter.Value())
			if err != nil {
				return Value{}, err
			}
			e.path = e.path[:len(e.path)-1]
			if v.IsValid() {
				e.members = append(e.members, Member{Name: name, Value: v})
			}
		}
		members := e.take(base)
		slices.SortFunc(members, func(a, b Member) int { return CompareUTF16(a.Name, b.Name) })
		return ObjectValue(members), nil
	case reflect.Struct:
		p := planFor(t)
		base := len(e.members)
		for _, f := range p.fields {
			fv, ok := fieldByIndex(rv, f.index)
			if !ok || f.optional && fv.IsZero() {
				continue
			}
			e.path = append(e.path, pathToken{name: f.name, index: -1})
			v, err := e.convert(fv)
			if err != nil {
				return Value{}, err
			}
			e.path = e.path[:len(e.path)-1]
			if v.IsValid() {
				e.members = append(e.members, Member{Name: f.name, Value: v})
			}
		}
		return ObjectValue(e.take(base)), nil
	}
	return Value{}, e.fail("type " + t.String() + " has no JSON form")
}

// wrapAt places an error returned by a ValueMarshaler at the current path.
func wrapAt(e *toValue, err error) error {
	d := decoder{path: e.path}
	var me *MarshalError
	if errors.As(err, &me) {
		return &MarshalError{Pointer: d.pointer() + me.Pointer, Reason: me.Reason}
	}
	return &MarshalError{Pointer: d.pointer(), Reason: err.Error()}
}

// fieldByIndex follows index through embedded structs; it reports false
// when an embedded pointer on the way is nil.
func fieldByIndex(rv reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return reflect.Value{}, false
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv, true
}

// FromValue decodes v into the Go value that dst points to, following the
// same struct tags as ToValue. It is strict: unknown members, missing
// required members (fields not tagged omitzero), null where the type has no
// null, non-integers for integer types and out-of-range numbers are
// refused with an *UnmarshalError.
func FromValue(v Value, dst any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &UnmarshalError{Reason: "destination must be a non-nil pointer"}
	}
	d := fromValue{}
	return d.assign(v, rv.Elem())
}

type fromValue struct{ path []pathToken }

func (d *fromValue) fail(reason string) error {
	dec := decoder{path: d.path}
	return &UnmarshalError{Pointer: dec.pointer(), Reason: reason}
}

func (d *fromValue) want(what string, v Value) error {
	return d.fail("expected " + what + ", got " + v.Kind().String())
}

func (d *fromValue) assign(v Value, rv reflect.Value) error {
	t := rv.Type()
	if t == valueType {
		rv.Set(reflect.ValueOf(v))
		return nil
	}
	if done, err := d.assignCommon(v, rv, t); done {
		return err
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		if err := rv.Addr().Interface().(ValueUnmarshaler).UnmarshalValue(v); err != nil {
			var ue *UnmarshalError
			if errors.As(err, &ue) {
				return &UnmarshalError{Pointer: d.prefix() + ue.Pointer, Reason: ue.Reason}
			}
			return d.fail(err.Error())
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		if v.kind != Bool {
			return d.want("boolean", v)
		}
		rv.SetBool(v.Bool())
	case reflect.String:
		if v.kind != String {
			return d.want("string", v)
		}
		rv.SetString(v.Str())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.kind != Number {
			return d.want("number", v)
		}
		if !IsSafeInteger(v.Float()) || rv.OverflowInt(int64(v.Float())) {
			return d.fail(fmt.Sprintf("number %v is not an integer that fits %s", v.Float(), t))
		}
		rv.SetInt(int64(v.Float()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if v.kind != Number {
			return d.want("number", v)
		}
		if !IsSafeInteger(v.Float()) || v.Float() < 0 || rv.OverflowUint(uint64(v.Float())) {
			return d.fail(fmt.Sprintf("number %v is not an integer that fits %s", v.Float(), t))
		}
		rv.SetUint(uint64(v.Float()))
	case reflect.Float32, reflect.Float64:
		if v.kind != Number {
			return d.want("number", v)
		}
		if t.Kind() == reflect.Float32 && math.Abs(v.Float()) > math.MaxFloat32 && IsFinite(v.Float()) {
			return d.fail("number overflows float32")
		}
		rv.SetFloat(v.Float())
	case reflect.Pointer:
		elem := reflect.New(t.Elem())
		if err := d.assign(v, elem.Elem()); err != nil {
			return err
		}
		rv.Set(elem)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return d.fail("cannot decode into interface " + t.String())
		}
		rv.Set(reflect.ValueOf(v))
	case reflect.Slice:
		if v.kind != Array {
			return d.want("array", v)
		}
		s := reflect.MakeSlice(t, len(v.Items()), len(v.Items()))
		d.path = append(d.path, pathToken{})
		for i, item := range v.Items() {
			d.path[len(d.path)-1].index = i
			if err := d.assign(item, s.Index(i)); err != nil {
				return err
			}
		}
		d.path = d.path[:len(d.path)-1]
		rv.Set(s)
	case reflect.Map:
		if v.kind != Object {
			return d.want("object", v)
		}
		if t.Key().Kind() != reflect.String {
			return d.fail("map key type " + t.Key().String() + " is not a string")
		}
		m := reflect.MakeMapWithSize(t, len(v.Members()))
		elem := reflect.New(t.Elem()).Elem()
		for _, mem := range v.Members() {
			d.path = append(d.path, pathToken{name: mem.Name, index: -1})
			elem.SetZero()
			if err := d.assign(mem.Value, elem); err != nil {
				return err
			}
			d.path = d.path[:len(d.path)-1]
			m.SetMapIndex(reflect.ValueOf(mem.Name).Convert(t.Key()), elem)
		}
		rv.Set(m)
	case reflect.Struct:
		if v.kind != Object {
			return d.want("object", v)
		}
		p := planFor(t)
		var seenBuf [32]bool
		var seen []bool
		if len(p.fields) > len(seenBuf) {
			seen = make([]bool, len(p.fields))
		} else {
			seen = seenBuf[:len(p.fields)]
		}
		for _, mem := range v.Members() {
			i, ok := p.byName[mem.Name]
			if !ok {
				return d.fail(fmt.Sprintf("unknown member %q", mem.Name))
			}
			seen[i] = true
			d.path = append(d.path, pathToken{name: mem.Name, index: -1})
			fv, err := d.fieldForSet(rv, p.fields[i].index)
			if err != nil {
				return err
			}
			if err := d.assign(mem.Value, fv); err != nil {
				return err
			}
			d.path = d.path[:len(d.path)-1]
		}
		for i, f := range p.fields {
			if !seen[i] && !f.optional {
				return d.fail(fmt.Sprintf("missing required member %q", f.name))
			}
		}
	default:
		return d.fail("type " + t.String() + " cannot be decoded from JSON")
	}
	return nil
}

// Types with a direct decoding path, spared reflection per element.
var (
	valueMapType  = reflect.TypeFor[map[string]Value]()
	boolMapType   = reflect.TypeFor[map[string]bool]()
	stringsType   = reflect.TypeFor[[]string]()
	stringMapType = reflect.TypeFor[map[string]string]()
)

// assignCommon decodes the most frequent collection types directly.
func (d *fromValue) assignCommon(v Value, rv reflect.Value, t reflect.Type) (bool, error) {
	switch t {
	case valueMapType:
		if v.kind != Object {
			return true, d.want("object", v)
		}
		m := make(map[string]Value, len(v.Members()))
		for _, mem := range v.Members() {
			m[mem.Name] = mem.Value
		}
		rv.Set(reflect.ValueOf(m))
	case boolMapType:
		if v.kind != Object {
			return true, d.want("object", v)
		}
		m := make(map[string]bool, len(v.Members()))
		for _, mem := range v.Members() {
			if mem.Value.kind != Bool {
				d.path = append(d.path, pathToken{name: mem.Name, index: -1})
				return true, d.want("boolean", mem.Value)
			}
			m[mem.Name] = mem.Value.Bool()
		}
		rv.Set(reflect.ValueOf(m))
	case stringMapType:
		if v.kind != Object {
			return true, d.want("object", v)
		}
		m := make(map[string]string, len(v.Members()))
		for _, mem := range v.Members() {
			if mem.Value.kind != String {
				d.path = append(d.path, pathToken{name: mem.Name, index: -1})
				return true, d.want("string", mem.Value)
			}
			m[mem.Name] = mem.Value.Str()
		}
		rv.Set(reflect.ValueOf(m))
	case stringsType:
		if v.kind != Array {
			return true, d.want("array", v)
		}
		out := make([]string, len(v.Items()))
		for i, item := range v.Items() {
			if item.kind != String {
				d.path = append(d.path, pathToken{index: i})
				return true, d.want("string", item)
			}
			out[i] = item.Str()
		}
		rv.Set(reflect.ValueOf(out))
	default:
		return false, nil
	}
	return true, nil
}

func (d *fromValue) fieldForSet(rv reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				rv.Set(reflect.New(rv.Type().Elem()))
			}
			rv = rv.Elem()
		}
		rv = rv.Field(x)
	}
	return rv, nil
}

func (d *fromValue) prefix() string {
	dec := decoder{path: d.path}
	return dec.pointer()
}
