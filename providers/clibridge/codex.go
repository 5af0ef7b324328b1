package clibridge

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// codexDriver drives the Codex CLI (npm @openai/codex), whose exec mode
// (codex exec --json) prints one JSON event per line.
type codexDriver struct{}

func (codexDriver) harness() harness.Type { return harness.Codex }
func (codexDriver) executable() string    { return "codex" }
func (codexDriver) npmPackage() string    { return "@openai/codex" }

// codexKeyEnv is the variable the materialized model provider reads its
// key from (its env_key).
const codexKeyEnv = "OPENAI_API_KEY"

// codexProvider is the model provider id the bridge defines in codex's
// configuration.
const codexProvider = "agentrt"

// codexDefaultBaseURL is the endpoint without Options.BaseURL.
const codexDefaultBaseURL = "https://api.openai.com/v1"

// codexSandbox and codexApproval are what every codex turn runs under:
// model-generated commands in the read-only sandbox, and no approval
// request (exec mode has no one to ask and the bridge declares no
// interactions).
const (
	codexSandbox  = "read-only"
	codexApproval = "never"
)

// ownedEnv are the variables the codex driver sets. OPENAI_BASE_URL is
// owned too: codex 0.171.0 ignores it, and a caller's value would only
// mislead.
func (codexDriver) ownedEnv() []string {
	return []string{"CODEX_HOME", codexKeyEnv, "OPENAI_BASE_URL", "CODEX_API_KEY"}
}

// profileCaps: the system prompt replaced (codex's instructions key,
// which replaces its built-in base instructions) and appended (its
// developer_instructions key, a developer message after them; both
// proven against the real binary by TestCodexSystemPrompts), local and
// streamable-HTTP MCP servers ([mcp_servers.NAME] in config.toml, proven
// by TestCodexMCPServer and TestRemoteMCPServer), tools for the mounted
// servers' MCP tools only (false: the server's disabled_tools, proven by
// TestCodexMCPToolDisabled; check refuses every other key) and
// validation. Permissions are not applied, nor tools for codex's own
// tools: its only controls over what model-generated commands may do are
// its sandbox mode and approval policy, which govern every command
// alike, and it has no per-tool allow or deny a profile's rules map onto
// exactly; permissions are not declared and a profile carrying them is
// refused.
func (codexDriver) profileCaps() contract.ProfileCapabilities {
	return contract.ProfileCapabilities{
		SystemPrompt: harness.SystemPromptIntents{Replace: true, Append: true},
		Tools:        true,
		MCP:          true,
		Validation:   true,
	}
}

// check refuses what codex cannot be told by this driver (beyond the
// capability document's flags).
func (d codexDriver) check(p *profile.Profile) []error {
	if p == nil {
		return nil
	}
	errs := checkCommon(d, "openai", "the OpenAI Responses API", p)
	for _, key := range slices.Sorted(maps.Keys(p.Tools)) {
		if _, _, ok := codexMCPTool(p, key); !ok {
			errs = append(errs, unsupported("/tools/"+key, "codex's only per-tool control the bridge verified is an MCP server's disabled_tools: "+
				"the key must be mcp__<server>__<tool> of a mounted server (codex's own tools are governed by its sandbox and approval policy alone)"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.MCP)) {
		if reason := codexMCPCheck(name, p.MCP[name]); reason != "" {
			errs = append(errs, unsupported("/mcp/"+name, reason))
		}
	}
	return errs
}

// codexMCPTool splits a tools key "mcp__<server>__<tool>" naming a tool
// of a server p mounts.
func codexMCPTool(p *profile.Profile, key string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(key, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	if s, mounted := p.MCP[server]; !ok || tool == "" || !mounted || s.IsDisabled() {
		return "", "", false
	}
	return server, tool, true
}

// codexMCPCheck returns why codex cannot mount server s ("" when it
// can): local (stdio) or streamable-HTTP servers with public values,
// named so that codex's tool namespace "mcp__<name>" is the name as is.
func codexMCPCheck(name string, s profile.MCPServer) string {
	return mcpCheck("codex", name, s)
}

// codexMCPApproval is every mounted server's default_tools_approval_mode:
// with approval_policy "never", codex 0.171.0 fails every MCP tool call
// ("MCP tool call requires approval, but approval policy is never")
// unless the server's tools are pre-approved.
const codexMCPApproval = "approve"

// materialize writes codex's configuration (CODEX_HOME/config.toml: the
// bridge's model provider, the approval policy, no update check,
// analytics or feedback, the effort, the replacing instructions, the
// appended developer instructions and the mounted MCP servers) and
// builds the argv: exec mode, JSONL output, a configuration codex must
// recognize entirely (--strict-config), no Git repository required, no
// session files, the read-only sandbox, the model, and the prompt read
// from standard input ("-").
func (d codexDriver) materialize(t *turnSpec) (*plan, error) {
	p := t.profile
	if p == nil {
		p = &profile.Profile{}
	}
	pl := &plan{env: map[string]string{"CODEX_HOME": t.dirs.config}}
	if t.apiKey != "" {
		pl.env[codexKeyEnv] = t.apiKey
	}
	ap := &pl.receipt.Applied
	args := []string{"exec", "--json", "--strict-config", "--skip-git-repo-check", "--ephemeral", "--sandbox=" + codexSandbox}
	ap.PermissionMode = "sandbox=" + codexSandbox + ",approval=" + codexApproval
	if model := turnModel(t, p); model != "" {
		args = append(args, "--model="+model)
		ap.Model = model
	}
	args = append(args, "-")
	baseURL := t.baseURL
	if baseURL == "" {
		baseURL = codexDefaultBaseURL
	}
	var cfg strings.Builder
	set := func(key, value string) { fmt.Fprintf(&cfg, "%s = %s\n", key, tomlString(value)) }
	set("model_provider", codexProvider)
	set("approval_policy", codexApproval)
	fmt.Fprintf(&cfg, "check_for_update_on_startup = false\n")
	effort, native, err := nativeEffort(harness.Codex, p)
	if err != nil {
		return nil, err
	}
	if native != "" {
		set("model_reasoning_effort", native)
		ap.ReasoningEffort, ap.NativeEffort = effort, native
	}
	if pr := p.Prompt; pr != nil {
		if pr.SystemPrompt != nil {
			set("instructions", *pr.SystemPrompt)
			ap.SystemPromptDigest = textDigest(*pr.SystemPrompt)
		}
		if pr.AppendSystemPrompt != nil {
			set("developer_instructions", *pr.AppendSystemPrompt)
			ap.AppendSystemPromptDigest = textDigest(*pr.AppendSystemPrompt)
		}
	}
	// No analytics and no feedback uploads: the turn talks to the model
	// endpoint only.
	fmt.Fprintf(&cfg, "\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n")
	fmt.Fprintf(&cfg, "\n[model_providers.%s]\n", codexProvider)
	set("name", codexProvider)
	set("base_url", baseURL)
	set("env_key", codexKeyEnv)
	set("wire_api", "responses")
	if len(p.MCP) > 0 {
		mounted, disabled, err := mcpMounts(p.MCP, codexMCPCheck)
		if err != nil {
			return nil, err
		}
		// A tool the profile sets false is in its server's
		// disabled_tools: codex then neither offers it nor runs a call
		// of it ("unsupported call"). true needs nothing: a mounted
		// server's tools are offered and pre-approved.
		off := map[string][]string{}
		for _, key := range slices.Sorted(maps.Keys(p.Tools)) {
			server, tool, ok := codexMCPTool(p, key)
			if !ok {
				return nil, fmt.Errorf("clibridge: tools key %q: %w", key, contract.ErrUnsupported)
			}
			if p.Tools[key] {
				ap.AllowedTools = append(ap.AllowedTools, key)
			} else {
				off[server] = append(off[server], tool)
				ap.DisallowedTools = append(ap.DisallowedTools, key)
			}
		}
		for _, s := range mounted {
			writeCodexMCP(&cfg, s, off[s.name])
		}
		ap.MCPServers, ap.DisabledMCPServers = mcpNames(mounted), disabled
	} else if len(p.Tools) > 0 {
		return nil, fmt.Errorf("clibridge: tools without MCP servers: %w", contract.ErrUnsupported)
	}
	pl.addFile(t, filepath.Join(t.dirs.config, "config.toml"), []byte(cfg.String()), "codex-config")
	pl.args = args
	pl.receipt.Args = args
	return pl, nil
}

// writeCodexMCP writes server s as codex's [mcp_servers.NAME] table:
// command, args and env (an inline table) for a local server, url and
// http_headers for a remote one, its tools pre-approved and the ones in
// off disabled.
func writeCodexMCP(cfg *strings.Builder, s mcpMount, off []string) {
	fmt.Fprintf(cfg, "\n[mcp_servers.%s]\n", s.name)
	if s.url != "" {
		fmt.Fprintf(cfg, "url = %s\n", tomlString(s.url))
		if len(s.headers) > 0 {
			fmt.Fprintf(cfg, "http_headers = %s\n", tomlInlineTable(s.headers))
		}
	} else {
		fmt.Fprintf(cfg, "command = %s\n", tomlString(s.command))
		if len(s.args) > 0 {
			fmt.Fprintf(cfg, "args = %s\n", tomlArray(s.args))
		}
		if len(s.env) > 0 {
			fmt.Fprintf(cfg, "env = %s\n", tomlInlineTable(s.env))
		}
	}
	// codex starts its turn while a server is still starting and never
	// offers its tools in it: a required server it waits for (up to
	// MCPStartTimeout, not its own 10 s), and one that fails to start
	// fails the turn rather than running it without what the profile
	// declared.
	fmt.Fprintf(cfg, "startup_timeout_sec = %d\nrequired = true\n", int(MCPStartTimeout/time.Second))
	fmt.Fprintf(cfg, "default_tools_approval_mode = %s\n", tomlString(codexMCPApproval))
	if len(off) > 0 {
		fmt.Fprintf(cfg, "disabled_tools = %s\n", tomlArray(off))
	}
}

// tomlInlineTable is m as a TOML inline table of basic strings, with
// quoted keys in key order.
func tomlInlineTable(m map[string]string) string {
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		pairs = append(pairs, tomlString(k)+" = "+tomlString(m[k]))
	}
	return "{ " + strings.Join(pairs, ", ") + " }"
}

// tomlArray is ss as a TOML array of basic strings.
func tomlArray(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = tomlString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// tomlString is s as a TOML basic string: quotes, backslashes and
// control characters escaped, everything else literal.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
