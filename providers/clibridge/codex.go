package clibridge

import (
	"fmt"
	"path/filepath"
	"strings"

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

// profileCaps: the replacing system prompt (codex's instructions key,
// which replaces its built-in base instructions; codex has no append
// route the bridge verified) and validation. Tools, permissions and MCP
// servers are not applied by this driver, so they are not declared and
// a profile carrying them is refused.
func (codexDriver) profileCaps() contract.ProfileCapabilities {
	return contract.ProfileCapabilities{
		SystemPrompt: harness.PromptIntents(harness.Codex),
		Validation:   true,
	}
}

// check refuses what codex cannot be told by this driver (beyond the
// capability document's flags).
func (d codexDriver) check(p *profile.Profile) []error {
	if p == nil {
		return nil
	}
	return checkCommon(d, "openai", "the OpenAI Responses API", p)
}

// materialize writes codex's configuration (CODEX_HOME/config.toml: the
// bridge's model provider, the approval policy, no update check,
// analytics or feedback, the effort and the replacing instructions) and
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
	if pr := p.Prompt; pr != nil && pr.SystemPrompt != nil {
		set("instructions", *pr.SystemPrompt)
		ap.SystemPromptDigest = textDigest(*pr.SystemPrompt)
	}
	// No analytics and no feedback uploads: the turn talks to the model
	// endpoint only.
	fmt.Fprintf(&cfg, "\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n")
	fmt.Fprintf(&cfg, "\n[model_providers.%s]\n", codexProvider)
	set("name", codexProvider)
	set("base_url", baseURL)
	set("env_key", codexKeyEnv)
	set("wire_api", "responses")
	pl.addFile(t, filepath.Join(t.dirs.config, "config.toml"), []byte(cfg.String()), "codex-config")
	pl.args = args
	pl.receipt.Args = args
	return pl, nil
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
