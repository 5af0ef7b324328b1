package clibridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// opencodeDriver drives opencode (npm opencode-ai), whose headless mode
// (opencode run --format json) writes one JSON event per line.
type opencodeDriver struct{}

func (opencodeDriver) harness() harness.Type { return harness.OpenCode }
func (opencodeDriver) executable() string    { return "opencode" }
func (opencodeDriver) npmPackage() string    { return "opencode-ai" }

// opencodeBuildAgent is the agent opencode run uses when none is named:
// the replacing system prompt is its prompt.
const opencodeBuildAgent = "build"

// opencodeProvider is the id of the provider the bridge defines in
// opencode's configuration for Options.BaseURL.
const opencodeProvider = "agentrt"

// Variables the opencode configuration reads the endpoint and key from
// ({env:NAME}), so that neither is written to a file.
const (
	opencodeBaseURLEnv = "AGENTRT_OPENCODE_BASE_URL"
	opencodeAPIKeyEnv  = "AGENTRT_OPENCODE_API_KEY"
)

// opencodeFixedEnv are the variables every opencode process gets: no
// update, share, model-catalog fetch, LSP download or default plugin (all
// would reach the network), and no configuration but the bridge's (no
// project opencode.json from the workspace, no ~/.claude import, no
// external skills).
var opencodeFixedEnv = map[string]string{
	"OPENCODE_DISABLE_AUTOUPDATE":         "1",
	"OPENCODE_DISABLE_SHARE":              "1",
	"OPENCODE_DISABLE_MODELS_FETCH":       "1",
	"OPENCODE_DISABLE_LSP_DOWNLOAD":       "1",
	"OPENCODE_DISABLE_DEFAULT_PLUGINS":    "1",
	"OPENCODE_DISABLE_PROJECT_CONFIG":     "1",
	"OPENCODE_DISABLE_CLAUDE_CODE":        "1",
	"OPENCODE_DISABLE_EXTERNAL_SKILLS":    "1",
	"OPENCODE_DISABLE_EMBEDDED_WEB_UI":    "1",
	"OPENCODE_DISABLE_CLAUDE_CODE_SKILLS": "1",
}

// ownedEnv are the variables the opencode driver sets, and the ones that
// would let a caller replace its configuration.
func (opencodeDriver) ownedEnv() []string {
	names := []string{"OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT", "OPENCODE_CONFIG_DIR", "OPENCODE_PERMISSION",
		"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", opencodeBaseURLEnv, opencodeAPIKeyEnv}
	for name := range opencodeFixedEnv {
		names = append(names, name)
	}
	return names
}

// profileCaps: the system prompt replaced (the build agent's prompt,
// which replaces opencode's built-in prompt and keeps its environment
// part) and appended (an instructions file, added after the environment
// block), both proven against the real binary by
// TestOpencodeSystemPrompts; tools and permissions ("tools" and
// "permission" in the configuration, for the keys opencodeToolsCheck
// admits, proven by TestOpencodeToolsAndPermissions); local and
// streamable-HTTP MCP servers ("mcp", proven by TestOpencodeMCPServer
// and TestRemoteMCPServer); and validation.
func (opencodeDriver) profileCaps() contract.ProfileCapabilities {
	return contract.ProfileCapabilities{
		SystemPrompt: harness.SystemPromptIntents{Replace: true, Append: true},
		Tools:        true,
		Permissions:  true,
		MCP:          true,
		Validation:   true,
	}
}

// check refuses what opencode cannot be told by this driver, beyond the
// capability document: checkCommon's refusals, a model provider (the
// provider is the bridge's OpenAI-compatible endpoint, or the one the
// model id names), a default model opencode would substitute, an empty
// replacing system prompt, tools and
// permissions it cannot be given exactly (opencodeToolsCheck) and MCP
// servers it cannot mount.
func (d opencodeDriver) check(p *profile.Profile) []error {
	if p == nil {
		return nil
	}
	errs := checkCommon(d, "", "", p)
	if m := p.Model; m != nil && m.Provider != nil {
		errs = append(errs, unsupported("/model/provider",
			"opencode's provider is the bridge's endpoint (or the provider/model id given); the bridge does not select one"))
	}
	if m := p.Model; m != nil && m.Default != nil && opencodeSubstitutes(*m.Default) {
		errs = append(errs, unsupported("/model/default", "opencode would substitute the model's {env:...} or {file:...} text"))
	}
	if pr := p.Prompt; pr != nil {
		if pr.SystemPrompt != nil && *pr.SystemPrompt == "" {
			errs = append(errs, unsupported("/prompt/systemPrompt",
				"opencode takes an empty agent prompt as none and sends its built-in prompt (observed); an empty replacement cannot be honored"))
		}
	}
	errs = append(errs, opencodeToolsCheck(p)...)
	for _, name := range slices.Sorted(maps.Keys(p.MCP)) {
		if reason := opencodeMCPCheck(name, p.MCP[name]); reason != "" {
			errs = append(errs, unsupported("/mcp/"+name, reason))
		}
	}
	return errs
}

// opencodeMCPCheck returns why opencode cannot mount server s ("" when
// it can): local or streamable-HTTP servers with public values, named so
// that opencode's tool names "<name>_<tool>" carry the name as is, and
// with no value opencode would substitute (opencodeSubstitutes).
func opencodeMCPCheck(name string, s profile.MCPServer) string {
	if reason := mcpCheck("opencode", name, s); reason != "" || s.IsDisabled() {
		return reason
	}
	var values []string
	for _, v := range []*string{s.Command, s.URL} {
		if v != nil {
			values = append(values, *v)
		}
	}
	for _, a := range s.Args {
		values = append(values, *a.Value)
	}
	for _, vs := range []map[string]profile.ConfigValue{s.Env, s.Headers} {
		for k, v := range vs {
			values = append(values, k, *v.Value)
		}
	}
	if slices.ContainsFunc(values, opencodeSubstitutes) {
		return "opencode would replace its {env:...} or {file:...} text (observed: an environment value \"{env:NAME}\" reached the server as that variable's value)"
	}
	return ""
}

// opencodeSubstitutes reports whether opencode would rewrite s when it
// reads its configuration: opencode 1.18.33 replaces "{env:NAME}" with a
// variable of its own environment and "{file:PATH}" with a file's
// content in every string of the configuration (observed: a server
// environment value "{env:AGENTRT_OPENCODE_API_KEY}" handed the server
// the bridge's API key; a prompt "{file:/etc/hostname}" became the host
// name). There is no escape, so such a value is refused rather than
// written.
func opencodeSubstitutes(s string) bool {
	l := strings.ToLower(s)
	return strings.Contains(l, "{env:") || strings.Contains(l, "{file:")
}

// opencodeConfig is the part of opencode's configuration the bridge
// writes.
type opencodeConfig struct {
	Schema     string                            `json:"$schema"`
	Autoupdate bool                              `json:"autoupdate"`
	Share      string                            `json:"share"`
	Model      string                            `json:"model,omitempty"`
	Provider   map[string]opencodeProviderConfig `json:"provider,omitempty"`
	// Agent disables the title agent (without it every new session
	// makes one more model call, a title, outside the turn's usage) and
	// carries the replacing system prompt as the build agent's prompt.
	Agent map[string]opencodeAgent `json:"agent"`
	// Instructions are files whose content opencode adds to its system
	// prompt: the appended system prompt.
	Instructions []string `json:"instructions,omitempty"`
	// MCP are the mounted MCP servers.
	MCP map[string]opencodeMCP `json:"mcp,omitempty"`
	// Tools enables (true) or removes (false) built-in tools.
	Tools map[string]bool `json:"tools,omitempty"`
	// Permission allows or denies tools (and bash command patterns).
	Permission *opencodePermissions `json:"permission,omitempty"`
}

// opencodeAgent is one agent's configuration.
type opencodeAgent struct {
	Disable bool   `json:"disable,omitempty"`
	Prompt  string `json:"prompt,omitempty"`
}

// opencodeMCP is one MCP server of opencode's configuration: a local
// one's command and arguments as one array and its environment, or a
// remote one's url and headers.
type opencodeMCP struct {
	Type        string            `json:"type"`
	Command     []string          `json:"command,omitempty"`
	Environment map[string]string `json:"environment,omitempty"`
	URL         string            `json:"url,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Enabled     bool              `json:"enabled"`
}

// opencodeProviderConfig defines the bridge's provider: the bundled
// OpenAI-compatible SDK (no package download) at the endpoint, with the
// key, both read from the environment.
type opencodeProviderConfig struct {
	NPM     string                    `json:"npm"`
	Name    string                    `json:"name"`
	Options map[string]string         `json:"options"`
	Models  map[string]map[string]any `json:"models"`
}

// opencodeModel is the -m value for model: with a BaseURL, a model of the
// bridge's provider (a bare name, or "agentrt/name"); without one, the
// provider/model id as given. A model opencode would substitute in its
// configuration is refused.
func opencodeModel(t *turnSpec, model string) (full, bare string, err error) {
	if opencodeSubstitutes(model) {
		return "", "", fmt.Errorf("clibridge: model %q: opencode would substitute its {env:...} or {file:...} text: %w", model, contract.ErrUnsupported)
	}
	if t.baseURL == "" {
		return model, "", nil
	}
	bare = strings.TrimPrefix(model, opencodeProvider+"/")
	if bare == "" {
		return "", "", fmt.Errorf("clibridge: opencode against a BaseURL needs a model (the turn's, the profile's default or Options.Model): %w", contract.ErrUnsupported)
	}
	return opencodeProvider + "/" + bare, bare, nil
}

// materialize builds the opencode argv (run --format json, the prompt
// read from standard input) and its configuration file: the bridge's
// provider and model, autoupdate, share and the title agent off, the
// system prompts (each in a file of its own), the tools and permissions
// and the mounted MCP servers. XDG directories live in
// the environment's HOME.
func (d opencodeDriver) materialize(t *turnSpec) (*plan, error) {
	p := t.profile
	if p == nil {
		p = &profile.Profile{}
	}
	home := t.dirs.home
	pl := &plan{env: map[string]string{
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
	}}
	for k, v := range opencodeFixedEnv {
		pl.env[k] = v
	}
	ap := &pl.receipt.Applied
	args := []string{"run", "--format", "json"}
	cfg := opencodeConfig{Schema: "https://opencode.ai/config.json", Share: "disabled",
		Agent: map[string]opencodeAgent{"title": {Disable: true}}}
	full, bare, err := opencodeModel(t, turnModel(t, p))
	if err != nil {
		return nil, err
	}
	if t.baseURL != "" {
		pl.env[opencodeBaseURLEnv] = t.baseURL
		pl.env[opencodeAPIKeyEnv] = t.apiKey
		cfg.Provider = map[string]opencodeProviderConfig{opencodeProvider: {
			NPM: "@ai-sdk/openai-compatible", Name: opencodeProvider,
			Options: map[string]string{"baseURL": "{env:" + opencodeBaseURLEnv + "}", "apiKey": "{env:" + opencodeAPIKeyEnv + "}"},
			Models:  map[string]map[string]any{bare: {"name": bare}},
		}}
	}
	if full != "" {
		args = append(args, "--model", full)
		cfg.Model = full
		ap.Model = full
	}
	effort, native, err := nativeEffort(harness.OpenCode, p)
	if err != nil {
		return nil, err
	}
	if effort != "" {
		if t.baseURL == "" {
			// Without the bridge's provider the variant may not exist, and
			// opencode ignores an unknown --variant silently.
			return nil, fmt.Errorf("clibridge: effort %q (opencode applies it only as a variant of the bridge's provider, which needs a BaseURL): %w",
				effort, contract.ErrUnsupported)
		}
		// opencode applies --variant only when the model declares that
		// variant; its options become the request's reasoning_effort.
		cfg.Provider[opencodeProvider].Models[bare]["variants"] = map[string]any{native: map[string]string{"reasoningEffort": native}}
		args = append(args, "--variant", native)
		ap.ReasoningEffort, ap.NativeEffort = effort, native
	}
	if len(p.MCP) > 0 {
		mounted, disabled, err := mcpMounts(p.MCP, opencodeMCPCheck)
		if err != nil {
			return nil, err
		}
		cfg.MCP = map[string]opencodeMCP{}
		for _, s := range mounted {
			if s.url != "" {
				cfg.MCP[s.name] = opencodeMCP{Type: "remote", URL: s.url, Headers: s.headers, Enabled: true}
			} else {
				cfg.MCP[s.name] = opencodeMCP{Type: "local", Command: append([]string{s.command}, s.args...), Environment: s.env, Enabled: true}
			}
		}
		ap.MCPServers, ap.DisabledMCPServers = mcpNames(mounted), disabled
	}
	if pr := p.Prompt; pr != nil {
		// The prompts travel in files the configuration names: opencode
		// would substitute {env:...} and {file:...} in a prompt written
		// into the configuration itself, but not in a file's content.
		if (pr.SystemPrompt != nil || pr.AppendSystemPrompt != nil) && strings.ContainsAny(t.dirs.bridge, "{}") {
			// The files' paths are configuration strings too: opencode
			// would substitute them, and {file:...} cannot carry a brace.
			return nil, fmt.Errorf("clibridge: the environment's path %q holds braces opencode's configuration cannot carry: %w", t.dirs.bridge, contract.ErrUnsupported)
		}
		if pr.SystemPrompt != nil {
			path := filepath.Join(t.dirs.bridge, fmt.Sprintf("turn-%d-system-prompt.md", t.turn))
			pl.addFile(t, path, []byte(*pr.SystemPrompt), "system-prompt")
			cfg.Agent[opencodeBuildAgent] = opencodeAgent{Prompt: "{file:" + path + "}"}
			ap.SystemPromptDigest = textDigest(*pr.SystemPrompt)
		}
		if pr.AppendSystemPrompt != nil {
			path := filepath.Join(t.dirs.bridge, fmt.Sprintf("turn-%d-append-system-prompt.md", t.turn))
			pl.addFile(t, path, []byte(*pr.AppendSystemPrompt), "append-system-prompt")
			cfg.Instructions = []string{path}
			ap.AppendSystemPromptDigest = textDigest(*pr.AppendSystemPrompt)
		}
	}
	if len(p.Tools) > 0 {
		cfg.Tools = p.Tools
	}
	if len(p.Permissions) > 0 {
		cfg.Permission = &opencodePermissions{profile: p.Permissions}
	}
	ap.AllowedTools, ap.DisallowedTools = opencodeRules(p)
	content, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, errors.Join(errors.New("clibridge: rendering the opencode configuration"), err)
	}
	path := filepath.Join(t.dirs.bridge, fmt.Sprintf("turn-%d-opencode.json", t.turn))
	pl.addFile(t, path, content, "opencode-config")
	pl.env["OPENCODE_CONFIG"] = path
	pl.args = args
	pl.receipt.Args = args
	return pl, nil
}
