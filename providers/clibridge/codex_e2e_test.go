package clibridge

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// codexScript answers a prompt mentioning "use shell" with an
// exec_command call first and text after its result; anything else with
// text.
func codexScript(req fakeRequest) fakeReply {
	switch {
	case strings.Contains(req.LastUser, "use shell") && !req.HasResult:
		return fakeReply{ToolName: "exec_command", ToolInput: `{"cmd":"echo hi"}`, In: 11, Out: 7, Cached: 1}
	case req.HasResult:
		return fakeReply{Text: "Done: hi", In: 17, Out: 5, Cached: 4}
	}
	return fakeReply{Text: "Hello.", In: 12, Out: 3, Cached: 2}
}

// responsesBody is what the tests read of a Responses API call.
type responsesBody struct {
	Model     string `json:"model"`
	Stream    bool   `json:"stream"`
	Reasoning struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Input []responsesInput `json:"input"`
}

// responses decodes a model call's body.
func responses(t *testing.T, r fakeRequest) responsesBody {
	t.Helper()
	var b responsesBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("the model call's body: %v", err)
	}
	return b
}

// eventTypes lists the events' types.
func eventTypes(evs []contract.EnvironmentEvent) []string {
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return types
}

// codexProbe is the replacing system prompt of the end-to-end test: its
// quotes, backslash, tab, newline, control and non-ASCII characters must
// survive codex's TOML configuration exactly.
const codexProbe = "You are the \"e2e\" probe.\n\tC:\\path \u0007 é"

// Issue 7, item 3: the real codex binary, driven by the bridge against a
// local Responses API, yields the canonical events, the exact usage the
// server reported, the native session id and a receipt of exactly what
// was applied — and never the key or endpoint.
func TestCodexEndToEnd(t *testing.T) {
	f := newFakeServer(t, openAIAPI{}, codexScript)
	p := newCodexProvider(t, f)
	pr := &profile.Profile{
		Name:    profile.Ptr("e2e"),
		Harness: harness.Codex,
		Model:   &profile.ModelHints{Default: profile.Ptr("gpt-e2e-1"), ReasoningEffort: harness.EffortHigh},
		Prompt:  &profile.Prompt{SystemPrompt: profile.Ptr(codexProbe)},
	}
	env := newTestEnv(t, p, pr)
	evs, first := toolTurn(t, f, env, "please use shell")

	// Wire: the key as a bearer token, the profile's model, effort and
	// replacing instructions applied.
	if got := first.Header.Get("Authorization"); got != "Bearer "+fakeKey {
		t.Errorf("authorization = %q", got)
	}
	body := responses(t, first)
	if body.Model != "gpt-e2e-1" || !body.Stream || body.Reasoning.Effort != "high" {
		t.Errorf("request model %q stream %t effort %q", body.Model, body.Stream, body.Reasoning.Effort)
	}
	if meta := first.Header.Get("X-Codex-Turn-Metadata"); !strings.Contains(meta, `"analytics_enabled":false`) {
		t.Errorf("codex's turn metadata %s: analytics not disabled", meta)
	}
	if len(body.Input) == 0 || body.Input[0].Role != "developer" || len(body.Input[0].Content) == 0 ||
		body.Input[0].Content[0].Text != codexProbe {
		t.Errorf("the first input is not the profile's instructions: %+v", body.Input[:min(1, len(body.Input))])
	}

	// Events: receipt first, then the private session and started, the
	// tool running and completed, the text, and one completed result
	// with the exact usage.
	types := eventTypes(evs)
	var mapped []string
	for _, typ := range types {
		if typ != contract.EventTypeRaw && typ != contract.EventTypeWarning {
			mapped = append(mapped, typ)
		}
	}
	want := []string{"clibridge.materialization", "native.session.observed", "thread.started", "item.command_execution",
		"item.command_execution", "item.agent_message", "result"}
	if !slices.Equal(mapped, want) {
		t.Fatalf("event types %v (mapped %v), want %v", types, mapped, want)
	}
	if u := checkToolTurnUsage(t, evs); u.CacheReadInputTokens == nil || *u.CacheReadInputTokens != 1+4 {
		t.Errorf("usage %+v, want 5 cached input tokens", u)
	}
	var tools []contract.Part
	var text string
	for _, ev := range evs {
		if ev.Normalized == nil || ev.Normalized.MessagePartUpdated == nil {
			continue
		}
		part := ev.Normalized.MessagePartUpdated.Part
		if part.IsTool() {
			tools = append(tools, part)
		} else if part.Type == contract.PartTypeText {
			text += *part.Text
		}
	}
	if len(tools) != 2 || tools[0].State.Status != contract.ToolStatusRunning || tools[1].State.Status != contract.ToolStatusCompleted ||
		!strings.Contains(tools[1].State.Input["command"].Str(), "echo hi") || strings.TrimSpace(tools[1].State.Output.Str()) != "hi" {
		t.Errorf("tool parts %+v", tools)
	}
	if text != "Done: hi" {
		t.Errorf("text %q", text)
	}

	// Native session id: the thread id codex sent the server as its
	// session id, private; the served model is unknown (the stream does
	// not report it).
	recs := checkSession(t, env, evs, first.Header.Get("Session-Id"))
	out := recs[0].Outcome
	if out.ServedModel != "" || out.Text != "Done: hi" || out.Terminal != contract.TerminalCompleted {
		t.Errorf("outcome %+v", out)
	}

	// Receipt: exactly the flags applied, the configuration file's
	// digest, env names only.
	rc := recs[0].Receipt
	for _, arg := range []string{"exec", "--json", "--strict-config", "--model=gpt-e2e-1", "--sandbox=read-only", "--skip-git-repo-check", "--ephemeral"} {
		if !slices.Contains(rc.Args, arg) {
			t.Errorf("receipt args %v lack %s", rc.Args, arg)
		}
	}
	if rc.Applied.PromptDigest != canonjson.DigestBytes([]byte("please use shell")) || rc.Applied.NativeEffort != "high" ||
		rc.Applied.SystemPromptDigest != canonjson.DigestBytes([]byte(codexProbe)) || rc.Applied.Model != "gpt-e2e-1" {
		t.Errorf("receipt applied %+v", rc.Applied)
	}
	if len(rc.Files) != 1 || rc.Files[0].Purpose != "codex-config" || rc.Files[0].Path != "home/.config/codex/config.toml" {
		t.Errorf("receipt files %+v", rc.Files)
	}
	if !slices.Contains(rc.EnvNames, "OPENAI_API_KEY") || !slices.Contains(rc.EnvNames, "CODEX_HOME") {
		t.Errorf("receipt env names %v", rc.EnvNames)
	}
	checkNoSecrets(t, f, evs, recs)

	checkPublicStream(t, env)
}

// Model-generated commands run in codex's read-only sandbox: a
// file-writing command leaves the workspace untouched, the model is told
// the file system is read-only, and the tool part (when codex reports
// one) ends in error.
func TestCodexReadOnlySandbox(t *testing.T) {
	f := newFakeServer(t, openAIAPI{}, func(req fakeRequest) fakeReply {
		if !req.HasResult {
			return fakeReply{ToolName: "exec_command", ToolInput: `{"cmd":"touch pwned"}`, In: 4, Out: 2}
		}
		return fakeReply{Text: "ok", In: 5, Out: 1}
	})
	env := newTestEnv(t, newCodexProvider(t, f), nil)
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("write a file")})
	if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
		t.Errorf("terminal %q, want completed (the model answered after the failed command)", kind)
	}
	if _, err := os.Stat(filepath.Join(env.(*Environment).WorkDir(), "pwned")); err == nil {
		t.Error("a file-writing command ran outside the read-only sandbox")
	}
	// What codex returned to the model says the sandbox refused the
	// write.
	msgs := f.messages()
	var b struct {
		Input []struct {
			Type   string `json:"type"`
			Output string `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(msgs[len(msgs)-1].Body, &b); err != nil {
		t.Fatal(err)
	}
	if i := len(b.Input) - 1; i < 0 || b.Input[i].Type != "function_call_output" || !strings.Contains(b.Input[i].Output, "Read-only file system") {
		t.Errorf("the command's output sent to the model: %+v", b.Input[max(len(b.Input)-1, 0):])
	}
	// codex 0.171.0 sometimes writes no command_execution item for such a
	// command (observed about once in six runs); when it does, the last
	// state is error.
	var states []string
	for _, ev := range evs {
		if ev.Type == "item.command_execution" {
			states = append(states, ev.Normalized.MessagePartUpdated.Part.State.Status)
		}
	}
	if len(states) == 0 {
		t.Logf("codex reported no command_execution item this time (events %v)", eventTypes(evs))
	} else if states[len(states)-1] != contract.ToolStatusError {
		t.Errorf("command states %v, want the last one error", states)
	}
}

// What codex cannot be told is refused before anything is spawned:
// tools, permissions, MCP servers it cannot mount (SSE, with a secret
// reference, another working directory, a name that is no tool name),
// another vendor's model.
func TestCodexProfileRefusals(t *testing.T) {
	bin, marker := fakeCLI(t, "")
	p, err := New(Options{Harness: harness.Codex, Binary: bin, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for name, pr := range map[string]*profile.Profile{
		"tools":       {Tools: map[string]bool{"shell": true}},
		"permissions": {Permissions: map[string]profile.Permission{"bash": {Value: profile.Allow}}},
		"mcp-sse":     {MCP: map[string]profile.MCPServer{"s": {URL: profile.Ptr("https://mcp.example.com/sse"), Transport: profile.Ptr("sse")}}},
		"mcp-secret": {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("x"), Env: map[string]profile.ConfigValue{
			"TOKEN": {Kind: profile.ConfigSecretRef, Key: profile.Ptr("k")}}}}},
		"mcp-cwd":  {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("x"), Cwd: profile.Ptr("sub")}}},
		"mcp-name": {MCP: map[string]profile.MCPServer{"my.server": {Command: profile.Ptr("x")}}},
		"vendor":   {Model: &profile.ModelHints{Provider: profile.Ptr("anthropic")}},
		"harness":  {Harness: harness.ClaudeCode},
	} {
		if _, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: pr}}); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("%s: %v, want unsupported", name, err)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a refused profile spawned the harness")
	}
}

// Every canonical effort the codex driver admits is accepted by codex's
// strict configuration as its native token, and reaches the model call
// as reasoning.effort: the same token, except "ultra", which codex
// 0.171.0 sends as "xhigh" (observed with its default model).
func TestCodexEfforts(t *testing.T) {
	f := newFakeServer(t, openAIAPI{}, codexScript)
	p := newCodexProvider(t, f)
	env := newTestEnv(t, p, nil)
	for _, e := range []harness.ReasoningEffort{harness.EffortNone, harness.EffortMinimal, harness.EffortLow, harness.EffortMedium,
		harness.EffortHigh, harness.EffortXHigh, harness.EffortUltracode} {
		native, _ := harness.NativeReasoningControl(harness.Codex, e)
		wire := native
		if native == "ultra" {
			wire = "xhigh"
		}
		in := &contract.TurnInput{Prompt: profile.Ptr("hi"), Profile: &profile.Profile{Model: &profile.ModelHints{ReasoningEffort: e}}}
		evs := collectOwned(t, context.Background(), env, in)
		if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
			t.Errorf("effort %s (%s): terminal %q: %v", e, native, kind, evs[len(evs)-1].Normalized.Status.Detail)
			continue
		}
		if got := env.(*Environment).Turns(); got[len(got)-1].Receipt.Applied.NativeEffort != native {
			t.Errorf("effort %s: receipt %+v", e, got[len(got)-1].Receipt.Applied)
		}
		msgs := f.messages()
		if got := responses(t, msgs[len(msgs)-1]).Reasoning.Effort; got != wire {
			t.Errorf("effort %s (codex %s): the model call asked for %q, want %q", e, native, got, wire)
		}
	}
}

// codexDeveloperTexts returns the texts of each developer message of a
// Responses API call, in order.
func codexDeveloperTexts(t *testing.T, r fakeRequest) [][]string {
	t.Helper()
	var msgs [][]string
	for _, in := range responses(t, r).Input {
		if in.Type == "message" && in.Role == "developer" {
			var texts []string
			for _, c := range in.Content {
				texts = append(texts, c.Text)
			}
			msgs = append(msgs, texts)
		}
	}
	return msgs
}

// clip is s cut to n bytes, for messages.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// The system prompt intents reach the real codex binary. Without a
// prompt the first developer message is codex's base instructions;
// appendSystemPrompt alone (developer_instructions) keeps that message
// unchanged and adds the text, exactly, as the first part of the next;
// with systemPrompt too (instructions) the first message is exactly the
// replacing prompt, the base instructions are nowhere and the appended
// text follows. The receipt records the digests.
func TestCodexSystemPrompts(t *testing.T) {
	f := newFakeServer(t, openAIAPI{}, codexScript)
	env := newTestEnv(t, newCodexProvider(t, f), nil)
	turn := func(pr *profile.Prompt) ([][]string, Applied) {
		t.Helper()
		evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hi"), Profile: &profile.Profile{Prompt: pr}})
		if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
			t.Fatalf("terminal %q", kind)
		}
		msgs := f.messages()
		dev := codexDeveloperTexts(t, msgs[len(msgs)-1])
		if len(dev) < 2 || len(dev[0]) != 1 {
			t.Fatalf("%d developer messages, want the instructions alone, then more", len(dev))
		}
		recs := env.(*Environment).Turns()
		return dev, recs[len(recs)-1].Receipt.Applied
	}
	base, _ := turn(nil)
	builtin := base[0][0]
	const appended = "Also: \"append\" probe.\n\tC:\\x é"

	dev, ap := turn(&profile.Prompt{AppendSystemPrompt: profile.Ptr(appended)})
	if dev[0][0] != builtin {
		t.Errorf("append: the first developer message became %q, want codex's base instructions kept", clip(dev[0][0], 80))
	}
	if dev[1][0] != appended {
		t.Errorf("append: the second developer message begins %q, want the appended prompt", clip(dev[1][0], 80))
	}
	if ap.AppendSystemPromptDigest != canonjson.DigestBytes([]byte(appended)) || ap.SystemPromptDigest != "" {
		t.Errorf("append: receipt %+v", ap)
	}

	dev, ap = turn(&profile.Prompt{SystemPrompt: profile.Ptr(codexProbe), AppendSystemPrompt: profile.Ptr(appended)})
	if dev[0][0] != codexProbe || dev[1][0] != appended {
		t.Errorf("replace and append: developer messages begin %q, %q", clip(dev[0][0], 80), clip(dev[1][0], 80))
	}
	for _, m := range dev {
		if slices.Contains(m, builtin) {
			t.Error("replace and append: codex's base instructions are still sent")
		}
	}
	if ap.AppendSystemPromptDigest != canonjson.DigestBytes([]byte(appended)) || ap.SystemPromptDigest != canonjson.DigestBytes([]byte(codexProbe)) {
		t.Errorf("replace and append: receipt %+v", ap)
	}
}
