package kernel

import (
	"fmt"
	"slices"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// loopProfileCapabilities is what a tool loop honours of a profile: the
// system prompt (a bare model has none of its own, so replacing it and
// adding to it are both the loop's system message) and the tools map
// (matched to the Go tools given).
var loopProfileCapabilities = contract.ProfileCapabilities{
	SystemPrompt: harness.SystemPromptIntents{Replace: true, Append: true},
	Tools:        true,
}

// applyProfile checks o.Profile against what the loop can honour and
// against o's other options, and fills in the system prompt and the
// requested model it declares.
func (o *ToolLoopOptions) applyProfile(errs *optionErrors) {
	p := o.Profile
	if _, err := profile.Digest(p); err != nil {
		errs.add("Profile", "the profile is invalid or has no identity: %v", err)
		return
	}
	refuse := func(format string, args ...any) { errs.add("Profile", format, args...) }
	if err := contract.CheckProfileSupport(&loopProfileCapabilities, p); err != nil {
		for _, e := range unjoin(err) {
			refuse("%v", e)
		}
	}
	if p.Harness != "" && p.Harness != harness.CLIBase {
		refuse("harness %s: a tool loop drives a bare model (harness %s)", p.Harness, harness.CLIBase)
	}
	if len(p.Seats) > 0 {
		refuse("/seats: a tool loop runs one model; run the provider-facing projection of one stage")
	}
	if len(p.Connections) > 0 {
		refuse("/connections: a tool loop cannot apply connections")
	}
	if p.Confidential != nil {
		refuse("/confidential: a tool loop cannot run confidential execution")
	}
	if m := p.Model; m != nil {
		for _, c := range []struct {
			path string
			set  bool
		}{{"/model/reasoningEffort", m.ReasoningEffort != ""}, {"/model/maxVisibleOutputTokens", m.MaxVisibleOutputTokens != nil},
			{"/model/maxReasoningTokens", m.MaxReasoningTokens != nil}, {"/model/maxTotalOutputTokens", m.MaxTotalOutputTokens != nil}} {
			if c.set {
				refuse("%s: the loop cannot apply it to a chat model; configure it on the Model", c.path)
			}
		}
	}
	if o.System != "" {
		errs.add("System", "the profile gives the system prompt; leave System empty")
	}
	if o.RequestedModel != "" {
		errs.add("RequestedModel", "the profile names the model (model.default); leave RequestedModel empty")
	}
	o.System = profile.SystemMessage(p)
	if p.Model != nil && p.Model.Default != nil {
		o.RequestedModel = *p.Model.Default
	}
	matchProfileTools(p.Tools, o.Tools, errs)
}

// matchProfileTools refuses every tool declared true with no Go tool of
// its name, and every Go tool not declared true.
func matchProfileTools(declared map[string]bool, tools []contract.Tool, errs *optionErrors) {
	for i, t := range tools {
		if t.Name == "" {
			continue // refused as nameless
		}
		switch on, ok := declared[t.Name]; {
		case !ok:
			errs.add(fmt.Sprintf("Tools[%d]", i), "the profile does not declare tool %s (add %q: true to its tools)", t.Name, t.Name)
		case !on:
			errs.add(fmt.Sprintf("Tools[%d]", i), "the profile turns tool %s off (%q: false)", t.Name, t.Name)
		}
	}
	var missing []string
	for name, on := range declared {
		if on && !slices.ContainsFunc(tools, func(t contract.Tool) bool { return t.Name == name }) {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	for _, name := range missing {
		errs.add("Tools", "the profile declares tool %s, and no tool of that name was given", name)
	}
}

// unjoin returns the errors a joined error holds, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
