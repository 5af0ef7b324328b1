package tools_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/tools"
)

func mustDecode(t testing.TB, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// orderSchema is a hand-written schema: nested objects, arrays, bounds, a
// $ref and an enum.
const orderSchema = `{
	"type": "object",
	"properties": {
		"sku": {"type": "string", "minLength": 1},
		"qty": {"type": "integer", "minimum": 1},
		"tags": {"type": "array", "items": {"type": "string"}},
		"ship": {"$ref": "#/$defs/address"},
		"speed": {"enum": ["slow", "fast"]},
		"a/b": {"type": "boolean"}
	},
	"required": ["sku", "qty"],
	"additionalProperties": false,
	"$defs": {"address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
}`

func TestValidatorCheck(t *testing.T) {
	v, err := tools.NewValidator(contract.Tool{Name: "order", InputSchema: mustDecode(t, orderSchema)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		path       string // "" and reason "" for accepted arguments
		reason     string // a part of the reason
	}{
		{"valid", `{"sku":"A-1","qty":2}`, "", ""},
		{"valid with everything", `{"sku":"A-1","qty":2,"tags":["x"],"ship":{"city":"Oslo"},"speed":"fast","a/b":true}`, "", ""},
		{"not an object", `["sku"]`, "", "are a JSON array, not a JSON object"},
		{"missing required", `{"sku":"A-1"}`, "", `missing properties: ["qty"]`},
		{"unknown member", `{"sku":"A-1","qty":2,"price":3}`, "", `unexpected additional properties ["price"]`},
		{"wrong type", `{"sku":5,"qty":2}`, "/sku", `has type "integer", want "string"`},
		{"below minimum", `{"sku":"A-1","qty":0}`, "/qty", "minimum"},
		{"not an integer", `{"sku":"A-1","qty":1.5}`, "/qty", `want "integer"`},
		{"an item", `{"sku":"A-1","qty":1,"tags":["x",3]}`, "/tags", "(an item)"},
		{"through a $ref", `{"sku":"A-1","qty":1,"ship":{}}`, "/ship", `missing properties: ["city"]`},
		{"deep through a $ref", `{"sku":"A-1","qty":1,"ship":{"city":7}}`, "/ship/city", `want "string"`},
		{"enum", `{"sku":"A-1","qty":1,"speed":"warp"}`, "/speed", "enum"},
		{"escaped name", `{"sku":"A-1","qty":1,"a/b":"yes"}`, "/a~1b", `want "boolean"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Check(mustDecode(t, tc.args))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ae, ok := errors.AsType[*tools.ArgumentsError](err)
			if !ok {
				t.Fatalf("err %v, want an *ArgumentsError", err)
			}
			if ae.Path != tc.path || !strings.Contains(ae.Reason, tc.reason) {
				t.Errorf("path %q reason %q; want path %q and a reason containing %q", ae.Path, ae.Reason, tc.path, tc.reason)
			}
		})
	}
}

// A tool without a schema still gets only objects.
func TestValidatorWithoutSchema(t *testing.T) {
	v, err := tools.NewValidator(contract.Tool{Name: "free"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args canonjson.Value
		want string
	}{
		{mustDecode(t, `{"anything":[1,2]}`), ""},
		{mustDecode(t, `"text"`), "the arguments are a JSON string, not a JSON object"},
		{canonjson.Value{}, "the arguments are absent or not JSON, not a JSON object"},
	} {
		err := v.Check(tc.args)
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.want {
				t.Errorf("Check(%s) = %q, want %q", canonjson.Marshal(tc.args), got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("Check(%s) accepted, want %q", canonjson.Marshal(tc.args), tc.want)
		}
	}
}

func TestNewValidatorRefusesBadSchemas(t *testing.T) {
	for _, tc := range []struct{ name, schema string }{
		{"not an object", `true`},
		{"wrong keyword type", `{"type":5}`},
		{"bad regexp", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`},
		{"remote reference", `{"$ref":"https://example.com/schema.json"}`},
		{"dangling reference", `{"$ref":"#/$defs/nothing"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tools.NewValidator(contract.Tool{Name: "x", InputSchema: mustDecode(t, tc.schema)}); err == nil {
				t.Error("compiled")
			}
		})
	}
}

// BenchmarkValidatorCheck is the cost of checking one call's arguments
// against a small compiled schema (a string and an optional integer).
func BenchmarkValidatorCheck(b *testing.B) {
	v, err := tools.NewValidator(contract.Tool{Name: "weather", InputSchema: mustDecode(b,
		`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city"],"additionalProperties":false}`)})
	if err != nil {
		b.Fatal(err)
	}
	args := mustDecode(b, `{"city":"Oslo","days":3}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Check(args); err != nil {
			b.Fatal(err)
		}
	}
}
