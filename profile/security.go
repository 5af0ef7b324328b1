package profile

import (
	"sort"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/whatwgurl"
)

// SecurityPolicy gates the surfaces of an inline profile that run code
// outside the agent's own reasoning. The zero value is the default cloud
// policy: no local MCP servers, no hooks, remote MCP hosts unrestricted,
// connections allowed.
type SecurityPolicy struct {
	// AllowLocalMCP admits local (stdio) MCP servers, which spawn a
	// process.
	AllowLocalMCP bool
	// AllowHooks admits hooks, which run commands around every turn.
	AllowHooks bool
	// AllowedMCPHosts, when non-nil, is a host-glob allowlist for remote
	// MCP servers: "*" matches within one DNS label, labels must line up
	// one to one, matching ignores case, and IPv6 hosts match exactly. An
	// empty non-nil list blocks every remote server. Nil leaves remote
	// hosts unrestricted, which is no protection against SSRF: enforce
	// egress controls elsewhere or set a list.
	AllowedMCPHosts []string
	// DenyConnections refuses profiles that declare connections.
	DenyConnections bool
}

// Security issue codes.
const (
	BlockedLocalMCP      = "BLOCKED_LOCAL_MCP"
	InvalidMCPURL        = "INVALID_MCP_URL"
	BlockedRemoteMCPHost = "BLOCKED_REMOTE_MCP_HOST"
	BlockedHooks         = "BLOCKED_HOOKS"
	BlockedConnections   = "BLOCKED_CONNECTIONS"
)

// SecurityIssue is one finding of ValidateSecurity. Path is a JSON pointer.
type SecurityIssue struct {
	Level   string `json:"level"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Path    string `json:"path,omitzero"`
}

// SecurityResult is the verdict of ValidateSecurity: OK unless an issue
// has level "error".
type SecurityResult struct {
	OK     bool            `json:"ok"`
	Issues []SecurityIssue `json:"issues"`
}

// ValidateSecurity checks a profile against policy. It reads only the
// declaration and is safe to run both when a profile is authored and again
// at dispatch.
func ValidateSecurity(p *Profile, policy SecurityPolicy) SecurityResult {
	res := SecurityResult{OK: true, Issues: []SecurityIssue{}}
	add := func(code, msg, path string) {
		res.Issues = append(res.Issues, SecurityIssue{Level: "error", Code: code, Message: msg, Path: path})
		res.OK = false
	}
	names := make([]string, 0, len(p.MCP))
	for name := range p.MCP {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		server := p.MCP[name]
		path := canonjson.Pointer("mcp", name)
		if server.IsDisabled() {
			continue
		}
		if server.IsLocal() {
			if !policy.AllowLocalMCP {
				add(BlockedLocalMCP, "local MCP server "+quote(name)+" is not allowed: it spawns a process", path)
			}
			continue
		}
		if policy.AllowedMCPHosts == nil {
			continue
		}
		if server.URL == nil || *server.URL == "" {
			add(InvalidMCPURL, "remote MCP server "+quote(name)+" has no url to check against the allowlist", path)
			continue
		}
		u, err := whatwgurl.Parse(*server.URL)
		if err != nil {
			add(InvalidMCPURL, "remote MCP server "+quote(name)+" has an invalid url", path)
			continue
		}
		allowed := false
		for _, pattern := range policy.AllowedMCPHosts {
			if MatchHostGlob(u.Hostname, pattern) {
				allowed = true
				break
			}
		}
		if !allowed {
			add(BlockedRemoteMCPHost, "remote MCP host "+quote(u.Hostname)+" is not in the allowlist", path)
		}
	}
	if !policy.AllowHooks && len(p.Hooks) > 0 {
		add(BlockedHooks, "hooks are not allowed: they run author-controlled commands automatically", "/hooks")
	}
	if policy.DenyConnections && len(p.Connections) > 0 {
		add(BlockedConnections, "connections are not allowed in an inline profile here; grant access through this surface's connection path", "/connections")
	}
	return res
}

func quote(s string) string { return "'" + s + "'" }

// MatchHostGlob matches a host against an allowlist pattern label by
// label, ignoring case; "*" matches any run of characters within one label
// and never crosses a dot. Hosts or patterns containing ":" (IPv6) must
// match exactly. The match is linear in the input; no regular expression is
// built from the pattern.
func MatchHostGlob(host, pattern string) bool {
	h, p := strings.ToLower(host), strings.ToLower(pattern)
	if strings.Contains(h, ":") || strings.Contains(p, ":") {
		return h == p
	}
	hl, pl := strings.Split(h, "."), strings.Split(p, ".")
	if len(hl) != len(pl) {
		return false
	}
	for i := range pl {
		if !matchLabel(hl[i], pl[i]) {
			return false
		}
	}
	return true
}

func matchLabel(label, pattern string) bool {
	segments := strings.Split(pattern, "*")
	if len(segments) == 1 {
		return label == pattern
	}
	first, last := segments[0], segments[len(segments)-1]
	if !strings.HasPrefix(label, first) || !strings.HasSuffix(label, last) || len(first)+len(last) > len(label) {
		return false
	}
	cursor, suffixStart := len(first), len(label)-len(last)
	for _, seg := range segments[1 : len(segments)-1] {
		if seg == "" {
			continue
		}
		found := strings.Index(label[cursor:], seg)
		if found < 0 || cursor+found+len(seg) > suffixStart {
			return false
		}
		cursor += found + len(seg)
	}
	return true
}
