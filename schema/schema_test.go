package schema_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

func decode(t *testing.T, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func issues(t *testing.T, n schema.Node, in string) []schema.Issue {
	t.Helper()
	_, err := schema.Run("T", n, decode(t, in))
	if err == nil {
		return nil
	}
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("err %T", err)
	}
	return se.Issues
}

func paths(is []schema.Issue) []string {
	var out []string
	for _, i := range is {
		out = append(out, i.Path+" "+i.Code)
	}
	return out
}

func TestObjectStrictnessAndProto(t *testing.T) {
	obj := schema.Object(schema.Req("a", schema.String()), schema.Opt("b", schema.Bool()))
	tests := []struct {
		in, want string
	}{
		{`{"a":"x"}`, ""},
		{`{"a":"x","b":null}`, "/b invalid_type"},
		{`{}`, "/a invalid_type"},
		{`{"a":"x","c":1}`, " unrecognized_keys"},
		{`[]`, " invalid_type"},
	}
	for _, tc := range tests {
		got := paths(issues(t, obj, tc.in))
		if tc.want == "" && len(got) != 0 || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
			t.Errorf("%s: %v, want %q", tc.in, got, tc.want)
		}
	}
	// "__proto__" is neither validated nor kept by an object…
	out, err := schema.Run("T", obj, decode(t, `{"a":"x","__proto__":{"b":7}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := canonjson.Canonical(out); string(c) != `{"a":"x"}` {
		t.Errorf("object output %s", c)
	}
	// …nor by a plain record, while an own-key record keeps and checks it.
	rec := schema.Record(schema.Number())
	out, _ = schema.Run("T", rec, decode(t, `{"__proto__":"x","n":1}`))
	if c, _ := canonjson.Canonical(out); string(c) != `{"n":1}` {
		t.Errorf("record output %s", c)
	}
	if got := paths(issues(t, rec.OwnKeys(), `{"__proto__":"x"}`)); len(got) != 1 || got[0] != "/__proto__ invalid_type" {
		t.Errorf("own-key record: %v", got)
	}
	if got := paths(issues(t, rec.OwnKeys(), `{"\ud800":1}`)); len(got) != 1 || got[0] != "/\xed\xa0\x80 invalid_key" {
		t.Errorf("ill-formed key: %v", got)
	}
	if got := paths(issues(t, obj.Strip(), `{"a":"x","zzz":1}`)); len(got) != 0 {
		t.Errorf("strip: %v", got)
	}
}

func TestUnionReporting(t *testing.T) {
	short := schema.String(schema.MaxLen(2))
	u := schema.Union(
		schema.Object(schema.Req("kind", schema.LiteralString("a")), schema.Req("v", short)),
		schema.Object(schema.Req("kind", schema.LiteralString("b")), schema.Req("w", schema.Number())),
	)
	// The one option whose shape matched reports its own issue.
	if got := paths(issues(t, u, `{"kind":"a","v":"long"}`)); len(got) != 1 || got[0] != "/v too_big" {
		t.Errorf("shape-matched option: %v", got)
	}
	// No option matched its shape: one invalid_union at the union.
	if got := paths(issues(t, u, `{"kind":"c"}`)); len(got) != 1 || got[0] != " invalid_union" {
		t.Errorf("no option: %v", got)
	}
	if got := paths(issues(t, u, `{"kind":"b","w":1}`)); len(got) != 0 {
		t.Errorf("second option: %v", got)
	}
	// Two options matching their shapes but failing checks: ambiguous.
	amb := schema.Union(schema.String(schema.MinLen(5)), schema.String(schema.MinLen(6)))
	if got := paths(issues(t, amb, `"abc"`)); len(got) != 1 || got[0] != " invalid_union" {
		t.Errorf("ambiguous: %v", got)
	}
}

// Options are tried quietly (their messages are never built), so the
// issues a union finally reports, at any depth, must still carry their
// full paths and messages: they come from re-running the matched option.
func TestUnionIssuesKeepMessagesWhenNested(t *testing.T) {
	inner := schema.Union(
		schema.Enum("x", "y"),
		schema.Object(schema.Req("kind", schema.LiteralString("a")), schema.Req("v", schema.String(schema.MaxLen(2)))),
	)
	outer := schema.Union(schema.Number(), schema.Object(schema.Req("in", inner)))
	got := issues(t, outer, `{"in":{"kind":"a","v":"long"}}`)
	if len(got) != 1 || got[0].Path != "/in/v" || got[0].Code != schema.CodeTooBig || got[0].Message != "must be at most 2 characters (UTF-16 units) long" {
		t.Fatalf("issues %+v, want one too_big at /in/v with its message", got)
	}
	// A fatal failure inside makes no option match: one invalid_union.
	got = issues(t, outer, `{"in":{"kind":"a","v":"ok","extra":1}}`)
	if len(got) != 1 || got[0].Path != "" || got[0].Code != schema.CodeInvalidUnion || got[0].Message != "matches none of the accepted shapes" {
		t.Fatalf("issues %+v, want one invalid_union at the root with its message", got)
	}
	// Outside any union the same object reports its unknown member.
	obj := schema.Object(schema.Req("kind", schema.LiteralString("a")), schema.Req("v", schema.String()))
	got = issues(t, obj, `{"kind":"a","v":"ok","extra":1}`)
	if len(got) != 1 || got[0].Message != `unknown member "extra"` {
		t.Fatalf("issues %+v, want the unknown member named", got)
	}
}

func TestDiscriminated(t *testing.T) {
	d := schema.Discriminated("kind", map[string]schema.Node{
		"x": schema.Object(schema.Req("kind", schema.LiteralString("x")), schema.Req("n", schema.Number(schema.Int))),
	})
	if got := paths(issues(t, d, `{"kind":"y"}`)); len(got) != 1 || got[0] != "/kind invalid_union" {
		t.Errorf("bad discriminator: %v", got)
	}
	if got := paths(issues(t, d, `{"kind":"x","n":1.5}`)); len(got) != 1 || got[0] != "/n invalid_type" {
		t.Errorf("inner: %v", got)
	}
}

func TestRefinementsRunOnlyWithoutFatalIssues(t *testing.T) {
	ran := 0
	obj := schema.Object(schema.Req("n", schema.Number(schema.Positive))).Refine(func(c *schema.Context, v canonjson.Value) { ran++ })
	issues(t, obj, `{"n":"x"}`) // fatal: type
	if ran != 0 {
		t.Error("refinement ran after a fatal issue")
	}
	issues(t, obj, `{"n":-1}`) // a failed check is not fatal
	if ran != 1 {
		t.Error("refinement did not run after a failed check")
	}
}

func TestNumbers(t *testing.T) {
	n := schema.Number(schema.Int, schema.Positive)
	for in, ok := range map[string]bool{`1`: true, `1.0e3`: true, `9007199254740991`: true, `9007199254740992`: false,
		`0`: false, `-0`: false, `1.5`: false, `1e400`: false, `"1"`: false} {
		if got := len(issues(t, n, in)) == 0; got != ok {
			t.Errorf("%s: ok=%v", in, got)
		}
	}
}

func TestStringRulesCountUTF16(t *testing.T) {
	n := schema.String(schema.MinLen(2), schema.MaxLen(2))
	for in, ok := range map[string]bool{`"ab"`: true, `"😀"`: true, `"a"`: false, `"😀a"`: false, `"\ud800\ud800"`: true} {
		if got := len(issues(t, n, in)) == 0; got != ok {
			t.Errorf("%s: ok=%v", in, got)
		}
	}
	if got := len(issues(t, schema.String(schema.Trimmed), `"\u0085x"`)); got != 0 {
		t.Error("U+0085 is not JavaScript whitespace")
	}
	if got := len(issues(t, schema.String(schema.Trimmed), `"\ufeffx"`)); got != 1 {
		t.Error("U+FEFF is JavaScript whitespace")
	}
}

func TestTransform(t *testing.T) {
	n := schema.Transform(schema.String(), func(v canonjson.Value) canonjson.Value { return canonjson.StringValue("T:" + v.Str()) })
	obj := schema.Object(schema.Req("s", n))
	out, err := schema.Run("T", obj, decode(t, `{"s":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := canonjson.Canonical(out); string(c) != `{"s":"T:x"}` {
		t.Errorf("transform output %s", c)
	}
	in := decode(t, `{"s":"y"}`)
	schema.Run("T", obj, in)
	if s, _ := in.Get("s"); s.Str() != "y" {
		t.Error("transform modified its input")
	}
}

func TestDecodeErrorsAreSchemaErrors(t *testing.T) {
	_, err := schema.Decode("T", []byte(`{"a":1,"a":2}`))
	var se *schema.Error
	if !errors.As(err, &se) || se.Issues[0].Path != "/a" || se.Issues[0].Code != "duplicate_key" {
		t.Fatalf("err = %v", err)
	}
}

func TestISODateTime(t *testing.T) {
	for s, ok := range map[string]bool{
		"2026-08-01T20:00:00.000Z": true, "2026-08-01T20:00Z": true, "2026-08-01T20:00:59Z": true,
		"2024-02-29T00:00:00Z": true, "2023-02-29T00:00:00Z": false, "2000-02-29T00:00Z": true, "1900-02-29T00:00Z": false,
		"2026-08-01T20:00:00.1234567890Z": true, "2026-08-01T20:00:00+00:00": false, "2026-08-01T20:00:00": false,
		"2026-08-01 20:00:00Z": false, "2026-13-01T20:00Z": false, "2026-04-31T20:00Z": false, "2026-08-01T24:00Z": false,
		"2026-08-01T20:60Z": false, "2026-08-01T20:00:60Z": false, "2026-08-01T20:00:00.Z": false, "2026-8-01T20:00Z": false,
		"2026-08-01t20:00Z": false, "2026-08-01T20:00z": false, "": false, "2026-08-01T2:00Z": false,
	} {
		if got := schema.IsISODateTime(s); got != ok {
			t.Errorf("IsISODateTime(%q) = %v", s, got)
		}
	}
}

// The reference's .int(): a fraction aborts (no later rule, no union
// shape match); an integer past 2^53 is only a range check.
func TestIntFatality(t *testing.T) {
	n := schema.Number(schema.Int, schema.Positive)
	if got := paths(issues(t, n, `-1.5`)); len(got) != 1 || got[0] != " invalid_type" {
		t.Errorf("fraction: %v", got)
	}
	if got := paths(issues(t, n, `-9007199254740992`)); len(got) != 2 {
		t.Errorf("unsafe negative integer: %v (range and sign are both reported)", got)
	}
	u := schema.Union(schema.Number(schema.Int), schema.Number(schema.Max(1)))
	if got := paths(issues(t, u, `2.5`)); len(got) != 1 || got[0] != " too_big" {
		t.Errorf("a fraction must not count as the Int option's shape match: %v", got)
	}
}

// TestRunKeepsIssueSlicesApart checks the recycling of issue slices by
// Run: a passing run whose union rewound a failed option leaves its slice
// for the next run, but the issues of a failed run belong to its Error
// and no later run may write over them.
func TestRunKeepsIssueSlicesApart(t *testing.T) {
	n := schema.Array(schema.Union(schema.Number(), schema.String()))
	_, err := schema.Run("T", n, decode(t, `[true, 1, {}]`))
	var first *schema.Error
	if !errors.As(err, &first) {
		t.Fatalf("err = %v, want *schema.Error", err)
	}
	want := paths(first.Issues)
	if len(want) != 2 {
		t.Fatalf("issues = %v, want two", want)
	}
	for range 100 {
		// Each string item is tried as a number first: a rewound issue.
		if _, err := schema.Run("T", n, decode(t, `["a", "b", 2]`)); err != nil {
			t.Fatal(err)
		}
		if is := issues(t, n, `[1, 2, null]`); len(is) != 1 || is[0].Path != "/2" {
			t.Fatalf("issues of [1, 2, null] = %v", paths(is))
		}
	}
	if got := paths(first.Issues); !slices.Equal(got, want) {
		t.Errorf("the first error's issues changed: %v, were %v", got, want)
	}
}

// TestObjectFieldLookup covers both ways an object node finds a member's
// field: by comparing names (few fields) and through its index (many).
func TestObjectFieldLookup(t *testing.T) {
	for _, count := range []int{2, 3, 8, 9, 12, 40} {
		var fields []schema.Field
		for i := range count {
			fields = append(fields, schema.Opt(strconv.Itoa(i)+"k", schema.Number()))
		}
		n := schema.Object(fields...)
		last := strconv.Itoa(count-1) + "k"
		tests := []struct {
			in   string
			want []string
		}{
			{`{"0k":1,"` + last + `":2}`, nil},
			{`{"` + last + `":"x"}`, []string{"/" + last + " invalid_type"}},
			{`{"0":1}`, []string{" unrecognized_keys"}},
			{`{"0kk":1,"k":2}`, []string{" unrecognized_keys"}},
		}
		for _, tt := range tests {
			if got := paths(issues(t, n, tt.in)); !slices.Equal(got, tt.want) {
				t.Errorf("%d fields, %s: issues %v, want %v", count, tt.in, got, tt.want)
			}
		}
	}
}

// TestObjectRequiredFields checks the count that spares the search for
// missing required fields: a name given twice counts once.
func TestObjectRequiredFields(t *testing.T) {
	n := schema.Object(schema.Req("a", schema.Number()), schema.Opt("c", schema.Number()), schema.Req("b", schema.Number()))
	for _, tt := range []struct {
		name string
		v    canonjson.Value
		want []string
	}{
		{"both", decode(t, `{"b":2,"a":1}`), nil},
		{"with the optional one", decode(t, `{"a":1,"c":3,"b":2}`), nil},
		{"one missing", decode(t, `{"a":1,"c":3}`), []string{"/b invalid_type"}},
		{"both missing", decode(t, `{}`), []string{"/a invalid_type", "/b invalid_type"}},
		{"one given twice", canonjson.ObjectValue([]canonjson.Member{
			{Name: "a", Value: canonjson.NumberValue(1)}, {Name: "a", Value: canonjson.NumberValue(2)}}), []string{"/b invalid_type"}},
	} {
		var got []string
		if _, err := schema.Run("T", n, tt.v); err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("%s: err %T", tt.name, err)
			}
			got = paths(se.Issues)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: issues %v, want %v", tt.name, got, tt.want)
		}
	}
}
