package contract_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// Seed 000: a provider honors the profile or refuses it before dispatch
// (TRN-02, SYS-05, SYS-06).
func TestCheckProfileSupport(t *testing.T) {
	caps := contract.ExecOnlyCapabilities(contract.WorkspaceCapabilities{Read: true}).Profile
	caps.SystemPrompt = harness.SystemPromptIntents{Append: true}
	p, err := profile.Parse([]byte(`{"prompt":{"systemPrompt":"s","appendSystemPrompt":"a"},"tools":{"Bash":true},"mcp":{"x":{"enabled":false}},"permissions":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = contract.CheckProfileSupport(&caps, p)
	if !errors.Is(err, contract.ErrUnsupported) {
		t.Fatalf("err = %v", err)
	}
	var paths []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ue *profile.UnsupportedError
		if !errors.As(e, &ue) {
			t.Fatalf("%v is not an UnsupportedError", e)
		}
		paths = append(paths, ue.Path)
	}
	want := []string{"/prompt/systemPrompt", "/tools", "/mcp"}
	if len(paths) != len(want) {
		t.Fatalf("refused %v, want %v (an empty permissions map asks for nothing)", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Fatalf("refused %v, want %v", paths, want)
		}
	}
	if err := contract.CheckProfileSupport(&caps, &profile.Profile{Name: profile.Ptr("x")}); err != nil {
		t.Errorf("a bare profile was refused: %v", err)
	}
}
