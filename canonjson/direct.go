package canonjson

import (
	"reflect"
	"slices"
	"sync"
)

// AppendCanonicalOf appends the canonical form of the Go value x to b:
// exactly what AppendCanonical(b, v) appends for v, err := ToValue(x),
// and the same error when either step refuses, without building the
// Value tree in between. Struct members are written in their plan's
// UTF-16 order and map members sorted as ToValue sorts them; a Value
// inside x (a field of type Value, or what a ValueMarshaler returns) is
// encoded as AppendCanonical encodes it. It is the encoding for records
// written as they are made (journals, projections), where the tree would
// be garbage the moment it was encoded.
func AppendCanonicalOf(b []byte, x any) ([]byte, error) {
	e := getEncoder(nil)
	own := e.buf
	e.buf = b
	present, ok := e.goValue(reflect.ValueOf(x))
	out := e.buf
	e.buf = own
	putEncoder(e)
	if present && ok {
		return out, nil
	}
	// Refused (or absent): the tree path says why, with the error and
	// pointer ToValue and AppendCanonical report.
	v, err := ToValue(x)
	if err != nil {
		return b, err
	}
	return AppendCanonical(b, v)
}

// goEncoder appends the canonical form of a Go value of one type as
// ToValue followed by value would. present is false for what ToValue
// makes absent (nothing is appended then); ok is false when either would
// refuse the value, and the buffer is then left in an unspecified state
// for the caller to drop.
type goEncoder func(e *encoder, rv reflect.Value) (present, ok bool)

// goEncoders caches each type's goEncoder; like plans it is a memo of
// pure functions of the type.
var goEncoders sync.Map // reflect.Type → goEncoder

// goValue appends rv as its type's goEncoder does; the invalid
// reflect.Value (a nil interface) is absent.
func (e *encoder) goValue(rv reflect.Value) (present, ok bool) {
	if !rv.IsValid() {
		return false, true
	}
	return goEncoderFor(rv.Type())(e, rv)
}

// goEncoderFor returns t's goEncoder, building it on first use. A type
// reached again while its own encoder is being built (a recursive type)
// gets a forwarder that waits for the built one.
func goEncoderFor(t reflect.Type) goEncoder {
	if f, ok := goEncoders.Load(t); ok {
		return f.(goEncoder)
	}
	var (
		wg    sync.WaitGroup
		built goEncoder
	)
	wg.Add(1)
	fwd, loaded := goEncoders.LoadOrStore(t, goEncoder(func(e *encoder, rv reflect.Value) (bool, bool) {
		wg.Wait()
		return built(e, rv)
	}))
	if loaded {
		return fwd.(goEncoder)
	}
	built = newGoEncoder(t)
	wg.Done()
	goEncoders.Store(t, built)
	return built
}

// refuse is the goEncoder of what has no canonical form.
func refuse(*encoder, reflect.Value) (bool, bool) { return false, false }

// newGoEncoder builds t's goEncoder, deciding per type what ToValue's
// convert decides per value: a Value is itself, a ValueMarshaler (other
// than an interface type, which goes on to what it holds) its
// MarshalValue, then by kind.
func newGoEncoder(t reflect.Type) goEncoder {
	if t == valueType {
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			var v Value
			if rv.CanAddr() {
				v = *(*Value)(rv.Addr().UnsafePointer())
			} else {
				v = rv.Interface().(Value)
			}
			return e.canonicalValue(v)
		}
	}
	if t.Kind() != reflect.Interface && t.Implements(marshalerType) {
		ptr := t.Kind() == reflect.Pointer
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			if ptr && rv.IsNil() {
				return false, true
			}
			v, err := rv.Interface().(ValueMarshaler).MarshalValue()
			if err != nil {
				return false, false
			}
			return e.canonicalValue(v)
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			if rv.Bool() {
				e.buf = append(e.buf, "true"...)
			} else {
				e.buf = append(e.buf, "false"...)
			}
			return true, true
		}
	case reflect.String:
		return func(e *encoder, rv reflect.Value) (present, ok bool) {
			e.buf, ok = appendCheckedString(e.buf, rv.String(), false)
			return true, ok
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			n := rv.Int()
			if n > MaxSafeInteger || n < -MaxSafeInteger {
				return false, false
			}
			e.buf = AppendNumber(e.buf, float64(n))
			return true, true
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			n := rv.Uint()
			if n > MaxSafeInteger {
				return false, false
			}
			e.buf = AppendNumber(e.buf, float64(n))
			return true, true
		}
	case reflect.Float32, reflect.Float64:
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			f := rv.Float()
			if !IsFinite(f) {
				return false, false
			}
			e.buf = AppendNumber(e.buf, f)
			return true, true
		}
	case reflect.Pointer:
		elem := goEncoderFor(t.Elem())
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			if rv.IsNil() {
				return false, true
			}
			return elem(e, rv.Elem())
		}
	case reflect.Interface:
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			if rv.IsNil() {
				return false, true
			}
			return e.goValue(rv.Elem())
		}
	case reflect.Slice, reflect.Array:
		item := goEncoderFor(t.Elem())
		slice := t.Kind() == reflect.Slice
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			if slice && rv.IsNil() {
				return false, true
			}
			e.buf = append(e.buf, '[')
			for i := range rv.Len() {
				if i > 0 {
					e.buf = append(e.buf, ',')
				}
				if present, ok := item(e, rv.Index(i)); !present || !ok {
					return false, false // an absent item is refused
				}
			}
			e.buf = append(e.buf, ']')
			return true, true
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return refuse
		}
		val := goEncoderFor(t.Elem())
		return func(e *encoder, rv reflect.Value) (bool, bool) {
			if rv.IsNil() {
				return false, true
			}
			return true, e.goMap(rv, val)
		}
	case reflect.Struct:
		return newStructEncoder(t)
	}
	return refuse
}

// structMember is one member of a struct type as its goEncoder writes
// it.
type structMember struct {
	index    []int
	optional bool
	key      []byte // the name in canonical form, with its ':'
	keyOK    bool   // the name is well-formed
	enc      goEncoder
}

// newStructEncoder builds the goEncoder of struct type t from its plan.
func newStructEncoder(t reflect.Type) goEncoder {
	p := planFor(t)
	if p.dupNames {
		return refuse // the tree path decides whether both are present
	}
	members := make([]structMember, len(p.fields))
	for i, f := range p.fields {
		key, ok := appendCheckedString(nil, f.name, false)
		members[i] = structMember{index: f.index, optional: f.optional, key: append(key, ':'), keyOK: ok,
			enc: goEncoderFor(t.FieldByIndex(f.index).Type)}
	}
	return func(e *encoder, rv reflect.Value) (bool, bool) {
		e.buf = append(e.buf, '{')
		n := 0
		for i := range members {
			m := &members[i]
			var fv reflect.Value
			if len(m.index) == 1 {
				fv = rv.Field(m.index[0])
			} else {
				var ok bool
				if fv, ok = fieldByIndex(rv, m.index); !ok {
					continue
				}
			}
			if m.optional && fv.IsZero() {
				continue
			}
			mark := len(e.buf)
			if n > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, m.key...)
			present, ok := m.enc(e, fv)
			switch {
			case !ok || present && !m.keyOK:
				return false, false
			case !present:
				e.buf = e.buf[:mark]
			default:
				n++
			}
		}
		e.buf = append(e.buf, '}')
		return true, true
	}
}

// mapEntry is one member of a map goMap encodes.
type mapEntry struct {
	name string
	v    reflect.Value
}

// goMap appends the non-nil map rv with string keys as an object, its
// members sorted as ToValue sorts them, each value by val.
func (e *encoder) goMap(rv reflect.Value, val goEncoder) bool {
	entries := make([]mapEntry, 0, rv.Len())
	for iter := rv.MapRange(); iter.Next(); {
		entries = append(entries, mapEntry{iter.Key().String(), iter.Value()})
	}
	slices.SortFunc(entries, func(a, b mapEntry) int { return CompareUTF16(a.name, b.name) })
	e.buf = append(e.buf, '{')
	n := 0
	for _, m := range entries {
		mark := len(e.buf)
		if n > 0 {
			e.buf = append(e.buf, ',')
		}
		var ok bool
		if e.buf, ok = appendCheckedString(e.buf, m.name, false); !ok {
			return false
		}
		e.buf = append(e.buf, ':')
		present, ok := val(e, m.v)
		switch {
		case !ok:
			return false
		case !present:
			e.buf = e.buf[:mark]
		default:
			n++
		}
	}
	e.buf = append(e.buf, '}')
	return true
}

// canonicalValue appends v as AppendCanonical does; the absent Value is
// absent, as ToValue takes it.
func (e *encoder) canonicalValue(v Value) (present, ok bool) {
	if !v.IsValid() {
		return false, true
	}
	return true, e.value(v) == nil
}
