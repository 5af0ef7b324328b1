package canonjson_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
)

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2.5,-0,1e400,"\ud800"]}`, `"\u0000\u2028😀"`,
		`{"b":1,"a":{"😀":1,"ﬁ":2}}`, `[1.0e3,123e-20,9007199254740993]`, `{"a":1,"a":2}`, "\xff", `  null `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		// A bound on values either changes nothing or refuses the document.
		small, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{MaxValues: 8})
		var de *canonjson.DecodeError
		if err != nil && (!errors.As(err, &de) || de.Code != canonjson.CodeTooManyValues) || err == nil && !canonjson.Equal(small, v) {
			t.Fatalf("MaxValues 8 on %q: %v, %v", data, canonjson.Marshal(small), err)
		}
		// What the decoder records of member names is exactly the truth.
		if got, want := v.NamesWellFormed(), namesWellFormed(v); got != want {
			t.Fatalf("NamesWellFormed of %q = %v, a walk says %v", data, got, want)
		}
		// Marshal is lossless for every decoded value.
		back, err := canonjson.Decode(canonjson.Marshal(v))
		if err != nil || !canonjson.Equal(back, v) {
			t.Fatalf("Marshal round trip of %q: %s, %v", data, canonjson.Marshal(v), err)
		}
		c, err := canonjson.Canonical(v)
		// What the decoder learned about its strings changes nothing:
		// the same value built from the constructors encodes the same.
		if c2, err2 := canonjson.Canonical(rebuild(v)); !bytes.Equal(c, c2) || (err == nil) != (err2 == nil) {
			t.Fatalf("canonical form of %q: decoded %q (%v), rebuilt %q (%v)", data, c, err, c2, err2)
		}
		if err != nil {
			return
		}
		// Canonical form is a fixed point.
		v2, err := canonjson.Decode(c)
		if err != nil {
			t.Fatalf("canonical form %q does not decode: %v", c, err)
		}
		c2, err := canonjson.Canonical(v2)
		if err != nil || !bytes.Equal(c, c2) {
			t.Fatalf("canonical form is not a fixed point: %q vs %q (%v)", c, c2, err)
		}
	})
}

func FuzzNumber(f *testing.F) {
	for _, x := range []float64{0, 1, -1, 0.1, 1e21, 1e-7, 5e-324, math.MaxFloat64, 123e-20, 1 << 53} {
		f.Add(math.Float64bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint64) {
		x := math.Float64frombits(bits)
		if !canonjson.IsFinite(x) {
			return
		}
		s := canonjson.AppendNumber(nil, x)
		y, err := strconv.ParseFloat(string(s), 64)
		if err != nil || y != x {
			t.Fatalf("AppendNumber(%v) = %s does not round-trip (%v, %v)", x, s, y, err)
		}
		v, err := canonjson.Decode(s)
		if err != nil || v.Float() != x {
			t.Fatalf("AppendNumber(%v) = %s is not JSON that decodes to it: %v", x, s, err)
		}
	})
}

// FuzzStringUTF8 checks that a string without escapes decodes exactly
// when its bytes are valid UTF-8, and then to those bytes.
func FuzzStringUTF8(f *testing.F) {
	for _, s := range []string{"é", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xe1\x80\x80", "\xec\xbf\xbf", "\xed\x9f\xbf",
		"\xed\xa0\x80", "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe1\x80", "a\xe1\x80\x80b€ü",
		// Long enough for multiBytePrefix's four-bytes-at-a-time loop.
		"😀😀é€ab", "\xf0\x8f\xbf\xbfabcd", "\xf4\x90\x80\x80abcd", "\xed\xa0\x80abcd", "\xe0\x9f\xbfabcd",
		"\xf4\x8f\xbf\xbfab", "\xc2\x80\xc2abcd", "é\xe2\x82", "€€\xf0\x9f\x98",
		// Long enough for its eight-bytes-at-a-time pairs of four-byte sequences.
		"😀😀😀😀😀", "😀\xf4\x90\x80\x80😀", "😀\xf0\x8f\xbf\xbf😀", "\xf5\x80\x80\x80😀😀", "😀😀\xf0\x9f\x98"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if bytes.ContainsAny(s, "\"\\") || bytes.ContainsFunc(s, func(r rune) bool { return r < 0x20 }) {
			return
		}
		doc := append(append([]byte{'"'}, s...), '"')
		v, err := canonjson.Decode(doc)
		if valid := utf8.Valid(s); valid != (err == nil) {
			t.Fatalf("%q: valid UTF-8 %v, decode error %v", s, valid, err)
		}
		if err == nil && v.Str() != string(s) {
			t.Fatalf("%q decoded as %q", s, v.Str())
		}
	})
}

// rebuild copies v with the public constructors only.
func rebuild(v canonjson.Value) canonjson.Value {
	switch v.Kind() {
	case canonjson.String:
		return canonjson.StringValue(v.Str())
	case canonjson.Array:
		items := make([]canonjson.Value, v.Len())
		for i, item := range v.Items() {
			items[i] = rebuild(item)
		}
		return canonjson.ArrayValue(items)
	case canonjson.Object:
		members := make([]canonjson.Member, v.Len())
		for i, m := range v.Members() {
			members[i] = canonjson.Member{Name: m.Name, Value: rebuild(m.Value)}
		}
		return canonjson.ObjectValue(members)
	}
	return v
}

// namesWellFormed walks v and reports whether every member name is
// valid UTF-8.
func namesWellFormed(v canonjson.Value) bool {
	for _, item := range v.Items() {
		if !namesWellFormed(item) {
			return false
		}
	}
	for _, m := range v.Members() {
		if !utf8.ValidString(m.Name) || !namesWellFormed(m.Value) {
			return false
		}
	}
	return true
}

// FuzzCompareUTF16 holds CompareUTF16, shortcuts included, to a plain
// comparison of the two strings' UTF-16 code units (WTF-8 surrogates as
// themselves, any other invalid byte as U+FFFD).
func FuzzCompareUTF16(f *testing.F) {
	for _, p := range [][2]string{{"a", "b"}, {"ab", "a"}, {"", "x"}, {"\uffff", "😀"}, {"a\uffff", "a😀"},
		{"\xc3A", "\xc3B"}, {"é", "e"}, {"\xed\xa0\x80", "\uffff"}, {"x\xf0\x9f", "x\xf0\x9f\x98\x80"}, {"same", "same"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		want := slices.Compare(utf16Units(a), utf16Units(b))
		if got := canonjson.CompareUTF16(a, b); got != want {
			t.Fatalf("CompareUTF16(%q, %q) = %d, UTF-16 units compare %d", a, b, got, want)
		}
	})
}

func utf16Units(s string) []uint16 {
	var u []uint16
	for i := 0; i < len(s); {
		if s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2] >= 0x80 && s[i+2] <= 0xBF {
			u = append(u, 0xD000|uint16(s[i+1]&0x3F)<<6|uint16(s[i+2]&0x3F))
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			u = append(u, uint16(0xD800+r>>10), uint16(0xDC00+r&0x3FF))
			continue
		}
		u = append(u, uint16(r))
	}
	return u
}
