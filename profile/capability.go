package profile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/harness"
)

// UnsupportedError reports a profile feature that a provider or harness
// cannot honor. Providers must refuse such a profile before dispatch rather
// than run something other than what was declared.
type UnsupportedError struct {
	// Path is the JSON pointer of the feature in the profile.
	Path string
	// Reason says what cannot be honored, for people.
	Reason string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("profile feature at %s cannot be honored: %s", e.Path, e.Reason)
}

// CheckSystemPrompt refuses p when its prompt intents exceed what can be
// honored (seed 000): a systemPrompt needs Replace — quietly appending a
// requested replacement would leave in force the instructions the caller
// asked to delete — and an appendSystemPrompt needs Append. The two bits
// are independent. The error joins one *UnsupportedError per refused
// intent; nil means both are honored.
func CheckSystemPrompt(p *Profile, can harness.SystemPromptIntents) error {
	if p == nil || p.Prompt == nil {
		return nil
	}
	var errs []error
	if p.Prompt.SystemPrompt != nil && !can.Replace {
		errs = append(errs, &UnsupportedError{Path: "/prompt/systemPrompt",
			Reason: "the provider cannot replace the harness's system prompt (systemPrompt.replace is false)"})
	}
	if p.Prompt.AppendSystemPrompt != nil && !can.Append {
		errs = append(errs, &UnsupportedError{Path: "/prompt/appendSystemPrompt",
			Reason: "the provider cannot add to the harness's system prompt (systemPrompt.append is false)"})
	}
	return errors.Join(errs...)
}

// SystemMessage is the system message a harness with no system prompt of
// its own (cli-base: a bare model call, the tool loop) sends for p: its
// systemPrompt, then its appendSystemPrompt, joined by a blank line; ""
// when both are absent or empty.
func SystemMessage(p *Profile) string {
	if p == nil || p.Prompt == nil {
		return ""
	}
	var parts []string
	for _, s := range []*string{p.Prompt.SystemPrompt, p.Prompt.AppendSystemPrompt} {
		if s != nil && *s != "" {
			parts = append(parts, *s)
		}
	}
	return strings.Join(parts, "\n\n")
}
