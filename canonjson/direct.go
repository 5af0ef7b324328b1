package canonjson

import (
	"reflect"
	"slices"
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

// goValue appends the canonical form of rv as ToValue followed by
// value would. present is false for what ToValue makes absent (nothing
// is appended then); ok is false when either would refuse rv, and the
// buffer is then left in an unspecified state for the caller to drop.
func (e *encoder) goValue(rv reflect.Value) (present, ok bool) {
	if !rv.IsValid() {
		return false, true
	}
	t := rv.Type()
	if t == valueType {
		var v Value
		if rv.CanAddr() {
			v = *(*Value)(rv.Addr().UnsafePointer())
		} else {
			v = rv.Interface().(Value)
		}
		return e.canonicalValue(v)
	}
	if t.Implements(marshalerType) {
		if t.Kind() == reflect.Pointer && rv.IsNil() {
			return false, true
		}
		v, err := rv.Interface().(ValueMarshaler).MarshalValue()
		if err != nil {
			return false, false
		}
		return e.canonicalValue(v)
	}
	switch t.Kind() {
	case reflect.Bool:
		if rv.Bool() {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
		return true, true
	case reflect.String:
		e.buf, ok = appendCheckedString(e.buf, rv.String(), false)
		return true, ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		if n > MaxSafeInteger || n < -MaxSafeInteger {
			return false, false
		}
		e.buf = AppendNumber(e.buf, float64(n))
		return true, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := rv.Uint()
		if n > MaxSafeInteger {
			return false, false
		}
		e.buf = AppendNumber(e.buf, float64(n))
		return true, true
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if !IsFinite(f) {
			return false, false
		}
		e.buf = AppendNumber(e.buf, f)
		return true, true
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return false, true
		}
		return e.goValue(rv.Elem())
	case reflect.Slice:
		if rv.IsNil() {
			return false, true
		}
		fallthrough
	case reflect.Array:
		e.buf = append(e.buf, '[')
		for i := range rv.Len() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if present, ok := e.goValue(rv.Index(i)); !present || !ok {
				return false, false // an absent item is refused
			}
		}
		e.buf = append(e.buf, ']')
		return true, true
	case reflect.Map:
		if rv.IsNil() {
			return false, true
		}
		if t.Key().Kind() != reflect.String {
			return false, false
		}
		return true, e.goMap(rv)
	case reflect.Struct:
		p := planFor(t)
		if p.dupNames {
			return false, false // the tree path decides whether both are present
		}
		e.buf = append(e.buf, '{')
		n := 0
		for i := range p.fields {
			f := &p.fields[i]
			fv, ok := fieldByIndex(rv, f.index)
			if !ok || f.optional && fv.IsZero() {
				continue
			}
			if ok := e.member(&n, f.name, fv); !ok {
				return false, false
			}
		}
		e.buf = append(e.buf, '}')
		return true, true
	}
	return false, false
}

// mapEntry is one member of a map goMap encodes.
type mapEntry struct {
	name string
	v    reflect.Value
}

// goMap appends the non-nil map rv with string keys as an object, its
// members sorted as ToValue sorts them. It is apart from goValue so that
// goValue's frame, on every level of the recursion, stays small.
func (e *encoder) goMap(rv reflect.Value) bool {
	entries := make([]mapEntry, 0, rv.Len())
	for iter := rv.MapRange(); iter.Next(); {
		entries = append(entries, mapEntry{iter.Key().String(), iter.Value()})
	}
	slices.SortFunc(entries, func(a, b mapEntry) int { return CompareUTF16(a.name, b.name) })
	e.buf = append(e.buf, '{')
	n := 0
	for _, m := range entries {
		if !e.member(&n, m.name, m.v) {
			return false
		}
	}
	e.buf = append(e.buf, '}')
	return true
}

// member appends one object member, name and value, after the n already
// written, unless the value is absent; it counts what it wrote in n.
func (e *encoder) member(n *int, name string, rv reflect.Value) bool {
	mark := len(e.buf)
	if *n > 0 {
		e.buf = append(e.buf, ',')
	}
	var ok bool
	if e.buf, ok = appendCheckedString(e.buf, name, false); !ok {
		return false
	}
	e.buf = append(e.buf, ':')
	present, ok := e.goValue(rv)
	switch {
	case !ok:
		return false
	case !present:
		e.buf = e.buf[:mark]
	default:
		*n++
	}
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
