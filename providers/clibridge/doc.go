// Package clibridge runs coding-agent harness CLIs as child processes
// behind the provider contract (layer 2). Each harness is a driver of one
// small interface (binary lookup, argv/config materialization, a
// stream-line normalizer): claude-code (npm @anthropic-ai/claude-code,
// observed at 2.1.197), codex (npm @openai/codex, observed at 0.171.0)
// and opencode (npm opencode-ai, observed at 1.18.33). All three share
// one normalizer base (stream.go) and one set of profile checks
// (checkCommon). New refuses a harness without a driver with
// ErrHarnessUnsupported.
//
// # What the bridge owns
//
// An environment is a directory under Options.WorkRoot holding the
// workspace (the harness's working directory), an isolated HOME with the
// harness's configuration directory, a TMPDIR and the bridge's own files.
// Create spawns nothing. Each turn runs the harness once, shell-free (the
// binary and argv exactly), in its own process group, with a replacement
// environment: PATH, HOME, TMPDIR, the caller's variables (Options.Env and
// the create input's, with runtime process-control names and the names
// the bridge sets refused) and the driver's own. The turn's prompt is
// written to the harness's standard input, never to its argv. One turn
// runs at a time per environment.
//
// A turn's profile, when it carries one, replaces the environment's for
// that turn; each turn is a fresh harness session (no continuation).
//
// Cancelling the turn's context (or destroying the environment) kills
// the whole process group and ends the turn "cancelled", never "failed";
// the turn's own timeoutMs kills it too but ends it "failed". When the harness exits, whatever
// remains of its group is killed too. A process that dies before its
// result line, or exits non-zero, ends the turn "failed", never
// "completed".
//
// # What it refuses (before spawning anything)
//
// New refuses a harness without a driver, a binary that is not installed
// (*BinaryNotFoundError, naming the npm package) and refused variables
// (*EnvRefusedError). Create and each turn refuse, with errors matching
// contract.ErrUnsupported, every profile feature the driver cannot
// apply: first what contract.CheckProfileSupport finds against the
// capability document (instructions, subagents, hooks, modes, resources,
// extensions), then the driver's own checks — for claude-code: another
// harness, seats, connections, confidential execution, a model provider
// other than anthropic, a small model, token ceilings, an effort without
// a native control (harness.NativeReasoningControl), tool or permission
// keys that name no claude-code tool, "ask" permissions (print mode has no
// one to ask and the bridge declares no interactions), rule patterns
// claude's rule lists cannot carry, and MCP servers with secret
// references or a working directory other than the workspace (codex and
// opencode: see their sections). Turns asking for detach, replay,
// control references, context transfer, native continuation,
// interactions or non-text parts are refused too.
//
// # claude-code: what the argv applies
//
//	claude -p --output-format=stream-json --verbose --setting-sources=user
//	  --strict-mcp-config --permission-mode=dontAsk
//	  [--model=M] [--effort=E] [--system-prompt=S] [--append-system-prompt=A]
//	  [--allowedTools=R]... [--disallowedTools=R]... [--mcp-config=FILE]
//
// with CLAUDE_CONFIG_DIR in the environment's HOME,
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, DISABLE_TELEMETRY,
// DISABLE_AUTOUPDATER and DISABLE_ERROR_REPORTING set, and
// ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY from Options. The model is the
// turn's, else the profile's default, else Options.Model; the effort is
// the native token of the profile's reasoning effort; a tools entry true/false is an allowed/
// disallowed rule for that tool; a permission value allow/deny is one for
// the tool ("bash" → Bash, …), a pattern "p" one for "Tool(p)" and "*" the
// whole tool. Under dontAsk a tool call without an allow rule is denied
// rather than asked for, except what claude itself deems read-only
// (observed: "touch pwned" denied, "echo hi" run). MCP servers are written to a per-turn JSON file (public
// values only) and mounted alone (--strict-mcp-config), with
// MCP_CONNECTION_NONBLOCKING=false and MCP_CONNECT_TIMEOUT_MS set to
// MCPStartTimeout: claude-code's own bound is 5 s, past which it starts
// the turn without a server still connecting and never offers its tools
// in it, so a slow-starting server would silently be absent
// (TestMCPServerSlowToStart; codex's servers get startup_timeout_sec
// likewise, and are required). A server claude's init line reports not
// connected (failed, or still pending past that bound) stops the turn:
// it fails naming the server rather than running without its tools
// (TestMCPServerThatCannotStartFailsTheTurn).
//
// Observed of the real binary (see testdata/claude-code/README): it
// calls HEAD on the base URL, then POST /v1/messages?beta=true (always
// streamed) once per model call, with the key in x-api-key and its session
// id in X-Claude-Code-Session-Id; no count_tokens or side-model calls.
// --system-prompt replaces the coding-agent prompt but claude keeps its
// one-line SDK identity block before it.
//
// # codex: what the argv and configuration apply
//
//	codex exec --json --strict-config --skip-git-repo-check --ephemeral
//	  --sandbox=read-only [--model=M] -
//
// with CODEX_HOME the environment's configuration directory, holding a
// per-turn config.toml: model_provider "agentrt", approval_policy
// "never", no update check, analytics or feedback,
// [model_reasoning_effort = E], [instructions = S],
// [developer_instructions = A], [mcp_servers.NAME]... and
// [model_providers.agentrt] with base_url (Options.BaseURL, the API base
// including /v1; else https://api.openai.com/v1), env_key OPENAI_API_KEY
// (set from Options.APIKey) and wire_api "responses". The model is the
// turn's, else the profile's default, else Options.Model; E is the
// native token of the profile's reasoning effort (harness.NativeReasoningControl: the
// canonical name, ultracode → "ultra", which codex 0.171.0 accepts but
// sends the API as "xhigh"); S, the profile's systemPrompt, replaces
// codex's built-in base instructions (the first developer message of
// the request becomes exactly S); A, its appendSystemPrompt, is added
// as the first part of the next developer message, the base
// instructions (or S) kept before it. Each mounted MCP server is an
// [mcp_servers.NAME] table (command, args and env for a local server, or
// url and http_headers for a streamable-HTTP one — public values only —
// and default_tools_approval_mode "approve": under approval_policy
// "never" codex fails every MCP tool call of a server whose tools are
// not pre-approved). A tools key mcp__SERVER__TOOL of a mounted server
// set false puts TOOL in that server's disabled_tools (codex then
// neither offers it nor runs a call of it); true needs nothing (the
// server's tools are offered and pre-approved). Every other tools key and
// all permissions are refused: codex's sandbox mode and approval policy
// govern every command alike, and it has no per-tool allow or deny for
// its own tools that a profile's rules map onto exactly. Refused too are
// MCP servers codex cannot be given exactly (SSE ones, secret
// references, a working directory other than the workspace, a name that
// is not ASCII letters, digits and single '_') and a model provider other
// than openai (plus the checks every driver makes: harness, seats,
// connections, confidential, small model, token ceilings).
// Model-generated commands run in codex's read-only sandbox (observed:
// "touch" fails with a read-only file system, "echo hi" runs) and no
// approval is ever asked for. MCP servers
// run outside that sandbox, started by codex in the workspace with the
// configured environment (observed: the probe server wrote its log
// outside the workspace), and their tools run without asking.
//
// Observed of the real binary (see testdata/codex/README): it calls only
// POST <base_url>/responses (always streamed), once per model call, with
// the key as a bearer token and its thread id in Session-Id and
// Thread-Id. OPENAI_BASE_URL is ignored (hence the config file). For a
// command that fails fast in the sandbox it sometimes writes no
// command_execution item at all; the tool part is then simply missing.
//
// # How the claude-code stream maps to canonical events
//
//   - system/init: a private native.session.observed (session_id) and a
//     public "system.init" event normalized as status started, carrying
//     effectiveBackend {provider anthropic, model} (the init model without
//     its "[1m]" context marker), the harness version, tools, permission
//     mode and MCP servers;
//   - assistant: each text or thinking block is message.part.updated
//     with a text or reasoning part and its delta (split under the
//     contract's string bound); each tool_use block a tool part in state
//     running; effectiveBackend carries the message's model, except for
//     claude's "<synthetic>" error messages and subagent messages;
//   - user tool_result blocks: the tool part completed (output) or error;
//   - result: held until the process exits, then the one terminal event
//     "result" — completed only for subtype success, is_error false and
//     exit 0, with the result's usage (the turn's total over every API
//     call) as usageMode cumulative — inputTokens the whole prompt,
//     input_tokens plus the cache reads and writes it excludes, which stay
//     broken out; otherwise failed, with no usage
//     (claude's partial account of a failed turn is not reported as
//     known);
//   - any other line: a "raw" event with the line as its normalized raw
//     event; an unreadable line: a warning.
//
// # How the codex stream maps to canonical events
//
//   - thread.started: a private native.session.observed (thread_id) and a
//     public "thread.started" event normalized as status started;
//   - item.completed agent_message and reasoning items: message.part.updated
//     with a text or reasoning part ("item.agent_message",
//     "item.reasoning"); the last message is the turn's final text;
//   - command_execution, file_change, mcp_tool_call and web_search items: a
//     tool part (tool "command_execution", …, "mcp__server__tool"), running
//     on item.started, then completed (output) or error (status failed or
//     declined, a non-zero exit code, an error) on item.completed;
//   - error lines and error items: warnings (codex's retry notices and
//     non-fatal errors);
//   - turn.completed / turn.failed: held until the process exits, then the
//     one terminal event "result" — completed only for turn.completed and
//     exit 0, with its usage (the turn's total over every model call) as
//     usageMode cumulative: input_tokens (which include the cached ones,
//     as the Responses API counts them), output_tokens (which include the
//     reasoning ones), cached_input_tokens as cacheReadInputTokens,
//     cache_write_input_tokens as cacheCreationInputTokens and
//     reasoning_output_tokens as reasoningTokens; otherwise failed with
//     turn.failed's message and no usage;
//   - any other line (turn.started, todo lists, unknown items): "raw".
//
// codex's stream names neither the served model nor its version, so both
// stay unknown ("") in the turn's outcome.
//
// # opencode: what the argv and configuration apply
//
//	opencode run --format json [--model agentrt/M] [--variant V]
//
// with OPENCODE_CONFIG naming a per-turn configuration file the bridge
// writes (autoupdate off, share disabled, the title agent disabled, the
// model) and, when
// Options.BaseURL is set, a provider "agentrt" on opencode's bundled
// "@ai-sdk/openai-compatible" SDK whose baseURL and apiKey are read from
// AGENTRT_OPENCODE_BASE_URL and AGENTRT_OPENCODE_API_KEY ({env:...}, so
// neither is written to a file); BaseURL is then an OpenAI-compatible
// base (".../v1"). The model is the turn's, else the profile's default,
// else Options.Model, and is declared under the provider (opencode
// refuses an undeclared one); without a BaseURL it is passed as the
// provider/model id given, and Options.APIKey is not used (opencode
// then relies on its own, isolated and empty, credentials). The effort is harness.NativeReasoningControl's
// token, passed as --variant and declared as a variant of the model
// ({"reasoningEffort": V}, which becomes the request's reasoning_effort):
// opencode ignores an undeclared --variant silently, so an effort
// without a BaseURL is refused. XDG_CONFIG_HOME, XDG_DATA_HOME,
// XDG_CACHE_HOME and XDG_STATE_HOME are in the environment's HOME, and
// OPENCODE_DISABLE_AUTOUPDATE, _SHARE, _MODELS_FETCH, _LSP_DOWNLOAD,
// _DEFAULT_PLUGINS, _PROJECT_CONFIG (no opencode.json from the
// workspace), _CLAUDE_CODE, _CLAUDE_CODE_SKILLS, _EXTERNAL_SKILLS and
// _EMBEDDED_WEB_UI are set.
//
// Each mounted MCP server is an entry of the configuration's "mcp":
// {"type": "local", "command": [command, args...], "environment": env,
// "enabled": true} or {"type": "remote", "url": url, "headers": headers,
// "enabled": true} (public values only; SSE servers, secret
// references, another working directory, names that are not ASCII
// letters, digits and single '_', and any value holding "{env:" or
// "{file:" — opencode substitutes those in every configuration string,
// with no escape, and would hand the server the bridge's key — are
// refused, as is such a model). opencode starts it in the workspace and
// offers its tools as "<server>_<tool>".
//
// The profile's systemPrompt S is written to a file and becomes the
// prompt of the build agent (the one opencode run uses), "agent": {"build":
// {"prompt": "{file:PATH}"}}: the request's system message is then S, a
// newline and opencode's own environment part (the model line, the
// <env> block, the skills) instead of its built-in prompt; an empty S is
// refused (opencode would send its built-in prompt). Its
// appendSystemPrompt A is written to a file named in "instructions":
// opencode keeps its prompt and adds "Instructions from: PATH", a
// newline and A after the <env> block. Files, because opencode would
// substitute {env:...} and {file:...} in a prompt written into the
// configuration, not in a file's content.
//
// The profile's tools are the configuration's "tools" ({NAME: false}
// removes that tool from the model call) for opencode's built-in tools
// (bash, edit, glob, grep, read, skill, task, todowrite, webfetch,
// write); its permissions are "permission" for the keys bash, edit
// (which covers edit and write), glob, grep, read, skill, task,
// todowrite and webfetch — "deny" removes the tool, "allow" lets it run
// — and, for bash only, command patterns. opencode applies the last
// matching rule, so each tool's allow patterns are written before its
// deny patterns: a command both match is denied, as in claude-code. A
// denied command never runs; the model is told a rule prevents it.
// Refused: other tool or permission keys (opencode ignores an unknown
// one silently; MCP tools were not verified), "ask" (opencode run has no
// one to ask and the bridge declares no interactions), patterns for
// another key than bash, patterns holding {env: or {file: text, and a
// model provider. Without rules opencode run executes tool calls
// without asking (observed: a bash "echo hi" ran); a command no pattern
// matches follows opencode's default (allowed).
//
// Observed of the real binary (see testdata/opencode/README): it calls
// only POST {baseURL}/chat/completions, streamed, with the key as a
// bearer token and its session id in x-session-id, one call per model
// step (its title-generation call for a new session is disabled through
// the configuration's agent.title).
// Its stdout lines are step_start, text (a complete text part, written
// once), tool_use (a tool part, written once when the call ended),
// step_finish (one step's tokens and cost) and error; none names the
// served model or the opencode version, and none ends the turn.
//
// # How the opencode stream maps to canonical events
//
//   - the first sessionID: the private native.session.observed;
//   - text (and reasoning) lines: message.part.updated with a text (or
//     reasoning) part whose delta is its whole text (split under the
//     contract's string bound);
//   - tool_use: a tool part keyed by its callID in the state opencode
//     reports (completed with its output, error with its error);
//   - step_finish: a "step_finish" event carrying the step's counts as
//     data; the steps' usage is summed (inputTokens the whole prompt:
//     opencode's tokens.input excludes the cache reads and writes, which
//     are added in and stay broken out);
//   - error: a warning, and the turn fails;
//   - step_start and anything else: raw; an unreadable line: a warning.
//
// At exit the one terminal event: "result", completed only when opencode
// exited 0, wrote no error line and finished at least one step, the last
// not for an error — with the summed usage as usageMode cumulative (every
// model call of the turn: the title call is disabled); otherwise failed
// with no usage; cancelled when the caller cancelled. The served model
// is unknown ("").
//
// Stream hands its consumer everything but the private native session
// observation; StreamOwned, for the execution owner only, yields it too.
// Environment.Turns returns each ended turn's record: the receipt and
// what the stream established (native session id, served model, harness
// version, usage, final text).
//
// # The receipt
//
// Each turn's first event, "clibridge.materialization", carries the
// Receipt and its canonical digest: the binary path, the argv with the
// system prompt values replaced by their sha256 digests, the prompt's
// digest, the files written (path relative to the environment, the
// digest of their bytes with the key and endpoint redacted, purpose),
// the names — never the values — of every environment variable, the
// profile's digest, and the applied model, effort (canonical and
// native), system prompt digests, tool rules, permission mode and MCP
// servers. codex and opencode receive their prompts and MCP servers in
// files (config.toml; opencode's configuration and its prompt files), so
// their argv carries none, and the receipt pins those files by digest
// only: an MCP server's environment values appear in no receipt or
// event. The API key and the endpoint never appear in a receipt, an
// event or an error: they are redacted from every stdout line and from
// the stderr tail a failure reports.
//
// # Unknown usage
//
// A usage report with no input token of any kind (input, cache reads and
// cache writes all zero) is unknown, never a measured zero: every model
// call a harness makes sends at least the prompt, and all three CLIs
// print zeros of their own when the endpoint sent no usage (observed
// against an endpoint omitting it; TestMissingUsageStaysUnknown).
//
// # Capabilities
//
// The document declares exactly what is enforced: the profile features
// the driver applies (claude-code: system prompt replace and append,
// tools, permissions, MCP, validation; codex: system prompt replace and
// append, tools (MCP tools only), MCP and validation; opencode: system
// prompt replace and append, tools, permissions, MCP and validation),
// live streaming and usage. No detach, replay, session continuation,
// workspace access, branching, placement, observation,
// interactions, context transfer or exact process.
package clibridge
