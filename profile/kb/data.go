package kb

import (
	"strings"

	"github.com/agentrt/agentrt/harness"
)

// CheckedAt is the day the shipped knowledge base was last checked against
// its sources.
const CheckedAt = "2026-11-29"

// CLI versions the harness claims were checked against.
const (
	claudeCodeVersion = "2.1.197" // npm @anthropic-ai/claude-code
	codexVersion      = "0.171.0" // npm @openai/codex
	opencodeVersion   = "1.18.33" // npm opencode-ai
)

// scratch describes how every local check was run.
const scratch = "npm install into a scratch directory outside the repository; HOME set to a scratch directory; not logged in; no model API called"

func local(command, version, locator string) Source {
	if locator == "" {
		locator = scratch
	} else {
		locator += "; " + scratch
	}
	return Source{URL: "cli:" + command, CheckedAt: CheckedAt, Note: version, Authority: AuthorityLocal, Locator: locator}
}

var (
	claudeHelp        = local("claude --help", claudeCodeVersion, "")
	codexHelp         = local("codex --help", codexVersion, "")
	codexExecHelp     = local("codex exec --help", codexVersion, "")
	codexCatalog      = local("codex debug models --bundled", codexVersion, "the bundled model catalog: models[].slug, display_name, default_reasoning_level, supported_reasoning_levels, supported_in_api, visibility")
	codexPromptInput  = local("codex -c <key>=<value> debug prompt-input hello", codexVersion, "keys instructions, model_instructions_file and developer_instructions set to a marker string, run in an empty git repository; the marker's position read from the rendered JSON")
	codexEndpoint     = local("codex exec --json against a local OpenAI Responses endpoint", codexVersion, "$CODEX_HOME/config.toml model_reasoning_effort set to each level; the request's reasoning.effort read by the endpoint (providers/clibridge TestCodexEfforts)")
	opencodeHelp      = local("opencode --help", opencodeVersion, "")
	opencodeRunHelp   = local("opencode run --help", opencodeVersion, "")
	opencodeAgentList = local("opencode agent list", opencodeVersion, "no user or project configuration")
)

func observed(audience Audience, text string, sources ...Source) Claim {
	return Claim{Text: text, Basis: BasisLocalObservation, Audience: audience, Sources: sources}
}

// shippedData builds the shipped snapshot. Every call returns fresh
// values, so callers may change what they get.
func shippedData() Data {
	return Data{
		Harnesses:     shippedHarnesses(),
		Models:        shippedModels(),
		Learnings:     []Learning{},
		Discrepancies: shippedDiscrepancies(),
	}
}

func shippedHarnesses() []Harness {
	return []Harness{
		{
			ID: harness.ClaudeCode, Name: "Claude Code", Version: claudeCodeVersion,
			Claims: []Claim{
				observed(AudienceAgent, "When this Claude Code session was started with -p/--print, it is non-interactive: it prints one response and exits, so no one can answer a follow-up question during the run; put the result, or what blocked it, in that response.", claudeHelp),
				observed(AudienceOperator, "Headless runs use -p/--print, which prints the response and exits. In this mode the workspace trust dialog is skipped and settings files that fail validation are silently ignored, so run it only in trusted directories.", claudeHelp),
				observed(AudienceOperator, "--system-prompt <prompt> sets the session's system prompt; --append-system-prompt <prompt> appends to the default system prompt.", claudeHelp),
				observed(AudienceOperator, "--output-format takes text (the default), json (a single result) or stream-json and works only with --print; --input-format stream-json, --include-partial-messages, --max-budget-usd, --fallback-model and --no-session-persistence are print-mode options too.", claudeHelp),
				observed(AudienceOperator, "Reasoning effort is passed as --effort <level>, one of low, medium, high, xhigh or max.", claudeHelp),
				observed(AudienceOperator, "--model takes an alias for the latest model of a family (the help names fable, opus and sonnet) or a full model name such as claude-fable-5.", claudeHelp),
				observed(AudienceOperator, "--permission-mode takes acceptEdits, auto, bypassPermissions, default, dontAsk or plan; --tools limits the built-in tool set (\"\" disables all tools), and --allowedTools/--disallowedTools take tool patterns such as \"Bash(git *)\".", claudeHelp),
				observed(AudienceOperator, "--mcp-config loads MCP servers from JSON files or strings, and --strict-mcp-config uses only those servers.", claudeHelp),
				observed(AudienceOperator, "--bare skips hooks, LSP, plugin sync, auto-memory and CLAUDE.md auto-discovery and reads Anthropic auth only from ANTHROPIC_API_KEY or an apiKeyHelper given via --settings; context then has to be passed explicitly (system-prompt flags, --add-dir, --mcp-config, --settings, --agents, --plugin-dir).", claudeHelp),
			},
		},
		{
			ID: harness.Codex, Name: "Codex CLI", Version: codexVersion,
			Claims: []Claim{
				observed(AudienceAgent, "When Codex runs with the approval policy never (-a/--ask-for-approval never), no approval request reaches a user and a failed command is returned to you directly; handle the failure instead of waiting for approval.", codexHelp),
				observed(AudienceOperator, "Headless runs use codex exec [PROMPT] (alias e). Without a prompt argument, or with -, the prompt is read from stdin; when stdin is piped and a prompt is also given, stdin is appended as a <stdin> block.", codexExecHelp),
				observed(AudienceOperator, "Neither codex --help nor codex exec --help lists a system-prompt or append flag; the generic route they show is -c/--config key=value, which overrides ~/.codex/config.toml (the value is parsed as TOML, or taken as a literal string when that fails).", codexHelp, codexExecHelp),
				observed(AudienceOperator, "In codex debug prompt-input, -c instructions=<text> and -c model_instructions_file=<path> each replaced the model's built-in base instructions (the first developer message), while -c developer_instructions=<text> kept them and added the text as the first item of the next developer message.", codexPromptInput),
				observed(AudienceOperator, "codex exec --json prints events to stdout as JSONL; -o/--output-last-message <FILE> writes the agent's last message to a file; --output-schema <FILE> gives a JSON Schema for the final response.", codexExecHelp),
				observed(AudienceOperator, "Neither help output lists a reasoning-effort flag. The bundled model catalog lists each model's supported_reasoning_levels, drawn from low, medium, high, xhigh, max and ultra, and its default_reasoning_level. The config key model_reasoning_effort selects the level: none, minimal, low, medium, high and xhigh reach the request's reasoning.effort as they are, and ultra was sent as xhigh with the default model.", codexHelp, codexExecHelp, codexCatalog, codexEndpoint),
				observed(AudienceOperator, "codex exec takes -s/--sandbox read-only|workspace-write|danger-full-access, --skip-git-repo-check (to run outside a Git repository), --ephemeral (no session files on disk) and --ignore-user-config; -a/--ask-for-approval appears in codex --help but not in codex exec --help.", codexHelp, codexExecHelp),
				observed(AudienceOperator, "-m/--model selects the model; --oss with --local-provider lmstudio|ollama selects a local open-source provider.", codexHelp, codexExecHelp),
			},
		},
		{
			ID: harness.OpenCode, Name: "opencode", Version: opencodeVersion,
			Claims: []Claim{
				observed(AudienceOperator, "Headless runs use opencode run [message..]; --attach <url> attaches the run to a running opencode server (opencode serve starts one), and --dir sets the directory to run in.", opencodeHelp, opencodeRunHelp),
				observed(AudienceOperator, "opencode --help and opencode run --help list no system-prompt or append flag; --agent <name> selects an agent. With no configuration, opencode agent list shows the primary agents build, compaction, plan, summary and title and the subagents explore and general.", opencodeHelp, opencodeRunHelp, opencodeAgentList),
				observed(AudienceOperator, "opencode run --format json emits raw JSON events; the default format is formatted text.", opencodeRunHelp),
				observed(AudienceOperator, "Reasoning effort is passed as opencode run --variant <name>, a model variant the help describes as provider-specific reasoning effort (examples: high, max, minimal); --thinking shows thinking blocks.", opencodeRunHelp),
				observed(AudienceOperator, "-m/--model takes provider/model; opencode models [provider] lists the available models, and its --refresh refreshes the models cache from models.dev.", opencodeRunHelp, local("opencode models --help", opencodeVersion, "")),
				observed(AudienceOperator, "--auto auto-approves permissions that are not explicitly denied; the help marks it dangerous.", opencodeHelp, opencodeRunHelp),
			},
		},
	}
}

// codexModel is an entry of the Codex CLI's bundled catalog, as listed.
func codexModel(slug, display string, def harness.ReasoningEffort, levels ...string) Model {
	return Model{
		ID: slug, Name: display, Vendor: "OpenAI",
		Surfaces: []Surface{SurfaceCodex}, Aliases: []string{}, DefaultEffort: def,
		Claims: []Claim{observed(AudienceOperator,
			"The Codex CLI "+codexVersion+" bundled catalog lists "+slug+" (display name "+display+", visibility list, supported_in_api true) with default_reasoning_level "+string(def)+" and supported_reasoning_levels "+strings.Join(levels, ", ")+".",
			codexCatalog)},
	}
}

func shippedModels() []Model {
	all := []string{"low", "medium", "high", "xhigh", "max", "ultra"}
	toMax := all[:5]
	toXHigh := all[:4]
	return []Model{
		{
			ID: "claude-fable-5", Name: "claude-fable-5", Vendor: "Anthropic",
			Surfaces: []Surface{}, Aliases: []string{},
			Claims: []Claim{observed(AudienceOperator, "claude --help names claude-fable-5 as an example of a full model name for --model.", claudeHelp)},
		},
		codexModel("gpt-6.2-sol", "GPT-6.2-Sol", harness.EffortLow, all...),
		codexModel("gpt-6.2-astra", "GPT-6.2-Astra", harness.EffortLow, all...),
		codexModel("gpt-6.1-terra", "GPT-6.1 Terra", harness.EffortLow, all...),
		codexModel("gpt-6.1-sol", "GPT-6.1-Sol", harness.EffortLow, all...),
		codexModel("gpt-6-astra", "GPT-6-Astra", harness.EffortLow, all...),
		codexModel("gpt-6-sol", "GPT-6-Sol", harness.EffortMedium, all...),
		codexModel("gpt-6-luna", "GPT-6-Luna", harness.EffortMedium, toMax...),
		codexModel("gpt-5.6-sol", "GPT-5.6-Sol", harness.EffortLow, all...),
		codexModel("gpt-5.6-terra", "GPT-5.6-Terra", harness.EffortMedium, all...),
		codexModel("gpt-5.6-luna", "GPT-5.6-Luna", harness.EffortMedium, toMax...),
		codexModel("gpt-5.5", "GPT-5.5", harness.EffortMedium, toXHigh...),
	}
}

func shippedDiscrepancies() []Discrepancy {
	return []Discrepancy{
		{
			Subject:   "codex reasoning effort levels",
			Requested: "agentrt's harness tables let codex express none, minimal, low, medium, high, xhigh and ultracode, passing none as none, minimal as minimal and ultracode as ultra (harness.ReasoningEfforts, harness.NativeReasoningControl)",
			Observed:  "the codex 0.171.0 bundled catalog lists supported_reasoning_levels drawn only from low, medium, high, xhigh, max and ultra: none and minimal appear for no listed model, no agentrt effort is passed as max, gpt-6-luna and gpt-5.6-luna stop at max and gpt-5.5 stops at xhigh",
			Sources:   []Source{codexCatalog},
			CheckedAt: CheckedAt,
		},
		{
			Subject:   "claude-code prompt file flags",
			Requested: "--system-prompt-file and --append-system-prompt-file, which the --bare description in claude --help names as ways to pass context",
			Observed:  "the claude 2.1.197 --help option list has --system-prompt and --append-system-prompt but no -file variants; whether the CLI accepts them was not checked",
			Sources:   []Source{claudeHelp},
			CheckedAt: CheckedAt,
		},
	}
}
