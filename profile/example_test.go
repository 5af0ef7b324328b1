package profile_test

import (
	"fmt"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// A profile read from JSON and the same profile built in Go share one
// identity.
func ExampleParseDigest() {
	_, fromJSON, err := profile.ParseDigest([]byte(`{
		"name": "note-writer",
		"harness": "cli-base",
		"model": {"provider": "scripted", "default": "scripted/note-writer"}
	}`))
	if err != nil {
		panic(err)
	}
	fromGo, err := profile.Digest(&profile.Profile{
		Name:    profile.Ptr("note-writer"),
		Harness: harness.CLIBase,
		Model:   &profile.ModelHints{Provider: profile.Ptr("scripted"), Default: profile.Ptr("scripted/note-writer")},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(fromJSON)
	fmt.Println(fromJSON == fromGo)
	// Output:
	// sha256:238e9708212a6adfd323413460efe68b6cbd8ad5df3a8ac6b4826e25232cb161
	// true
}

// A seat chain continues one logical agent on another subscription; each
// segment runs the provider-facing projection of its stage.
func ExampleProject() {
	p, err := profile.Parse([]byte(`{
		"harness": "claude-code",
		"model": {"provider": "anthropic", "default": "anthropic/claude-opus-5-5"},
		"tools": {"Bash": true, "Write": true},
		"seats": [
			{"harness": "claude-code", "provider": "anthropic", "model": "anthropic/claude-opus-5-5",
			 "selector": {"kind": "all-eligible"}},
			{"harness": "codex", "provider": "openai", "model": "openai/gpt-6-sol",
			 "selector": {"kind": "seat", "id": "codex-team"}, "tools": {}}
		]
	}`))
	if err != nil {
		panic(err)
	}
	stage1, err := profile.Project(p, 1)
	if err != nil {
		panic(err)
	}
	canonical, _ := profile.Canonical(stage1)
	fmt.Println(string(canonical))
	// Output:
	// {"harness":"codex","model":{"default":"openai/gpt-6-sol","provider":"openai"}}
}

// An invalid profile is refused with every issue and its JSON pointer.
func ExampleParse_refused() {
	_, err := profile.Parse([]byte(`{"model":{"maxTotalOutputTokens":100,"maxReasoningTokens":200},"tools":{"Bash":"yes"}}`))
	fmt.Println(err)
	// Output:
	// invalid AgentProfile: /model/maxReasoningTokens: maxReasoningTokens must not exceed maxTotalOutputTokens; /tools/Bash: expected a boolean, got a string
}
