package canonjson_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
)

// ECMAScript Number::toString spellings recorded from Node.js 20 for the
// float64 bit patterns beside them (little-endian hex).
var esNumbers = [][2]string{
	{"1", "000000000000f03f"}, {"-1", "000000000000f0bf"}, {"0.1", "9a9999999999b93f"},
	{"0.5", "000000000000e03f"}, {"1.5", "000000000000f83f"}, {"100", "0000000000005940"},
	{"1e+21", "50efe2d6e41a4b44"}, {"100000000000000000000", "408cb5781daf1544"},
	{"123456789012345680000", "dabc047e3ac51a44"}, {"1e-7", "48afbc9af2d77a3e"},
	{"0.000001", "8dedb5a0f7c6b03e"}, {"0.0000012345", "71d2bf1a23b6b43e"},
	{"1.23e-18", "8e8b14c282b0363c"}, {"9007199254740992", "0000000000004043"},
	{"1152921504606847000", "000000000000b043"}, {"18446744073709552000", "000000000000f043"},
	{"-1.1805916207174113e+21", "00000000000050c4"}, {"1.7976931348623157e+308", "ffffffffffffef7f"},
	{"5e-324", "0100000000000000"}, {"2.2250738585072014e-308", "0000000000001000"},
	{"0.30000000000000004", "343333333333d33f"}, {"0.3333333333333333", "555555555555d53f"},
	{"-0.6666666666666666", "555555555555e5bf"}, {"1000000000000000", "00003426f56b0c43"},
	{"10000000000000000", "0080e03779c34143"}, {"1.5e+300", "355800662deb417e"},
	{"-1e-300", "59f3f8c21f6ea581"}, {"4.35", "6666666666661140"}, {"123456.789", "c976be9f0c24fe40"},
	{"0.00001", "f168e388b5f8e43e"}, {"0.0000012", "76830df4f521b43e"}, {"100.25", "0000000000105940"},
	{"1.5e-323", "0300000000000000"}, {"1e+22", "92d54d06cff08044"}, {"-1e+21", "50efe2d6e41a4bc4"},
}

func TestAppendNumberMatchesECMAScript(t *testing.T) {
	for _, tc := range esNumbers {
		raw, err := hex.DecodeString(tc[1])
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(raw))
		if got := string(canonjson.AppendNumber(nil, f)); got != tc[0] {
			t.Errorf("AppendNumber(%v) = %s, want %s", f, got, tc[0])
		}
	}
	if got := string(canonjson.AppendNumber(nil, math.Copysign(0, -1))); got != "0" {
		t.Errorf("-0 = %s, want 0", got)
	}
}

func TestCanonicalWorkedExamples(t *testing.T) {
	// spec/profile.md §C.3 E1–E12, each decoded from JSON text.
	tests := []struct {
		id, in, canonical, digest string
	}{
		{"E1", `{}`, `{}`, "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		{"E2", `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`,
			`{"harness":"cli-base","model":{"default":"scripted/note-writer","provider":"scripted"},"name":"note-writer"}`,
			"sha256:238e9708212a6adfd323413460efe68b6cbd8ad5df3a8ac6b4826e25232cb161"},
		{"E3", `{"prompt":{"appendSystemPrompt":"Line1\nTab\t\"q\" \\ \u0007 é \u2028 \u007f 😀"},"model":{"maxTotalOutputTokens":4096,"maxVisibleOutputTokens":1024,"metadata":{"big":1e21,"small":1e-7,"frac":0.1,"neg0":-0,"int":100,"exp":123e-20,"max":9007199254740993}}}`,
			"{\"model\":{\"maxTotalOutputTokens\":4096,\"maxVisibleOutputTokens\":1024,\"metadata\":{\"big\":1e+21,\"exp\":1.23e-18,\"frac\":0.1,\"int\":100,\"max\":9007199254740992,\"neg0\":0,\"small\":1e-7}},\"prompt\":{\"appendSystemPrompt\":\"Line1\\nTab\\t\\\"q\\\" \\\\ \\u0007 é \u2028 \x7f 😀\"}}",
			"sha256:27d0c1b4087cff46a64c7025df2dd6934f3442da3050ff2a36328bcff42d9a09"},
		{"E4", `{"metadata":{"z":1,"é":2,"😀":3,"ﬁ":4,"A":5,"a":6,"10":7,"9":8,"":9}}`,
			`{"metadata":{"":9,"10":7,"9":8,"A":5,"a":6,"z":1,"é":2,"😀":3,"ﬁ":4}}`,
			"sha256:0db8850620f84d37b06c2238a1b93e18075b1d339c8610882938746d5107413e"},
		{"E7a", `{"metadata":{"a":null}}`, `{"metadata":{"a":null}}`, "sha256:e7058fdf5e4a4c7b1b62600c1c7312c432cd8e502c7ee0664fa3f2f3d9bc4958"},
		{"E7b", `{"metadata":{}}`, `{"metadata":{}}`, "sha256:8b05318da1486078fe860184c4397a05fa4869eb85fe5e668247a21b762a1123"},
		{"E8", `{"metadata":{"__proto__":{"a":1}}}`, `{"metadata":{"__proto__":{"a":1}}}`, "sha256:d37c9aa364bc9f62c87df55a3daea91e97699aeb2f47da994ef481e65cc4ff54"},
		{"E10a", `{"model":{"maxReasoningTokens":100.0}}`, `{"model":{"maxReasoningTokens":100}}`, "sha256:e7a648180594043abfef4323d043886c6f15c2f21f1858e71d7f8966753b280e"},
		{"E10b", `{"model":{"maxReasoningTokens":1E2}}`, `{"model":{"maxReasoningTokens":100}}`, "sha256:e7a648180594043abfef4323d043886c6f15c2f21f1858e71d7f8966753b280e"},
		{"E11", `{"tools":{"b":true,"10":false,"2":true}}`, `{"tools":{"10":false,"2":true,"b":true}}`, "sha256:77649f800d88c8182bb4cf5ecdd9460447d40c85ced47ea538e3acf1cb920bc0"},
		{"E12", `{"metadata":{"s":"\u00e9","t":"\u0000\u001f\u007f"}}`, "{\"metadata\":{\"s\":\"é\",\"t\":\"\\u0000\\u001f\x7f\"}}", "sha256:e976fdfd91949fe32681acaeceeb502b939da43c1c63f10ab5b748d74cf77008"},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			v, err := canonjson.Decode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonjson.Canonical(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.canonical {
				t.Errorf("canonical\n got %s\nwant %s", got, tc.canonical)
			}
			if d := canonjson.DigestBytes(got); d != tc.digest {
				t.Errorf("digest %s, want %s", d, tc.digest)
			}
		})
	}
}

// TestVectorCanonicalForms checks the reference's canonical texts, of every
// vector kind: each is a fixed point of Decode+Canonical and hashes to the
// reference's digest. Raw-text cases (number spellings, escapes, UTF-16 key
// order) must canonicalize to exactly the reference's bytes. The reference
// canonicalizes its validator's output (which drops unknown members of
// loose objects and "__proto__" members), so input-to-canonical agreement
// for other cases is checked by each kind's schema tests.
func TestVectorCanonicalForms(t *testing.T) {
	kinds, err := vectors.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	fixed, raw := 0, 0
	for _, kind := range kinds {
		k, err := vectors.Load(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range k.Cases {
			if c.Canonical == "" {
				continue
			}
			v, err := canonjson.Decode([]byte(c.Canonical))
			if err != nil {
				t.Errorf("%s/%s: decode canonical: %v", kind, c.Name, err)
				continue
			}
			got, err := canonjson.Canonical(v)
			if err != nil || string(got) != c.Canonical {
				t.Errorf("%s/%s: not a fixed point (%v):\n got %s\nwant %s", kind, c.Name, err, got, c.Canonical)
				continue
			}
			if d := canonjson.DigestBytes(got); d != c.Digest {
				t.Errorf("%s/%s: digest %s, want %s", kind, c.Name, d, c.Digest)
			}
			fixed++
			if c.Text == nil {
				continue
			}
			in, err := canonjson.Decode(c.Text)
			if err != nil {
				t.Errorf("%s/%s: decode: %v", kind, c.Name, err)
				continue
			}
			if got, err := canonjson.Canonical(in); err != nil || string(got) != c.Canonical {
				t.Errorf("%s/%s: canonical of raw text (%v):\n got %s\nwant %s", kind, c.Name, err, got, c.Canonical)
			}
			raw++
		}
	}
	if fixed < 1000 || raw == 0 {
		t.Fatalf("only %d canonical texts and %d raw cases checked; is the vector set complete?", fixed, raw)
	}
	t.Logf("%d canonical texts and %d raw-text cases agree", fixed, raw)
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name, in, code, pointer string
	}{
		{"empty", ``, canonjson.CodeSyntax, ""},
		{"duplicate", `{"a":{"b":1,"b":2}}`, canonjson.CodeDuplicateName, "/a/b"},
		{"trailing", `{} {}`, canonjson.CodeTrailingData, ""},
		{"invalid utf8", "{\"a\":[\"ok\",\"\xff\"]}", canonjson.CodeInvalidUTF8, "/a/1"},
		{"encoded surrogate bytes", "\"\xed\xa0\x80\"", canonjson.CodeInvalidUTF8, ""},
		{"bad escape", `{"a":"\x"}`, canonjson.CodeSyntax, "/a"},
		{"short unicode escape", `"\u12"`, canonjson.CodeSyntax, ""},
		{"raw control", "\"a\nb\"", canonjson.CodeSyntax, ""},
		{"leading zero", `[01]`, canonjson.CodeSyntax, "/0"},
		{"plus", `[+1]`, canonjson.CodeSyntax, "/0"},
		{"bare fraction", `[.5]`, canonjson.CodeSyntax, "/0"},
		{"dangling point", `[1.]`, canonjson.CodeSyntax, "/0"},
		{"dangling exponent", `[1e]`, canonjson.CodeSyntax, "/0"},
		{"trailing comma", `[1,]`, canonjson.CodeSyntax, "/1"},
		{"single quotes", `{'a':1}`, canonjson.CodeSyntax, ""},
		{"NaN", `NaN`, canonjson.CodeSyntax, ""},
		{"bom", "\ufeff{}", canonjson.CodeSyntax, ""},
		{"unterminated", `{"a":"b`, canonjson.CodeSyntax, "/a"},
		{"tilde pointer", `{"a/b~":[1,}`, canonjson.CodeSyntax, "/a~1b~0/1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := canonjson.Decode([]byte(tc.in))
			var de *canonjson.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *DecodeError", err)
			}
			if de.Code != tc.code || de.Pointer != tc.pointer {
				t.Errorf("got code %q at %q (%v), want %q at %q", de.Code, de.Pointer, de, tc.code, tc.pointer)
			}
		})
	}
}

func TestDecodeDepthLimit(t *testing.T) {
	deep := make([]byte, 0, 2*1001)
	for range 1001 {
		deep = append(deep, '[')
	}
	for range 1001 {
		deep = append(deep, ']')
	}
	_, err := canonjson.Decode(deep)
	var de *canonjson.DecodeError
	if !errors.As(err, &de) || de.Code != canonjson.CodeTooDeep {
		t.Fatalf("err = %v, want too_deep", err)
	}
	if _, err := canonjson.DecodeWith(deep, canonjson.DecodeOptions{MaxDepth: 2000}); err != nil {
		t.Fatalf("with MaxDepth 2000: %v", err)
	}
}

func TestAllowDuplicateNamesKeepsLast(t *testing.T) {
	v, err := canonjson.DecodeWith([]byte(`{"name":"a","name":"b"}`), canonjson.DecodeOptions{AllowDuplicateNames: true})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := canonjson.Canonical(v)
	if string(got) != `{"name":"b"}` {
		t.Errorf("got %s", got)
	}
	// spec/profile.md E9.
	if d := canonjson.DigestBytes(got); d != "sha256:4990ff99be213c83fdc8397bfca008af54807ffa699ce10bb132bada6347fbf3" {
		t.Errorf("digest %s", d)
	}
}

func TestLoneSurrogatesArePreservedNotReplaced(t *testing.T) {
	v, err := canonjson.Decode([]byte(`{"\ud800":"a\udc00b","ok":"\ud83d\ude00"}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.Members()
	if canonjson.IsWellFormed(m[0].Name) || canonjson.IsWellFormed(m[0].Value.Str()) {
		t.Fatal("lone surrogate decoded as a well-formed string (U+FFFD substitution?)")
	}
	if got := canonjson.UTF16Len(m[0].Value.Str()); got != 3 {
		t.Errorf("UTF16Len = %d, want 3", got)
	}
	if m[1].Value.Str() != "😀" {
		t.Errorf("pair decoded as %q", m[1].Value.Str())
	}
	_, err = canonjson.Canonical(v)
	var ce *canonjson.CanonicalError
	if !errors.As(err, &ce) || ce.Pointer != "" {
		t.Fatalf("Canonical err = %v, want CanonicalError at the root member name", err)
	}
	// Marshal writes the surrogates back as escapes, losslessly.
	back, err := canonjson.Decode(canonjson.Marshal(v))
	if err != nil || !canonjson.Equal(back, v) {
		t.Fatalf("Marshal round trip: %s, %v", canonjson.Marshal(v), err)
	}
}

func TestCanonicalRefuses(t *testing.T) {
	tests := []struct {
		name    string
		v       canonjson.Value
		pointer string
	}{
		{"inf", canonjson.ObjectValue([]canonjson.Member{{Name: "x", Value: canonjson.NumberValue(math.Inf(1))}}), "/x"},
		{"nan", canonjson.ArrayValue([]canonjson.Value{canonjson.NumberValue(math.NaN())}), "/0"},
		{"absent", canonjson.Value{}, ""},
		{"duplicate", canonjson.ObjectValue([]canonjson.Member{{Name: "a", Value: canonjson.NullValue()}, {Name: "a", Value: canonjson.NullValue()}}), ""},
		{"lone surrogate", canonjson.StringValue(canonjson.FromUTF16([]uint16{'a', 0xDBFF})), ""},
		// The pointer is built as the error unwinds: innermost token last.
		{"deep", canonjson.ObjectValue([]canonjson.Member{
			{Name: "z", Value: canonjson.NullValue()},
			{Name: "a", Value: canonjson.ArrayValue([]canonjson.Value{
				canonjson.NullValue(),
				canonjson.ObjectValue([]canonjson.Member{{Name: "b~/", Value: canonjson.ArrayValue([]canonjson.Value{
					canonjson.NumberValue(1), canonjson.NumberValue(math.Inf(-1))})}}),
			})},
		}), "/a/1/b~0~1/1"},
		{"deep duplicate", canonjson.ArrayValue([]canonjson.Value{canonjson.NullValue(), canonjson.ObjectValue([]canonjson.Member{
			{Name: "a", Value: canonjson.NullValue()}, {Name: "a", Value: canonjson.NullValue()}})}), "/1"},
	}
	for _, tc := range tests {
		_, err := canonjson.Canonical(tc.v)
		var ce *canonjson.CanonicalError
		if !errors.As(err, &ce) || ce.Pointer != tc.pointer {
			t.Errorf("%s: err = %v, want CanonicalError at %q", tc.name, err, tc.pointer)
		}
		// Check and Digest refuse exactly what Canonical refuses, at the
		// same place.
		err = canonjson.Check(tc.v)
		if !errors.As(err, &ce) || ce.Pointer != tc.pointer {
			t.Errorf("Check %s: err = %v, want CanonicalError at %q", tc.name, err, tc.pointer)
		}
		_, err = canonjson.Digest(tc.v)
		if !errors.As(err, &ce) || ce.Pointer != tc.pointer {
			t.Errorf("Digest %s: err = %v, want CanonicalError at %q", tc.name, err, tc.pointer)
		}
	}
	big := make([]canonjson.Member, 300) // past the flush threshold and the in-place sort
	for i := range big {
		big[i] = canonjson.Member{Name: fmt.Sprintf("m%03d", i), Value: canonjson.StringValue(strings.Repeat("x", 40))}
	}
	if err := canonjson.Check(canonjson.ObjectValue(big)); err != nil {
		t.Errorf("Check of a large valid object: %v", err)
	}
}

func TestCompareUTF16(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "b", -1}, {"b", "a", 1}, {"a", "ab", -1},
		{"😀", "ﬁ", -1}, // U+1F600 is D83D DE00, before U+FB01
		{"\uffff", "😀", 1},
		{"é", "😀", -1},
		{"x😀", "x\ue000", -1},
		{canonjson.FromUTF16([]uint16{0xD83D}), "😀", -1}, // lone high surrogate is a prefix
		{canonjson.FromUTF16([]uint16{0xD83D, 'a'}), "😀", -1},
	}
	for _, tc := range tests {
		if got := canonjson.CompareUTF16(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareUTF16(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := canonjson.CompareUTF16(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareUTF16(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestTrimJS(t *testing.T) {
	tests := []struct{ in, want string }{
		{" a ", "a"}, {"\u0085a\u0085", "\u0085a\u0085"}, {"\ufeffa", "a"}, {"\u00a0a\u3000", "a"},
		{"\u2028\u2029", ""}, {"a\u200b", "a\u200b"},
	}
	for _, tc := range tests {
		if got := canonjson.TrimJS(tc.in); got != tc.want {
			t.Errorf("TrimJS(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPointers(t *testing.T) {
	if got := canonjson.Pointer("a/b", "c~d", "0"); got != "/a~1b/c~0d/0" {
		t.Errorf("Pointer = %q", got)
	}
	tokens, ok := canonjson.SplitPointer("/a~1b/c~0d/0")
	if !ok || len(tokens) != 3 || tokens[0] != "a/b" || tokens[1] != "c~d" {
		t.Errorf("SplitPointer = %q, %v", tokens, ok)
	}
	if _, ok := canonjson.SplitPointer("/a~2"); ok {
		t.Error("SplitPointer accepted ~2")
	}
	v, _ := canonjson.Decode([]byte(`{"a/b":[1,{"c":true}]}`))
	if got, ok := canonjson.Resolve(v, "/a~1b/1/c"); !ok || !got.Bool() {
		t.Errorf("Resolve = %v, %v", got, ok)
	}
	if _, ok := canonjson.Resolve(v, "/a~1b/01"); ok {
		t.Error("Resolve accepted a leading-zero index")
	}
}

func TestIsDigest(t *testing.T) {
	good := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for s, want := range map[string]bool{
		good: true, good[:len(good)-1]: false, "SHA256:" + good[7:]: false,
		"sha256:" + "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef": false,
		good + "0": false, "": false,
	} {
		if got := canonjson.IsDigest(s); got != want {
			t.Errorf("IsDigest(%q) = %v", s, got)
		}
	}
}

// TestNamesWellFormed holds what Decode records about member names to the
// documents it read, and a constructed value to "unknown".
func TestNamesWellFormed(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want bool
	}{
		{"scalar", `"\ud800"`, true},
		{"empty object", `{}`, true},
		{"empty array", `[]`, true},
		{"plain names", `{"a":{"b":[{"c":1}]},"é😀":2}`, true},
		{"escaped well-formed names", `{"\u00e9\ud83d\ude00":{"\"\\":1}}`, true},
		{"lone surrogate in a string value only", `{"a":"\ud800"}`, true},
		{"lone surrogate name at the top", `{"\ud800":1}`, false},
		{"lone surrogate name deep in an array", `[1,[{"a":{"\udc00x":null}}]]`, false},
		{"ill-formed name after a well-formed one", `{"a":1,"b":{"c":{},"\udbff":2}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := canonjson.Decode([]byte(tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := v.NamesWellFormed(); got != tt.want {
				t.Errorf("NamesWellFormed() = %v, want %v", got, tt.want)
			}
		})
	}
	built := canonjson.ObjectValue([]canonjson.Member{{Name: "a", Value: canonjson.NullValue()}})
	if built.NamesWellFormed() {
		t.Error("a constructed object claims checked names")
	}
	if canonjson.ArrayValue(nil).NamesWellFormed() {
		t.Error("a constructed array claims checked names")
	}
}

// TestCanonicalPlainNames holds the encoder's shortcut for names decoded
// without escapes to the checked path that constructed values take.
func TestCanonicalPlainNames(t *testing.T) {
	for _, doc := range []string{
		`{"b":1,"a":{"é":[{"z":1,"y":2}],"😀":3}}`,
		`{"\u0041":1,"\t":{"\"q\"":2},"plain":3}`,
		`{"a":{"\ud800":1}}`,
		`{"a\u0000b":{"c":1}}`,
	} {
		v, err := canonjson.Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		got, gotErr := canonjson.Canonical(v)
		want, wantErr := canonjson.Canonical(rebuild(v))
		if string(got) != string(want) || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: decoded %q (%v), constructed %q (%v)", doc, got, gotErr, want, wantErr)
		}
	}
}

// TestDigestSpelling holds the table-driven hex spelling of digests to
// encoding/hex for inputs whose digests hold every byte value: always
// "sha256:" and 64 lowercase hex digits (PKG-09).
func TestDigestSpelling(t *testing.T) {
	seen := map[byte]bool{}
	for i := 0; len(seen) < 256; i++ {
		b := []byte(strconv.Itoa(i))
		sum := sha256.Sum256(b)
		for _, c := range sum {
			seen[c] = true
		}
		if got, want := canonjson.DigestBytes(b), "sha256:"+hex.EncodeToString(sum[:]); got != want {
			t.Fatalf("DigestBytes(%q) = %s, want %s", b, got, want)
		}
		v := canonjson.StringValue(string(b))
		c, err := canonjson.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := canonjson.Digest(v); err != nil || got != canonjson.DigestBytes(c) {
			t.Fatalf("Digest(%q) = %s, %v; want %s", b, got, err, canonjson.DigestBytes(c))
		}
	}
}

// TestIdentical separates the very same value from an equal one.
func TestIdentical(t *testing.T) {
	v, err := canonjson.Decode([]byte(`{"a":[1,"x"],"b":"y"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := v.Get("b")
	x := string([]byte("y")) // the same text elsewhere in memory
	tests := []struct {
		name             string
		a, b             canonjson.Value
		identical, equal bool
	}{
		{"a decoded object and its copy", v, v, true, true},
		{"a member and itself", b, b, true, true},
		{"the same text elsewhere", b, canonjson.StringValue(x), false, true},
		{"numbers", canonjson.NumberValue(1.5), canonjson.NumberValue(1.5), true, true},
		{"0 and -0", canonjson.NumberValue(0), canonjson.NumberValue(math.Copysign(0, -1)), false, true},
		{"booleans", canonjson.BoolValue(true), canonjson.BoolValue(true), true, true},
		{"true and false", canonjson.BoolValue(true), canonjson.BoolValue(false), false, false},
		{"null", canonjson.NullValue(), canonjson.NullValue(), true, true},
		{"equal arrays apart", canonjson.ArrayValue([]canonjson.Value{canonjson.NullValue()}), canonjson.ArrayValue([]canonjson.Value{canonjson.NullValue()}), false, true},
		{"kinds", canonjson.NullValue(), canonjson.BoolValue(false), false, false},
	}
	for _, tt := range tests {
		if got := tt.a.Identical(tt.b); got != tt.identical {
			t.Errorf("%s: Identical = %v, want %v", tt.name, got, tt.identical)
		}
		if got := canonjson.Equal(tt.a, tt.b); got != tt.equal {
			t.Errorf("%s: Equal = %v, want %v", tt.name, got, tt.equal)
		}
	}
}
