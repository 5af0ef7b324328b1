package canonjson

import (
	"math"
	"reflect"
	"testing"
	"unsafe"
)

// zeroProbe holds a member of each kind zeroTestFor tests, and of the
// kinds it leaves to reflect.
type zeroProbe struct {
	S   string
	B   bool
	I   int
	I8  int8
	I16 int16
	I32 int32
	I64 int64
	U   uint
	U8  uint8
	U16 uint16
	U32 uint32
	U64 uint64
	UP  uintptr
	P   *int
	M   map[string]int
	Sl  []int
	C   chan int
	F   func()
	UnP unsafe.Pointer
	V   Value
	Sub struct {
		_ [0]func()
		A string
		N int32
	}
	Fl  float64
	Ar  [2]int
	Any any
	Mix struct {
		A string
		F float64
	}
}

// zeroTestFor agrees with reflect.Value.IsZero on every member it
// tests, zero and not, and leaves to reflect the kinds whose zero is
// not one load (a float's -0 is not zero to IsZero, an array, an
// interface, a struct holding any of these).
func TestZeroTestForAgreesWithIsZero(t *testing.T) {
	one := 1
	ch := make(chan int)
	str, err := Decode([]byte(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]func(p *zeroProbe){
		"S":   func(p *zeroProbe) { p.S = "x" },
		"B":   func(p *zeroProbe) { p.B = true },
		"I":   func(p *zeroProbe) { p.I = -1 },
		"I8":  func(p *zeroProbe) { p.I8 = math.MinInt8 },
		"I16": func(p *zeroProbe) { p.I16 = 1 << 8 },
		"I32": func(p *zeroProbe) { p.I32 = 1 << 16 },
		"I64": func(p *zeroProbe) { p.I64 = 1 << 40 },
		"U":   func(p *zeroProbe) { p.U = 1 << 33 },
		"U8":  func(p *zeroProbe) { p.U8 = 0x80 },
		"U16": func(p *zeroProbe) { p.U16 = 0x100 },
		"U32": func(p *zeroProbe) { p.U32 = 0x80000000 },
		"U64": func(p *zeroProbe) { p.U64 = 1 << 63 },
		"UP":  func(p *zeroProbe) { p.UP = 1 },
		"P":   func(p *zeroProbe) { p.P = &one },
		"M":   func(p *zeroProbe) { p.M = map[string]int{} },
		"Sl":  func(p *zeroProbe) { p.Sl = []int{} },
		"C":   func(p *zeroProbe) { p.C = ch },
		"F":   func(p *zeroProbe) { p.F = func() {} },
		"UnP": func(p *zeroProbe) { p.UnP = unsafe.Pointer(&one) },
		"V":   func(p *zeroProbe) { p.V = str },
		"Sub": func(p *zeroProbe) { p.Sub.N = 1 },
	}
	rt := reflect.TypeFor[zeroProbe]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		z := zeroTestFor(f.Type)
		mutate, tested := set[f.Name]
		if (z != nil) != tested {
			t.Errorf("%s (%s): zeroTestFor set %v, want %v", f.Name, f.Type, z != nil, tested)
			continue
		}
		if z == nil {
			continue
		}
		for _, isSet := range []bool{false, true} {
			var p zeroProbe
			if isSet {
				mutate(&p)
			}
			want := reflect.ValueOf(&p).Elem().Field(i).IsZero()
			if got := z(unsafe.Add(unsafe.Pointer(&p), f.Offset)); got != want {
				t.Errorf("%s set %v: zero test %v, IsZero %v", f.Name, isSet, got, want)
			}
		}
	}
}

// A struct reached through a pointer (addressable: its absent members
// found by zeroTestFor) and the same struct by value (reflect) encode
// alike, and as the tree path does, with a float's -0 present.
func TestAppendCanonicalOfAddressableOrNot(t *testing.T) {
	type rec struct {
		S  string           `json:"s,omitzero"`
		N  int64            `json:"n,omitzero"`
		P  *int64           `json:"p,omitzero"`
		Sl []string         `json:"sl,omitzero"`
		M  map[string]int64 `json:"m,omitzero"`
		V  Value            `json:"v,omitzero"`
		Fl float64          `json:"fl,omitzero"`
		B  bool             `json:"b,omitzero"`
		R  string           `json:"r"`
	}
	zero := int64(0)
	for _, r := range []rec{
		{},
		{S: "a", N: -3, P: &zero, Sl: []string{}, M: map[string]int64{}, V: NumberValue(0), Fl: math.Copysign(0, -1), B: true, R: "r"},
		{Sl: []string{"x"}, M: map[string]int64{"k": 1}, Fl: 1.5},
	} {
		byPtr, err := AppendCanonicalOf(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		byVal, err := AppendCanonicalOf(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		v, err := ToValue(r)
		if err != nil {
			t.Fatal(err)
		}
		tree, err := Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(byPtr) != string(tree) || string(byVal) != string(tree) {
			t.Errorf("%+v: by pointer %s, by value %s, tree %s", r, byPtr, byVal, tree)
		}
	}
}
