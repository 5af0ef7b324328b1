package canonjson_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeWideObjectScalesLinearly doubles the member count of an object
// and requires the duplicate-name work and the bytes allocated to grow no
// more than 2.5 times: pairwise checking would quadruple the work.
func TestDecodeWideObjectScalesLinearly(t *testing.T) {
	const n = 20_000
	small, large := wideObject(n), wideObject(2*n)
	checksSmall, err := canonjson.NameChecks(small)
	if err != nil {
		t.Fatal(err)
	}
	checksLarge, err := canonjson.NameChecks(large)
	if err != nil {
		t.Fatal(err)
	}
	if r := float64(checksLarge) / float64(checksSmall); r > 2.5 {
		t.Errorf("name checks: %d members take %d, %d take %d (%.2fx)", n, checksSmall, 2*n, checksLarge, r)
	}
	decode := func(data []byte) func() {
		return func() {
			if _, err := canonjson.Decode(data); err != nil {
				t.Fatal(err)
			}
		}
	}
	bytesSmall, bytesLarge := allocated(decode(small)), allocated(decode(large))
	if r := float64(bytesLarge) / float64(bytesSmall); r > 2.5 {
		t.Errorf("allocation: %d members take %d B, %d take %d B (%.2fx)", n, bytesSmall, 2*n, bytesLarge, r)
	}
}

// TestDecodeDuplicateNamesAtEveryWidth puts a duplicate at the end of
// objects just below, at and above the width where the duplicate check
// changes method, with and without AllowDuplicateNames.
func TestDecodeDuplicateNamesAtEveryWidth(t *testing.T) {
	for _, n := range []int{1, 2, 47, 48, 49, 50, 200} {
		for _, first := range []bool{true, false} {
			obj := wideObject(n)
			dupOf := "k0"
			if !first {
				dupOf = "k" + itoa(n-1)
			}
			data := append(obj[:len(obj)-1:len(obj)-1], `,"`+dupOf+`":"last"}`...)
			_, err := canonjson.Decode(data)
			var de *canonjson.DecodeError
			if !errors.As(err, &de) || de.Code != canonjson.CodeDuplicateName || de.Pointer != "/"+dupOf {
				t.Errorf("%d members, duplicate of %s: err = %v", n, dupOf, err)
			}
			v, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{AllowDuplicateNames: true})
			if err != nil {
				t.Fatalf("%d members, duplicate of %s allowed: %v", n, dupOf, err)
			}
			if got, _ := v.Get(dupOf); v.Len() != n || got.Str() != "last" {
				t.Errorf("%d members, duplicate of %s allowed: len %d, %s = %v", n, dupOf, v.Len(), dupOf, got)
			}
		}
	}
}

func itoa(i int) string { return string(canonjson.AppendNumber(nil, float64(i))) }

// TestValueIsThreeWords keeps a decoded document's dominant cost small: a
// wide array holds one Value per item.
func TestValueIsThreeWords(t *testing.T) {
	if canonjson.ValueSize > 24 {
		t.Errorf("a Value takes %d bytes, want at most 24", canonjson.ValueSize)
	}
}

// TestValueAccessorsOfOtherKinds checks that each accessor returns its
// zero result for a Value of another kind, since kinds share storage.
func TestValueAccessorsOfOtherKinds(t *testing.T) {
	values := []canonjson.Value{{}, canonjson.NullValue(), canonjson.BoolValue(true), canonjson.NumberValue(1.5),
		canonjson.StringValue("s"), canonjson.ArrayValue([]canonjson.Value{canonjson.NullValue()}),
		canonjson.ObjectValue([]canonjson.Member{{Name: "a", Value: canonjson.NullValue()}})}
	for _, v := range values {
		k := v.Kind()
		if got := v.Bool(); got != (k == canonjson.Bool) {
			t.Errorf("%s: Bool() = %v", k, got)
		}
		if got := v.Float(); got != 0 && k != canonjson.Number {
			t.Errorf("%s: Float() = %v", k, got)
		}
		if got := v.Str(); got != "" && k != canonjson.String {
			t.Errorf("%s: Str() = %q", k, got)
		}
		if got := v.Items(); got != nil && k != canonjson.Array {
			t.Errorf("%s: Items() = %v", k, got)
		}
		if got := v.Members(); got != nil && k != canonjson.Object {
			t.Errorf("%s: Members() = %v", k, got)
		}
		if got, want := v.Len(), map[canonjson.Kind]int{canonjson.Array: 1, canonjson.Object: 1}[k]; got != want {
			t.Errorf("%s: Len() = %d, want %d", k, got, want)
		}
	}
	if v := canonjson.ArrayValue(nil); v.Items() == nil {
		t.Error("ArrayValue(nil).Items() is nil, want empty")
	}
	if v := canonjson.ObjectValue(nil); v.Members() == nil {
		t.Error("ObjectValue(nil).Members() is nil, want empty")
	}
	v, err := canonjson.Decode([]byte(`[[],{}]`))
	if err != nil || v.Items()[0].Items() == nil || v.Items()[1].Members() == nil {
		t.Errorf("decoded empty array and object: %v, %v", v, err)
	}
}

// maxInputLen is the largest input the agentrt command line reads.
const maxInputLen = 64 << 20

// TestDecodeInputAtCapStaysSmall decodes a wide array as large as the
// command line accepts. Its 32M items are refused, and the attempt
// allocates less than three times the input (one copy of it, plus the
// item stack up to DefaultMaxValues).
func TestDecodeInputAtCapStaysSmall(t *testing.T) {
	data := wideArray(maxInputLen)
	var err error
	used := allocated(func() { _, err = canonjson.Decode(data) })
	var de *canonjson.DecodeError
	if !errors.As(err, &de) || de.Code != canonjson.CodeTooManyValues {
		t.Fatalf("err = %v, want %s", err, canonjson.CodeTooManyValues)
	}
	if want := "/" + itoa(canonjson.DefaultMaxValues-1); de.Pointer != want {
		t.Errorf("pointer = %q, want %q", de.Pointer, want)
	}
	if limit := 3 * uint64(len(data)); used > limit {
		t.Errorf("decoding %d bytes allocated %d (%.1fx), want at most 3x", len(data), used, float64(used)/float64(len(data)))
	}
	t.Logf("decoding %d bytes allocated %d (%.2fx)", len(data), used, float64(used)/float64(len(data)))
}

func TestDecodeMaxValues(t *testing.T) {
	tests := []struct {
		in      string
		max     int
		pointer string // "" when the document is accepted
	}{
		{`[1,2]`, 3, ""},
		{`[1,2,3]`, 3, "/2"},
		{`{"a":{"b":[true]}}`, 4, ""},
		{`{"a":{"b":[true]}}`, 3, "/a/b/0"},
		{`{"a":1,"b":2}`, 2, "/b"},
		{`0`, 1, ""},
		{`[1,2,3]`, -1, ""},
	}
	for _, tc := range tests {
		_, err := canonjson.DecodeWith([]byte(tc.in), canonjson.DecodeOptions{MaxValues: tc.max})
		var de *canonjson.DecodeError
		switch {
		case tc.pointer == "" && err != nil:
			t.Errorf("%s with MaxValues %d: %v", tc.in, tc.max, err)
		case tc.pointer != "" && (!errors.As(err, &de) || de.Code != canonjson.CodeTooManyValues || de.Pointer != tc.pointer):
			t.Errorf("%s with MaxValues %d: err = %v, want %s at %s", tc.in, tc.max, err, canonjson.CodeTooManyValues, tc.pointer)
		}
	}
}
