package profile_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// Checklist SYS-01..SYS-06: two independent bits; a replacement is never
// quietly appended.
func TestCheckSystemPrompt(t *testing.T) {
	both := mustParse(t, `{"prompt":{"systemPrompt":"s","appendSystemPrompt":"a"}}`)
	tests := []struct {
		name  string
		p     *profile.Profile
		can   harness.SystemPromptIntents
		paths []string
	}{
		{"append-only provider refuses systemPrompt", mustParse(t, `{"prompt":{"systemPrompt":"s"}}`), harness.SystemPromptIntents{Append: true}, []string{"/prompt/systemPrompt"}},
		{"replace-only provider refuses append", mustParse(t, `{"prompt":{"appendSystemPrompt":"a"}}`), harness.SystemPromptIntents{Replace: true}, []string{"/prompt/appendSystemPrompt"}},
		{"empty systemPrompt still asks for replacement", mustParse(t, `{"prompt":{"systemPrompt":""}}`), harness.SystemPromptIntents{Append: true}, []string{"/prompt/systemPrompt"}},
		{"neither", both, harness.SystemPromptIntents{}, []string{"/prompt/systemPrompt", "/prompt/appendSystemPrompt"}},
		{"both honored", both, harness.SystemPromptIntents{Replace: true, Append: true}, nil},
		{"no prompt", mustParse(t, `{"prompt":{"instructions":["x"]}}`), harness.SystemPromptIntents{}, nil},
	}
	for _, tc := range tests {
		err := profile.CheckSystemPrompt(tc.p, tc.can)
		var got []string
		for _, e := range unjoin(err) {
			var ue *profile.UnsupportedError
			if !errors.As(e, &ue) {
				t.Fatalf("%s: %T is not *UnsupportedError", tc.name, e)
			}
			got = append(got, ue.Path)
		}
		if len(got) != len(tc.paths) {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.paths)
			continue
		}
		for i := range got {
			if got[i] != tc.paths[i] {
				t.Errorf("%s: refused %v, want %v", tc.name, got, tc.paths)
			}
		}
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
