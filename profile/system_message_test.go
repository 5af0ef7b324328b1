package profile_test

import (
	"testing"

	"github.com/agentrt/agentrt/profile"
)

func TestSystemMessage(t *testing.T) {
	s := profile.Ptr[string]
	tests := []struct {
		name string
		p    *profile.Profile
		want string
	}{
		{"no profile", nil, ""},
		{"no prompt", &profile.Profile{}, ""},
		{"replace only", &profile.Profile{Prompt: &profile.Prompt{SystemPrompt: s("Be brief.")}}, "Be brief."},
		{"append only", &profile.Profile{Prompt: &profile.Prompt{AppendSystemPrompt: s("Cite sources.")}}, "Cite sources."},
		{"both, in order", &profile.Profile{Prompt: &profile.Prompt{SystemPrompt: s("Be brief."), AppendSystemPrompt: s("Cite sources.")}}, "Be brief.\n\nCite sources."},
		{"empty ones skipped", &profile.Profile{Prompt: &profile.Prompt{SystemPrompt: s(""), AppendSystemPrompt: s("Cite sources.")}}, "Cite sources."},
		{"instructions are not the system message", &profile.Profile{Prompt: &profile.Prompt{Instructions: []string{"x"}}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := profile.SystemMessage(tc.p); got != tc.want {
				t.Errorf("SystemMessage = %q, want %q", got, tc.want)
			}
		})
	}
}
