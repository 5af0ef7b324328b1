package clibridge

import (
	"maps"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// Receipt records exactly what the bridge applied for one turn, before
// the harness process started: the binary, the argv (every prompt-bearing
// value replaced by its digest), the files written with their digests,
// the names (never the values) of the variables set, and the profile
// features each flag carries. It holds no secret: the API key and the
// model endpoint never appear in it.
type Receipt struct {
	// Harness is the harness driven.
	Harness harness.Type `json:"harness"`
	// Binary is the absolute path of the harness executable.
	Binary string `json:"binary"`
	// Args is the argv after the binary, with the turn prompt and system
	// prompt values replaced by "sha256:<hex>" of their UTF-8 bytes.
	Args []string `json:"args"`
	// Files are the files written before the process started.
	Files []ReceiptFile `json:"files,omitzero"`
	// EnvNames are the names of the process's environment variables,
	// sorted; values are never recorded.
	EnvNames []string `json:"envNames"`
	// ProfileDigest is the canonical digest of the turn's profile ("" for
	// none).
	ProfileDigest string `json:"profileDigest,omitzero"`
	// Applied is what of the profile and turn each flag applies.
	Applied Applied `json:"applied"`
}

// ReceiptFile is one materialized file.
type ReceiptFile struct {
	// Path is relative to the environment's root directory.
	Path string `json:"path"`
	// Digest is "sha256:<hex>" of the file's bytes with the API key and
	// the endpoint, where the file carries them, replaced by "[redacted]".
	Digest string `json:"digest"`
	// Purpose says what the file carries (for example "mcp-config").
	Purpose string `json:"purpose"`
}

// Applied lists the profile and turn features the argv applies.
type Applied struct {
	// PromptDigest is the digest of the turn prompt, which the harness
	// reads from standard input.
	PromptDigest string `json:"promptDigest"`
	// Model is the model requested with --model ("" when the harness's
	// default applies).
	Model string `json:"model,omitzero"`
	// ReasoningEffort is the canonical effort requested and NativeEffort
	// the token the harness received.
	ReasoningEffort harness.ReasoningEffort `json:"reasoningEffort,omitzero"`
	NativeEffort    string                  `json:"nativeEffort,omitzero"`
	// SystemPromptDigest and AppendSystemPromptDigest are the digests of
	// the replacing and appended system prompts.
	SystemPromptDigest       string `json:"systemPromptDigest,omitzero"`
	AppendSystemPromptDigest string `json:"appendSystemPromptDigest,omitzero"`
	// AllowedTools and DisallowedTools are the tool rules passed, in
	// argv order.
	AllowedTools    []string `json:"allowedTools,omitzero"`
	DisallowedTools []string `json:"disallowedTools,omitzero"`
	// PermissionMode is the harness permission mode.
	PermissionMode string `json:"permissionMode,omitzero"`
	// MCPServers are the MCP servers mounted, sorted; DisabledMCPServers
	// the ones the profile declared disabled (not mounted).
	MCPServers         []string `json:"mcpServers,omitzero"`
	DisabledMCPServers []string `json:"disabledMcpServers,omitzero"`
}

// Digest returns the receipt's canonical digest.
func (r *Receipt) Digest() (string, error) { return contract.DigestOf(r) }

// Outcome is what one turn's stream established.
type Outcome struct {
	// Terminal is how the turn ended.
	Terminal contract.TerminalKind
	// NativeSessionID is the harness's own session id, read from its
	// stream ("" when the stream never reported one).
	NativeSessionID string
	// ServedModel is the model the stream reported serving: the init
	// line's model, then every assistant message's ("" when unknown).
	ServedModel string
	// HarnessVersion is the version the harness reported.
	HarnessVersion string
	// Usage is the turn's usage (nil when unknown).
	Usage *contract.TokenUsage
	// Text is the turn's final text.
	Text string
}

// TurnRecord is one turn of an environment: what was applied (the
// receipt and its digest) and what the stream established. It is the
// execution owner's record; it carries the private native session id.
type TurnRecord struct {
	// Turn counts the environment's turns from 1.
	Turn int
	// Receipt is what was applied; ReceiptDigest its canonical digest.
	Receipt       Receipt
	ReceiptDigest string
	// Outcome is what the stream established.
	Outcome Outcome
}

// textDigest is "sha256:<hex>" of s's UTF-8 bytes.
func textDigest(s string) string { return canonjson.DigestBytes([]byte(s)) }

// toolRules are a profile's tools and permissions as the receipt records
// them, in claude-code's rule form: "tool" for a whole tool and
// "tool(pattern)" for a pattern (as pattern spells it), allowed or
// denied; tools first, then permissions, each in key order, a tool's
// patterns in key order. name maps a profile key to the harness's tool
// name.
func toolRules(p *profile.Profile, name func(key string) string, pattern func(tool, pat string) string) (allowed, denied []string) {
	put := func(rule string, v profile.PermissionValue) {
		switch v {
		case profile.Allow:
			allowed = append(allowed, rule)
		case profile.Deny:
			denied = append(denied, rule)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(p.Tools)) {
		if p.Tools[key] {
			put(name(key), profile.Allow)
		} else {
			put(name(key), profile.Deny)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(p.Permissions)) {
		tool, perm := name(key), p.Permissions[key]
		if perm.Patterns == nil {
			put(tool, perm.Value)
			continue
		}
		for _, pat := range slices.Sorted(maps.Keys(perm.Patterns)) {
			put(pattern(tool, pat), perm.Patterns[pat])
		}
	}
	return allowed, denied
}
