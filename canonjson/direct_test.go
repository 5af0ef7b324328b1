package canonjson_test

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// treePath is what AppendCanonicalOf must equal: ToValue, then
// AppendCanonical.
func treePath(x any) ([]byte, error) {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return nil, err
	}
	return canonjson.AppendCanonical(nil, v)
}

// sameAsTree fails t unless AppendCanonicalOf(prefix, x) appends what
// the tree path gives and refuses what it refuses, with an error of the
// same type and text.
func sameAsTree(t *testing.T, x any) {
	t.Helper()
	want, wantErr := treePath(x)
	prefix := []byte("p:")
	got, err := canonjson.AppendCanonicalOf(prefix, x)
	if (err == nil) != (wantErr == nil) || err != nil && (reflect.TypeOf(err) != reflect.TypeOf(wantErr) || err.Error() != wantErr.Error()) {
		t.Fatalf("%#v: error %v, the tree path's %v", x, err, wantErr)
	}
	if err != nil {
		if !bytes.Equal(got, prefix) {
			t.Fatalf("%#v: refused, yet returned %q, not the prefix", x, got)
		}
		return
	}
	if !bytes.Equal(got, append([]byte("p:"), want...)) {
		t.Fatalf("%#v:\n got %s\nwant p:%s", x, got, want)
	}
}

type inner struct {
	N *int64 `json:"n,omitzero"`
	S string `json:"s"`
}

type marshaled struct{ v canonjson.Value }

func (m marshaled) MarshalValue() (canonjson.Value, error) { return m.v, nil }

type failing struct{}

func (failing) MarshalValue() (canonjson.Value, error) {
	return canonjson.Value{}, errors.New("no form")
}

type Embedded struct {
	E string `json:"e,omitzero"`
}

// DupA and DupB both have member X (named by the field: vet refuses a
// repeated tag name); withDup has it twice unless one of them is zero.
type DupA struct {
	X string `json:",omitzero"`
}

type DupB struct {
	X string `json:",omitzero"`
}

type withDup struct {
	DupA
	DupB
}

type record struct {
	Embedded
	Kind    string            `json:"kind"`
	Count   int64             `json:"count,omitzero"`
	Ratio   float64           `json:"ratio,omitzero"`
	Flag    bool              `json:"flag,omitzero"`
	Inner   *inner            `json:"inner,omitzero"`
	Items   []inner           `json:"items,omitzero"`
	Tags    []string          `json:"tags"`
	Counts  map[string]int64  `json:"counts,omitzero"`
	Ptrs    map[string]*int64 `json:"ptrs,omitzero"`
	Doc     canonjson.Value   `json:"doc,omitzero"`
	Custom  marshaled         `json:"custom,omitzero"`
	Any     any               `json:"any,omitzero"`
	U       uint32            `json:"u,omitzero"`
	Arr     [2]int8           `json:"arr"`
	Ignored string            `json:"-"`
	hidden  string
}

// linked is a recursive type: its encoder is reached again while it is
// built.
type linked struct {
	Name string             `json:"name"`
	Next *linked            `json:"next,omitzero"`
	Kids map[string]*linked `json:"kids,omitzero"`
}

// TestAppendCanonicalOfMatchesTree: the direct encoding of Go values is
// byte for byte the tree path's (ToValue then AppendCanonical), member
// order (UTF-16, not UTF-8: "\uffff" sorts after "😀"), omitzero,
// absent nil members, embedded structs, nested Values and marshalers
// included, and it refuses exactly what the tree path refuses, with the
// same error.
func TestAppendCanonicalOfMatchesTree(t *testing.T) {
	n := int64(7)
	doc, err := canonjson.Decode([]byte(`{"z":[1,2.5,"\u2028"],"a":null,"b":{"😀":1,"\uffff":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	full := record{Embedded: Embedded{E: "e"}, Kind: "k\"\\\n\x01é", Count: -42, Ratio: 1e-7, Flag: true,
		Inner: &inner{N: &n, S: "s"}, Items: []inner{{S: "a"}, {N: &n}}, Tags: []string{},
		Counts: map[string]int64{"\uffff": 1, "😀": 2, "b": 3, "a": 4}, Ptrs: map[string]*int64{"x": &n, "gone": nil},
		Doc: doc, Custom: marshaled{canonjson.StringValue("c")}, Any: map[string]any{"k": []any{1.5, "v", nil}},
		U: 9, Arr: [2]int8{-1, 1}, Ignored: "no", hidden: "no"}
	for _, x := range []any{
		full, &full, record{}, &record{}, inner{S: "x"},
		"plain", 0, math.Copysign(0, -1), 1e21, 123456789.125, true, []int{1, 2}, map[string]string{}, canonjson.NullValue(), doc,
		marshaled{doc}, &marshaled{canonjson.Value{}},
		struct {
			A string `json:"a"`
			B int    `json:"a2,omitempty"`
		}{"a", 0},
		withDup{DupA{"1"}, DupB{}}, withDup{DupA{}, DupB{"2"}}, withDup{},
		linked{Name: "a", Next: &linked{Name: "b", Next: &linked{Name: "c"}}, Kids: map[string]*linked{"x": {Name: "x"}, "nil": nil}},
		[]any{marshaled{canonjson.StringValue("m")}, &full.Embedded, map[string]any{"\xff": nil}},
		map[string]*int64{"\xed\xa0\x80": nil, "k": &n},
		// refused
		withDup{DupA{"1"}, DupB{"2"}},
		nil, (*inner)(nil), canonjson.Value{}, marshaled{},
		"lone \xed\xa0\x80 surrogate", "bad \xff utf-8",
		map[string]string{"\xff": "bad name"},
		math.NaN(), math.Inf(1), int64(1) << 60, uint64(1) << 60,
		[]*inner{nil}, map[int]int{1: 1}, make(chan int), failing{},
		record{Doc: canonjson.NumberValue(math.Inf(-1))},
		record{Items: []inner{{S: "ok"}, {S: "\xed\xa0\x80"}}},
		struct {
			F func() `json:"f"`
		}{},
	} {
		sameAsTree(t, x)
	}
}

// FuzzAppendCanonicalOf: for any strings and numbers in a record, the
// direct encoding equals the tree path's, or both refuse alike.
func FuzzAppendCanonicalOf(f *testing.F) {
	f.Add("kind", "name", 1.5, int64(3), "\uffff")
	f.Add("\xed\xa0\x80", "😀", math.Inf(1), int64(1)<<60, "")
	f.Fuzz(func(t *testing.T, a, b string, x float64, n int64, key string) {
		sameAsTree(t, record{Kind: a, Ratio: x, Count: n, Inner: &inner{S: b, N: &n},
			Counts: map[string]int64{key: n, a: 1}, Tags: []string{a, b}, Any: map[string]any{b: x}})
	})
}

// BenchmarkAppendCanonicalOf: a journal-sized record encoded directly
// and through the Value tree.
func BenchmarkAppendCanonicalOf(b *testing.B) {
	n := int64(7)
	r := record{Kind: "settled", Count: 3, Inner: &inner{N: &n, S: "s"}, Tags: []string{"a", "b"},
		Counts: map[string]int64{"tokens": 1, "usd": 2}, Custom: marshaled{canonjson.StringValue("c")}}
	var buf []byte
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = canonjson.AppendCanonicalOf(buf[:0], &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v, err := canonjson.ToValue(&r)
			if err == nil {
				buf, err = canonjson.AppendCanonical(buf[:0], v)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// ptrMarshaler marshals through a pointer receiver, which a nil pointer
// cannot serve.
type ptrMarshaler struct{ s string }

func (p *ptrMarshaler) MarshalValue() (canonjson.Value, error) {
	return canonjson.StringValue(p.s), nil
}

// withMarshalerField has a member whose static type is an interface that
// implements ValueMarshaler.
type withMarshalerField struct {
	M canonjson.ValueMarshaler `json:"m"`
	N string                   `json:"n"`
}

// TestMarshalerInterfaceNilIsAbsent: a member, item or value whose static
// type is an interface implementing ValueMarshaler is absent when nil and
// when it holds a nil pointer, as a nil in an `any` is, on the tree path
// and the direct one alike; neither panics (no panic on bad input). Both
// paths panicked before: the nil interface was asserted to
// ValueMarshaler, and the nil pointer's MarshalValue was called.
func TestMarshalerInterfaceNilIsAbsent(t *testing.T) {
	for _, tc := range []struct {
		x    any
		want string // "" when refused
	}{
		{withMarshalerField{N: "a"}, `{"n":"a"}`},
		{&withMarshalerField{M: (*ptrMarshaler)(nil), N: "a"}, `{"n":"a"}`},
		{withMarshalerField{M: &ptrMarshaler{"s"}, N: "a"}, `{"m":"s","n":"a"}`},
		{map[string]canonjson.ValueMarshaler{"nil": nil, "m": marshaled{canonjson.NullValue()}}, `{"m":null}`},
		{[]canonjson.ValueMarshaler{nil}, ""},
		{[]canonjson.ValueMarshaler{(*ptrMarshaler)(nil)}, ""},
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%#v: panic %v", tc.x, r)
				}
			}()
			sameAsTree(t, tc.x)
			got, err := canonjson.AppendCanonicalOf(nil, tc.x)
			if tc.want == "" {
				var me *canonjson.MarshalError
				if !errors.As(err, &me) {
					t.Errorf("%#v: error %v, want a *MarshalError", tc.x, err)
				}
			} else if err != nil || string(got) != tc.want {
				t.Errorf("%#v: %s, %v; want %s", tc.x, got, err, tc.want)
			}
		}()
	}
}
