package contract

import (
	"errors"
	"slices"

	"github.com/agentrt/agentrt/profile"
)

// ErrUnsupported is wrapped by refusals of something a provider does not
// support; every such refusal happens before any effect.
var ErrUnsupported = errors.New("unsupported")

// CheckProfileSupport refuses p when the profile capabilities caps cannot
// honor it, before anything is dispatched (seed 000: providers honor the
// profile or refuse it). Each refused feature is one
// *profile.UnsupportedError with its JSON pointer, joined; they all match
// errors.Is(err, ErrUnsupported) through Unsupported. Empty maps and lists
// ask for nothing and pass.
func CheckProfileSupport(caps *ProfileCapabilities, p *profile.Profile) error {
	if p == nil {
		return nil
	}
	var errs []error
	refuse := func(path, reason string) {
		errs = append(errs, Unsupported{&profile.UnsupportedError{Path: path, Reason: reason}})
	}
	if err := profile.CheckSystemPrompt(p, caps.SystemPrompt); err != nil {
		for _, e := range unwrapJoined(err) {
			errs = append(errs, Unsupported{e})
		}
	}
	if p.Prompt != nil && len(p.Prompt.Instructions) > 0 && !caps.Instructions {
		refuse("/prompt/instructions", "the provider cannot deliver project instructions")
	}
	if len(p.Tools) > 0 && !caps.Tools {
		refuse("/tools", "the provider cannot apply a tools map")
	}
	if len(p.Permissions) > 0 && !caps.Permissions {
		refuse("/permissions", "the provider cannot apply permissions")
	}
	if len(p.MCP) > 0 && !caps.MCP {
		refuse("/mcp", "the provider cannot mount MCP servers")
	}
	if len(p.Subagents) > 0 && !caps.Subagents {
		refuse("/subagents", "the provider cannot declare subagents")
	}
	if len(p.Hooks) > 0 && (caps.Hooks == nil || !*caps.Hooks) {
		refuse("/hooks", "the provider cannot run hooks")
	}
	if len(p.Modes) > 0 && (caps.Modes == nil || !*caps.Modes) {
		refuse("/modes", "the provider cannot apply modes")
	}
	for name := range p.Extensions {
		if !slices.Contains(caps.Extensions, name) {
			refuse("/extensions/"+name, "the provider does not understand this extension namespace")
		}
	}
	if r := p.Resources; r != nil {
		flag := func(b *bool) bool { return b != nil && *b }
		if len(r.Files) > 0 && !caps.Resources.Files {
			refuse("/resources/files", "the provider cannot mount files")
		}
		if r.Instructions != nil && !caps.Resources.Instructions {
			refuse("/resources/instructions", "the provider cannot mount instruction resources")
		}
		for _, c := range []struct {
			name string
			n    int
			ok   bool
		}{{"tools", len(r.Tools), flag(caps.Resources.Tools)}, {"skills", len(r.Skills), flag(caps.Resources.Skills)},
			{"agents", len(r.Agents), flag(caps.Resources.Agents)}, {"commands", len(r.Commands), flag(caps.Resources.Commands)}} {
			if c.n > 0 && !c.ok {
				refuse("/resources/"+c.name, "the provider cannot mount "+c.name+" resources")
			}
		}
	}
	return errors.Join(errs...)
}

// Unsupported wraps a refusal so it matches errors.Is(err, ErrUnsupported)
// while errors.As still finds the *profile.UnsupportedError inside.
type Unsupported struct{ Err error }

func (u Unsupported) Error() string { return u.Err.Error() }

// Unwrap returns the refusal and ErrUnsupported.
func (u Unsupported) Unwrap() []error { return []error{u.Err, ErrUnsupported} }

func unwrapJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
