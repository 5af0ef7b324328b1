package profile_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// TestConfigStringRules pins the public config value and secret reference
// key rules (checklist ENP-01, ENP-03; spec/profile.md §G.4) on decoded
// strings, whose well-formedness the decoder records, and on the same
// strings set in Go, which are checked from their text.
func TestConfigStringRules(t *testing.T) {
	const (
		publicMsg = "public config must be well-formed, free of control characters and must not look like a credential"
		keyMsg    = "a secret reference key must be a public, non-blank, non-credential name"
		path      = "/hooks/pre/0/env/FOO"
	)
	tests := []struct {
		name   string
		config string // the FOO config value, as JSON
		goStr  string // the same offending string, set in Go ("" for none)
		isKey  bool
		want   []schema.Issue
	}{
		{name: "plain public value", config: `{"kind":"public","value":"hello é"}`},
		{name: "escaped well-formed public value", config: `{"kind":"public","value":"\u00e9\ud83d\ude00"}`},
		{name: "lone surrogate public value", config: `{"kind":"public","value":"a\ud800"}`, goStr: "a\xed\xa0\x80",
			want: []schema.Issue{{Path: path + "/value", Code: schema.CodeCustom, Message: publicMsg}}},
		{name: "escaped control in public value", config: `{"kind":"public","value":"a\u0007"}`, goStr: "a\x07",
			want: []schema.Issue{{Path: path + "/value", Code: schema.CodeCustom, Message: publicMsg}}},
		{name: "DEL in public value", config: "{\"kind\":\"public\",\"value\":\"a\x7f\"}", goStr: "a\x7f",
			want: []schema.Issue{{Path: path + "/value", Code: schema.CodeCustom, Message: publicMsg}}},
		{name: "credential in public value", config: `{"kind":"public","value":"Bearer abc"}`, goStr: "Bearer abc",
			want: []schema.Issue{{Path: path + "/value", Code: schema.CodeCustom, Message: publicMsg}}},
		{name: "public value not a string", config: `{"kind":"public","value":1}`,
			want: []schema.Issue{{Path: path + "/value", Code: schema.CodeInvalidType, Message: "expected a string, got a number"}}},
		{name: "plain secret key", config: `{"kind":"secret-ref","key":"API_KEY"}`},
		{name: "lone surrogate secret key", config: `{"kind":"secret-ref","key":"\udc00"}`, goStr: "\xed\xb0\x80", isKey: true,
			want: []schema.Issue{{Path: path + "/key", Code: schema.CodeCustom, Message: keyMsg}}},
		{name: "empty secret key", config: `{"kind":"secret-ref","key":""}`, goStr: "", isKey: true,
			want: []schema.Issue{
				{Path: path + "/key", Code: schema.CodeTooSmall, Message: "must not be empty"},
				{Path: path + "/key", Code: schema.CodeCustom, Message: keyMsg},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"hooks":{"pre":[{"command":"x","env":{"FOO":` + tt.config + `}}]}}`
			_, err := profile.Parse([]byte(doc))
			if d := cmp.Diff(tt.want, issuesOf(t, err), cmpopts.IgnoreUnexported(schema.Issue{}), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("Parse issues (-want +got):\n%s", d)
			}
			if tt.want == nil || (tt.goStr == "" && !tt.isKey) {
				return
			}
			// The same string set in Go carries no record from the decoder.
			p := mustParse(t, `{"hooks":{"pre":[{"command":"x","env":{"FOO":{"kind":"public","value":"v"}}}]}}`)
			cv := p.Hooks["pre"][0].Env["FOO"]
			if tt.isKey {
				cv = profile.ConfigValue{Kind: profile.ConfigSecretRef, Key: &tt.goStr}
			} else {
				cv.Value = &tt.goStr
			}
			p.Hooks["pre"][0].Env["FOO"] = cv
			if d := cmp.Diff(tt.want, issuesOf(t, p.Validate()), cmpopts.IgnoreUnexported(schema.Issue{})); d != "" {
				t.Errorf("Validate issues (-want +got):\n%s", d)
			}
		})
	}
}

func issuesOf(t *testing.T, err error) []schema.Issue {
	t.Helper()
	if err == nil {
		return nil
	}
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *schema.Error", err)
	}
	return se.Issues
}
