package clibridge

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// mcpValuesCheck returns why the bridge cannot hand server s to any
// harness ("" when it can): a working directory other than the
// workspace (every harness starts its MCP servers in its own working
// directory, the workspace), or a secret reference among its args, env
// or headers (the bridge holds no secret store to resolve it).
func mcpValuesCheck(s profile.MCPServer) string {
	if s.Cwd != nil && *s.Cwd != "." {
		return "the harness starts MCP servers in the workspace; the bridge cannot set another working directory"
	}
	values := slices.Concat(s.Args, slices.Collect(maps.Values(s.Env)), slices.Collect(maps.Values(s.Headers)))
	for _, v := range values {
		if v.Kind != profile.ConfigPublic || v.Value == nil {
			return "secret references cannot be resolved by the bridge (it holds no secret store)"
		}
	}
	return ""
}

// isMCPServerIdent reports whether s is a non-empty run of ASCII
// letters, digits and single '_'s: a server name that codex and opencode
// carry into tool names unchanged. (codex 0.171.0 rewrites other
// characters: server "probe-2" became the tool namespace "mcp__probe_2",
// so two servers could share one; "__" would make the bridge's
// "mcp__<server>__<tool>" names ambiguous.)
func isMCPServerIdent(s string) bool {
	if s == "" || strings.Contains(s, "__") {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// mcpCheck returns why harness h cannot mount server s named name (""
// when it can): local (stdio) servers and remote streamable-HTTP ones
// are the transports the bridge verified against the real codex and
// opencode binaries; a remote server declared "sse" is refused (codex
// speaks streamable HTTP only, and opencode falls back from one to the
// other on its own).
func mcpCheck(h, name string, s profile.MCPServer) string {
	if !isMCPServerIdent(name) {
		return fmt.Sprintf("%s names the server's tools after it; the name must be ASCII letters, digits and single '_'", h)
	}
	if s.IsDisabled() {
		return ""
	}
	if s.IsLocal() {
		if s.Command == nil {
			return "a local MCP server needs a command"
		}
	} else if s.URL == nil {
		return "a remote MCP server needs a url"
	} else if s.Transport != nil && *s.Transport != "http" {
		return fmt.Sprintf("the bridge verified remote MCP servers with %s over streamable HTTP only, not %q", h, *s.Transport)
	}
	return mcpValuesCheck(s)
}

// mcpMount is one MCP server as the bridge mounts it, with public
// values only (check refused secret references): a local server's
// command, args and env, or a remote server's url and headers.
type mcpMount struct {
	name    string
	command string
	args    []string
	env     map[string]string
	url     string
	headers map[string]string
}

// mcpMounts returns the servers to mount, in name order, and the names
// of the ones declared disabled; why is the driver's check of one
// server, which must pass.
func mcpMounts(servers map[string]profile.MCPServer, why func(name string, s profile.MCPServer) string) (mounted []mcpMount, disabled []string, err error) {
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		if reason := why(name, s); reason != "" {
			return nil, nil, fmt.Errorf("clibridge: mcp server %q: %s: %w", name, reason, contract.ErrUnsupported)
		}
		if s.IsDisabled() {
			disabled = append(disabled, name)
			continue
		}
		m := mcpMount{name: name}
		if s.IsLocal() {
			m.command, m.env = *s.Command, publicValues(s.Env)
			for _, a := range s.Args {
				m.args = append(m.args, *a.Value)
			}
		} else {
			m.url, m.headers = *s.URL, publicValues(s.Headers)
		}
		mounted = append(mounted, m)
	}
	return mounted, disabled, nil
}

// publicValues returns the values of vs (all public; nil for none).
func publicValues(vs map[string]profile.ConfigValue) map[string]string {
	if len(vs) == 0 {
		return nil
	}
	out := make(map[string]string, len(vs))
	for k, v := range vs {
		out[k] = *v.Value
	}
	return out
}

// mcpNames returns the servers' names, in order.
func mcpNames(servers []mcpMount) []string {
	var names []string
	for _, s := range servers {
		names = append(names, s.name)
	}
	return names
}
