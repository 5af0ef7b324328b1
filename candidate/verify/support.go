package verify

import (
	"fmt"
	"slices"
	"sort"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
)

// CodeUnsupportedSurface is the verdict code of a surface the executor
// cannot honour: §22 step 5's support policy (integrity verification
// still completes and is reported), and step 13's materializer, which
// refuses what it cannot reproduce exactly (§13.1) rather than drop it.
const CodeUnsupportedSurface = "unsupported-surface"

// SupportPolicy is what an executor honours (spec candidate §22 step 5):
// a bundle using anything else is refused with unsupported-surface
// rather than run with the surface dropped. Lists are allow-lists, so a
// surface the policy does not name is unsupported.
type SupportPolicy struct {
	// Name identifies the policy in the record.
	Name string `json:"name"`
	// Knowledge is whether knowledge candidates are mounted.
	Knowledge bool `json:"knowledge"`
	// ProfileMembers are the candidate profile members the executor
	// materializes ("prompt", "model", "mcp", …).
	ProfileMembers []string `json:"profileMembers"`
	// MCPTransports are the MCP transports it can start ("stdio"); a
	// server without a transport is stdio.
	MCPTransports []string `json:"mcpTransports"`
	// CodeKinds are the code states it can run.
	CodeKinds []string `json:"codeKinds"`
	// MemoryModes are the memory policies it can honour.
	MemoryModes []string `json:"memoryModes"`
}

// ReferenceSupport is the reference runtime's execution policy (spec
// candidate §21.6): every code state and memory mode, no knowledge, and
// a profile without tools, permissions, modes or confidential maps, with
// stdio MCP servers only.
func ReferenceSupport() SupportPolicy {
	return SupportPolicy{
		Name:           "reference-runtime",
		ProfileMembers: []string{"description", "harness", "hooks", "mcp", "model", "name", "prompt", "resources", "subagents", "tags", "version"},
		MCPTransports:  []string{"stdio"},
		CodeKinds:      []string{candidate.CodeDisabled, candidate.CodeNoOp, candidate.CodeGitPatch},
		MemoryModes:    []string{"disabled", "isolated"},
	}
}

// support applies step 5 to a schema-valid bundle.
func (v *verifier) support(b *candidate.Bundle, p *SupportPolicy) {
	refuse := func(path, format string, args ...any) {
		v.issue(CodeUnsupportedSurface, path, "%s (support policy %s)", fmt.Sprintf(format, args...), p.Name)
	}
	if b.Knowledge != nil && !p.Knowledge {
		refuse("/knowledge", "knowledge candidates are not mounted")
	}
	if !slices.Contains(p.CodeKinds, b.Code.Kind) {
		refuse("/code/kind", "code %q is not run", b.Code.Kind)
	}
	if !slices.Contains(p.MemoryModes, b.Memory.Mode) {
		refuse("/memory/mode", "memory %q is not honoured", b.Memory.Mode)
	}
	members, err := profileMembers(&b.Profile)
	if err != nil {
		refuse("/profile", "the profile has no JSON form: %v", err)
	}
	for _, m := range members {
		if !slices.Contains(p.ProfileMembers, m) {
			refuse("/profile/"+m, "profile %s are not materialized", m)
		}
	}
	names := make([]string, 0, len(b.Profile.MCP))
	for name := range b.Profile.MCP {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := b.Profile.MCP[name]
		transport := "stdio"
		if s.Transport != nil {
			transport = *s.Transport
		}
		if s.Command != nil && !slices.Contains(p.MCPTransports, transport) {
			refuse("/profile/mcp/"+name+"/transport", "MCP transport %q cannot be started", transport)
		}
	}
}

// profileMembers lists the members a candidate profile carries, from its
// JSON form (so a member added to the type is never missed).
func profileMembers(p *candidate.Profile) ([]string, error) {
	v, err := canonjson.ToValue(p)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range v.Members() {
		out = append(out, m.Name)
	}
	return out, nil
}
