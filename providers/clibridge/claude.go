package clibridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// claudeDriver drives claude-code (npm @anthropic-ai/claude-code), whose
// print mode (-p) streams one JSON object per line with
// --output-format stream-json --verbose.
type claudeDriver struct{}

func (claudeDriver) harness() harness.Type { return harness.ClaudeCode }
func (claudeDriver) executable() string    { return "claude" }
func (claudeDriver) npmPackage() string    { return "@anthropic-ai/claude-code" }

// ownedEnv are the variables the claude driver sets.
func (claudeDriver) ownedEnv() []string {
	return []string{"CLAUDE_CONFIG_DIR", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING",
		"MCP_CONNECTION_NONBLOCKING", "MCP_CONNECT_TIMEOUT_MS"}
}

// MCPStartTimeout is how long a harness waits for the profile's MCP
// servers to start before its first model call. Past their own bounds
// (claude-code 5 s in print mode, codex 10 s) the harnesses go on
// without a server not yet up and never offer its tools in that turn:
// a profile whose MCP server starts slowly (a busy machine, a server
// that compiles or downloads first) would run without what it
// declared. A harness starts the turn as soon as every server is up,
// so a longer bound costs nothing when they are quick.
const MCPStartTimeout = 60 * time.Second

// profileCaps: system prompt replace and append (--system-prompt,
// --append-system-prompt), tools and permissions (--allowedTools,
// --disallowedTools under --permission-mode dontAsk) and MCP servers
// (--mcp-config with --strict-mcp-config). Nothing else is applied, so
// nothing else is declared.
func (claudeDriver) profileCaps() contract.ProfileCapabilities {
	return contract.ProfileCapabilities{
		SystemPrompt: harness.PromptIntents(harness.ClaudeCode),
		Tools:        true,
		Permissions:  true,
		MCP:          true,
		Validation:   true,
	}
}

// isClaudeBuiltin reports whether name is a built-in tool claude-code
// 2.1.197 reported in its init line (or "Agent", the name its API
// request gives Task).
func isClaudeBuiltin(name string) bool {
	switch name {
	case "Agent", "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterWorktree", "ExitWorktree",
		"NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "Task", "TaskCreate", "TaskGet",
		"TaskList", "TaskOutput", "TaskStop", "TaskUpdate", "WebFetch", "WebSearch", "Workflow", "Write":
		return true
	}
	return false
}

// claudePermissionKey maps a lower-case permission key to its claude
// tool ("" for none).
func claudePermissionKey(key string) string {
	switch key {
	case "bash", "edit", "write", "read", "task":
		return strings.ToUpper(key[:1]) + key[1:]
	case "webfetch":
		return "WebFetch"
	case "websearch":
		return "WebSearch"
	case "notebookedit":
		return "NotebookEdit"
	}
	return ""
}

// claudeTool returns the claude tool a tools or permissions key names: a
// built-in name, a lower-case permission key, or an MCP tool
// ("mcp__server" or "mcp__server__tool") of a server p mounts.
func claudeTool(p *profile.Profile, key string) (string, bool) {
	if isClaudeBuiltin(key) {
		return key, true
	}
	if t := claudePermissionKey(key); t != "" {
		return t, true
	}
	if rest, ok := strings.CutPrefix(key, "mcp__"); ok {
		server, _, _ := strings.Cut(rest, "__")
		if s, mounted := p.MCP[server]; mounted && !s.IsDisabled() && isRuleText(key) {
			return key, true
		}
	}
	return "", false
}

// isRuleText reports whether s can travel inside one tool rule: printable,
// and free of the characters claude's rule lists split or nest on.
func isRuleText(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || strings.ContainsRune("(),\"'", r) {
			return false
		}
	}
	return true
}

// check refuses what claude-code cannot be told by this driver.
func (claudeDriver) check(p *profile.Profile) []error {
	if p == nil {
		return nil
	}
	errs := checkCommon(claudeDriver{}, "anthropic", "the Anthropic Messages API", p)
	refuse := func(path, reason string) { errs = append(errs, unsupported(path, reason)) }
	for _, key := range slices.Sorted(maps.Keys(p.Tools)) {
		if _, ok := claudeTool(p, key); !ok {
			refuse("/tools/"+key, "not a claude-code tool (a built-in name, or mcp__server[__tool] of a mounted server)")
		}
	}
	for _, key := range slices.Sorted(maps.Keys(p.Permissions)) {
		if _, ok := claudeTool(p, key); !ok {
			refuse("/permissions/"+key, "not a claude-code tool the bridge can write a permission rule for")
			continue
		}
		perm := p.Permissions[key]
		if perm.Patterns == nil {
			if perm.Value == profile.Ask {
				refuse("/permissions/"+key, "ask cannot be honored: print mode has no one to ask and the bridge declares no interactions")
			}
			continue
		}
		for _, pat := range slices.Sorted(maps.Keys(perm.Patterns)) {
			switch {
			case perm.Patterns[pat] == profile.Ask:
				refuse("/permissions/"+key+"/"+pat, "ask cannot be honored: print mode has no one to ask and the bridge declares no interactions")
			case pat != "*" && !isRuleText(pat):
				refuse("/permissions/"+key+"/"+pat, "the pattern holds characters a claude-code tool rule cannot carry")
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.MCP)) {
		if err := claudeMCPCheck(name, p.MCP[name]); err != "" {
			refuse("/mcp/"+name, err)
		}
	}
	return errs
}

// claudeMCPCheck returns why server cannot be mounted ("" when it can).
func claudeMCPCheck(name string, s profile.MCPServer) string {
	if !isRuleText(name) || strings.Contains(name, "__") {
		return "the server name cannot name claude-code MCP tools"
	}
	if s.IsDisabled() {
		return ""
	}
	return mcpValuesCheck(s)
}

// materialize builds the claude argv: print mode reading the prompt from
// standard input, stream-json output, user settings only (the isolated
// config directory), no MCP server but the profile's, permission mode
// dontAsk, and the profile's model, effort, system prompts and tool rules.
func (d claudeDriver) materialize(t *turnSpec) (*plan, error) {
	p := t.profile
	if p == nil {
		p = &profile.Profile{}
	}
	pl := &plan{env: map[string]string{
		"CLAUDE_CONFIG_DIR":                        t.dirs.config,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
	}}
	if t.baseURL != "" {
		pl.env["ANTHROPIC_BASE_URL"] = t.baseURL
	}
	if t.apiKey != "" {
		pl.env["ANTHROPIC_API_KEY"] = t.apiKey
	}
	ap := &pl.receipt.Applied
	args := []string{"-p", "--output-format=stream-json", "--verbose", "--setting-sources=user", "--strict-mcp-config",
		"--permission-mode=dontAsk"}
	ap.PermissionMode = "dontAsk"
	shown := slices.Clone(args)
	add := func(flag, value string, secretish bool) {
		args = append(args, flag+"="+value)
		if secretish {
			value = textDigest(value)
		}
		shown = append(shown, flag+"="+value)
	}
	if model := turnModel(t, p); model != "" {
		add("--model", model, false)
		ap.Model = model
	}
	effort, native, err := nativeEffort(harness.ClaudeCode, p)
	if err != nil {
		return nil, err
	}
	if native != "" {
		add("--effort", native, false)
		ap.ReasoningEffort, ap.NativeEffort = effort, native
	}
	if pr := p.Prompt; pr != nil {
		if pr.SystemPrompt != nil {
			add("--system-prompt", *pr.SystemPrompt, true)
			ap.SystemPromptDigest = textDigest(*pr.SystemPrompt)
		}
		if pr.AppendSystemPrompt != nil {
			add("--append-system-prompt", *pr.AppendSystemPrompt, true)
			ap.AppendSystemPromptDigest = textDigest(*pr.AppendSystemPrompt)
		}
	}
	allowed, denied := claudeRules(p)
	for _, r := range allowed {
		add("--allowedTools", r, false)
	}
	for _, r := range denied {
		add("--disallowedTools", r, false)
	}
	ap.AllowedTools, ap.DisallowedTools = allowed, denied
	if len(p.MCP) > 0 {
		content, mounted, disabled, err := claudeMCPConfig(p.MCP)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(t.dirs.bridge, fmt.Sprintf("turn-%d-mcp.json", t.turn))
		rel := pl.addFile(t, path, content, "mcp-config")
		args = append(args, "--mcp-config="+path)
		shown = append(shown, "--mcp-config="+rel)
		ap.MCPServers, ap.DisabledMCPServers = mounted, disabled
		// Wait for them (blocking, MCPStartTimeout) whatever
		// the environment says.
		pl.env["MCP_CONNECTION_NONBLOCKING"] = "false"
		pl.env["MCP_CONNECT_TIMEOUT_MS"] = strconv.FormatInt(MCPStartTimeout.Milliseconds(), 10)
	}
	pl.args = args
	pl.receipt.Args = shown
	return pl, nil
}

// claudeRules turns the profile's tools and permissions into claude tool
// rules (toolRules): claude's tool names, and a pattern "*" is the whole
// tool.
func claudeRules(p *profile.Profile) (allowed, denied []string) {
	return toolRules(p, func(key string) string {
		tool, _ := claudeTool(p, key)
		return tool
	}, func(tool, pat string) string {
		if pat == "*" {
			return tool
		}
		return tool + "(" + pat + ")"
	})
}

// claudeMCPServer is one server of claude's --mcp-config document.
type claudeMCPServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// claudeMCPConfig renders the mounted servers as claude's MCP document
// ({"mcpServers": {name: server}}). Only public values are present
// (check refused secret references).
func claudeMCPConfig(servers map[string]profile.MCPServer) (content []byte, mounted, disabled []string, err error) {
	doc := map[string]claudeMCPServer{}
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		if reason := claudeMCPCheck(name, s); reason != "" {
			return nil, nil, nil, fmt.Errorf("clibridge: mcp server %q: %s: %w", name, reason, contract.ErrUnsupported)
		}
		if s.IsDisabled() {
			disabled = append(disabled, name)
			continue
		}
		var c claudeMCPServer
		if s.IsLocal() {
			c = claudeMCPServer{Type: "stdio", Command: *s.Command, Env: publicValues(s.Env)}
			for _, a := range s.Args {
				c.Args = append(c.Args, *a.Value)
			}
		} else {
			c = claudeMCPServer{Type: "http", URL: *s.URL, Headers: publicValues(s.Headers)}
			if s.Transport != nil && *s.Transport == "sse" {
				c.Type = "sse"
			}
		}
		doc[name] = c
		mounted = append(mounted, name)
	}
	content, err = json.MarshalIndent(map[string]any{"mcpServers": doc}, "", "  ")
	if err != nil {
		return nil, nil, nil, errors.Join(errors.New("clibridge: rendering the MCP configuration"), err)
	}
	return content, mounted, disabled, nil
}
