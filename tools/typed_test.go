package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/tools"
)

type address struct {
	City string `json:"city"`
	Zip  string `json:"zip,omitempty"`
}

type booking struct {
	Guest  string    `json:"guest" jsonschema:"the guest's full name"`
	Nights int       `json:"nights"`
	Note   string    `json:"note,omitzero"`
	Home   *address  `json:"home,omitempty"`
	Tags   []string  `json:"tags,omitempty"`
	Since  time.Time `json:"since,omitzero"`
}

// Schema inference: fields not tagged omitempty/omitzero are required,
// nested structs carry their own required members, unknown members are
// refused, and a jsonschema tag is the description.
func TestNewToolInfersSchema(t *testing.T) {
	tests := []struct {
		name string
		tool func() (contract.Tool, error)
		want string
	}{
		{"struct with required and optional fields", func() (contract.Tool, error) {
			return tools.NewTool("book", "", func(ctx context.Context, in booking) (string, error) { return "", nil })
		}, `{"additionalProperties":false,"properties":{` +
			`"guest":{"description":"the guest's full name","type":"string"},` +
			`"home":{"additionalProperties":false,"properties":{"city":{"type":"string"},"zip":{"type":"string"}},"required":["city"],"type":["null","object"]},` +
			`"nights":{"type":"integer"},"note":{"type":"string"},"since":{"type":"string"},` +
			`"tags":{"items":{"type":"string"},"type":["null","array"]}},` +
			`"required":["guest","nights"],"type":"object"}`},
		{"empty struct", func() (contract.Tool, error) {
			return tools.NewTool("ping", "", func(ctx context.Context, in struct{}) (string, error) { return "pong", nil })
		}, `{"additionalProperties":false,"type":"object"}`},
		{"map", func() (contract.Tool, error) {
			return tools.NewTool("labels", "", func(ctx context.Context, in map[string]string) (int, error) { return len(in), nil })
		}, `{"additionalProperties":{"type":"string"},"type":"object"}`},
		{"schema given", func() (contract.Tool, error) {
			s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"n": {Type: "integer", Minimum: jsonschema.Ptr(1.0)}}, Required: []string{"n"}}
			return tools.NewTool("count", "", func(ctx context.Context, in struct {
				N int `json:"n"`
			}) (int, error) {
				return in.N, nil
			}, tools.WithInputSchema(s))
		}, `{"properties":{"n":{"minimum":1,"type":"integer"}},"required":["n"],"type":"object"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := tc.tool()
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonjson.Canonical(tl.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("schema (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewToolRefusesInputTypes(t *testing.T) {
	tests := []struct {
		name string
		make func() (contract.Tool, error)
		want string
	}{
		{"not an object", func() (contract.Tool, error) {
			return tools.NewTool("n", "", func(ctx context.Context, in string) (string, error) { return in, nil })
		}, `not "object"`},
		{"a pointer", func() (contract.Tool, error) {
			return tools.NewTool("p", "", func(ctx context.Context, in *booking) (string, error) { return "", nil })
		}, `not "object"`},
		{"a channel field", func() (contract.Tool, error) {
			return tools.NewTool("c", "", func(ctx context.Context, in struct{ C chan int }) (string, error) { return "", nil })
		}, "inferring the input schema"},
		{"no name", func() (contract.Tool, error) {
			return tools.NewTool("", "", func(ctx context.Context, in booking) (string, error) { return "", nil })
		}, "needs a name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.make()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A call whose arguments the schema or the input type refuses never
// reaches the function; a valid one is decoded and its result encoded.
func TestNewToolRun(t *testing.T) {
	var got []booking
	book, err := tools.NewTool("book", "Book a room.", func(ctx context.Context, in booking) (map[string]any, error) {
		got = append(got, in)
		if in.Guest == "nobody" {
			return nil, &contract.ToolRefusal{Tool: "book", Reason: "no such guest"}
		}
		return map[string]any{"confirmed": true, "nights": in.Nights}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, args string
		result     string // the canonical result of a call that ran
		path       string // the refused path of a call that did not
		ran        bool
		err        string
	}{
		{"valid", `{"guest":"Ada","nights":2}`, `{"confirmed":true,"nights":2}`, "", true, ""},
		{"valid nested", `{"guest":"Ada","nights":1,"home":{"city":"Oslo"},"since":"2026-01-02T00:00:00Z"}`, `{"confirmed":true,"nights":1}`, "", true, ""},
		{"missing required", `{"guest":"Ada"}`, "", "", false, `missing properties: ["nights"]`},
		{"wrong type", `{"guest":"Ada","nights":"two"}`, "", "/nights", false, `want "integer"`},
		{"unknown member", `{"guest":"Ada","nights":2,"hidden":1}`, "", "", false, "additional properties"},
		{"nested required", `{"guest":"Ada","nights":2,"home":{}}`, "", "/home", false, `missing properties: ["city"]`},
		{"schema passes, decoding refuses", `{"guest":"Ada","nights":2,"since":"yesterday"}`, "", "", false, "do not decode"},
		{"not an object", `[1]`, "", "", false, "not a JSON object"},
		{"refused by the function", `{"guest":"nobody","nights":1}`, "", "", true, "refused: no such guest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			res, err := book.Run(context.Background(), mustDecode(t, tc.args))
			if ran := len(got) == 1; ran != tc.ran {
				t.Errorf("ran %v, want %v", ran, tc.ran)
			} else if ran && string(canonjson.Marshal(mustValue(t, got[0]))) != string(canonjson.Marshal(mustDecode(t, tc.args))) {
				t.Errorf("decoded %+v from %s", got[0], tc.args)
			}
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c, _ := canonjson.Canonical(res); string(c) != tc.result {
					t.Errorf("result %s, want %s", c, tc.result)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want one containing %q", err, tc.err)
			}
			if ae, ok := errors.AsType[*tools.ArgumentsError](err); tc.ran == ok || ok && ae.Path != tc.path {
				t.Errorf("err %#v: want an *ArgumentsError at %q exactly when the call did not run", err, tc.path)
			}
		})
	}
}

// Results encode as encoding/json encodes them, and a canonjson.Value as
// itself.
func TestNewToolResult(t *testing.T) {
	type out struct {
		At    time.Time `json:"at"`
		Empty string    `json:"empty,omitempty"`
	}
	when := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	structTool := tools.Must(tools.NewTool("t", "", func(ctx context.Context, in struct{}) (out, error) { return out{At: when}, nil }))
	valueTool := tools.Must(tools.NewTool("v", "", func(ctx context.Context, in struct{}) (canonjson.Value, error) {
		return canonjson.StringValue("as is"), nil
	}))
	for _, tc := range []struct {
		tool contract.Tool
		want string
	}{{structTool, `{"at":"2026-05-01T12:00:00Z"}`}, {valueTool, `"as is"`}} {
		res, err := tc.tool.Run(context.Background(), canonjson.ObjectValue(nil))
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := canonjson.Canonical(res); string(c) != tc.want {
			t.Errorf("%s: result %s, want %s", tc.tool.Name, c, tc.want)
		}
	}
}

// mustValue is x as the JSON encoding/json makes of it.
func mustValue(t *testing.T, x any) canonjson.Value {
	t.Helper()
	raw, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	return mustDecode(t, string(raw))
}

func TestMustPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Must did not panic on an error")
		}
	}()
	tools.Must(tools.NewTool("", "", func(ctx context.Context, in struct{}) (int, error) { return 0, nil }))
}

// BenchmarkTypedToolRun is one call of a typed tool: check, decode, run,
// encode.
func BenchmarkTypedToolRun(b *testing.B) {
	type in struct {
		City string `json:"city"`
		Days int    `json:"days,omitempty"`
	}
	type out struct {
		Sky string `json:"sky"`
	}
	tl := tools.Must(tools.NewTool("weather", "", func(ctx context.Context, in in) (out, error) { return out{Sky: "clear"}, nil }))
	args := mustDecode(b, `{"city":"Oslo","days":3}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tl.Run(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}
