package kernel_test

import (
	"testing"

	"github.com/agentrt/agentrt/kernel"
)

// spec/runtime.md §2.3 served-model rule.
func TestSameModel(t *testing.T) {
	tests := []struct {
		requested, served string
		same              bool
	}{
		{"anthropic/claude-opus-5-5", "claude-opus-5-5", true},
		{"claude-opus-5-5", "anthropic/claude-opus-5-5", true},
		{"openai/gpt-6-sol", "openrouter/openai/gpt-6-sol", true},
		{"x-5.3", "x-5.2", false},
		{"openai/gpt-6-sol", "openai/gpt-6-luna", false},
		{"scripted/note-writer", "scripted/note-writer", true},
		{"scripted/note-writer", "scripted/other", false},
		{"team/model", "other-team/model", false},
		{"model", "vendor-x/model", true},
	}
	for _, tc := range tests {
		if got := kernel.SameModel(tc.requested, tc.served); got != tc.same {
			t.Errorf("SameModel(%q, %q) = %v", tc.requested, tc.served, got)
		}
	}
}
