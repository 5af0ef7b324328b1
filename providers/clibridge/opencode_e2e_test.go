package clibridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Issue 7, item 3: the real opencode binary, driven by the bridge against
// a local OpenAI-compatible server, yields the canonical events, the
// exact usage the server reported (summed over its model calls), the
// native session id, and a receipt of exactly what was applied — and
// never the key or endpoint.
func TestOpencodeEndToEnd(t *testing.T) {
	f := newFakeServer(t, chatCompletionsAPI{}, opencodeScript)
	p := newOpencodeProvider(t, f)
	pr := &profile.Profile{
		Name:    profile.Ptr("e2e"),
		Harness: harness.OpenCode,
		Model:   &profile.ModelHints{Default: profile.Ptr("fake-oc-e2e"), ReasoningEffort: harness.EffortHigh},
	}
	env := newTestEnv(t, p, pr)
	// Wire: two model calls (tool call, then answer, no title call) with
	// the bearer key and the profile's model.
	evs, first := toolTurn(t, f, env, "please use bash")
	for _, r := range f.Requests() {
		if r.Title {
			t.Error("opencode made a title-generation call; the bridge disables the title agent")
		}
	}
	if got := first.Header.Get("Authorization"); got != "Bearer "+fakeKey {
		t.Errorf("authorization = %q", got)
	}
	var body struct {
		Model           string `json:"model"`
		Stream          bool   `json:"stream"`
		ReasoningEffort string `json:"reasoning_effort"`
	}
	json.Unmarshal(first.Body, &body)
	if body.Model != "fake-oc-e2e" || !body.Stream || body.ReasoningEffort != "high" {
		t.Errorf("request model %q stream %t reasoning_effort %q", body.Model, body.Stream, body.ReasoningEffort)
	}
	if first.LastUser != "please use bash" {
		t.Errorf("the prompt reached the model as %q", first.LastUser)
	}

	types := eventTypes(evs)
	want := []string{"clibridge.materialization", "native.session.observed", contract.EventTypeRaw, "tool_use", "step_finish",
		contract.EventTypeRaw, "text", "step_finish", "result"}
	if !slices.Equal(types, want) {
		t.Fatalf("event types %v, want %v", types, want)
	}
	checkToolTurnUsage(t, evs)
	tool := evs[3].Normalized.MessagePartUpdated.Part
	if *tool.Tool != "bash" || tool.State.Status != contract.ToolStatusCompleted || tool.State.Output.Str() != "hi\n" ||
		tool.State.Input["command"].Str() != "echo hi" || *tool.CallID != "call_fake_1" {
		t.Errorf("tool part %+v", tool)
	}
	if d := evs[6].Normalized.MessagePartUpdated.Delta; d == nil || *d != "Done: hi" {
		t.Errorf("text delta %v", d)
	}

	// Native session id: the one opencode sent the server, private.
	recs := checkSession(t, env, evs, first.Header.Get("X-Session-Id"))
	out := recs[0].Outcome
	// opencode's JSON events never name the served model: unknown.
	if out.ServedModel != "" || out.Text != "Done: hi" {
		t.Errorf("outcome %+v", out)
	}

	rc := recs[0].Receipt
	if !slices.Equal(rc.Args, []string{"run", "--format", "json", "--model", "agentrt/fake-oc-e2e", "--variant", "high"}) {
		t.Errorf("receipt args %v", rc.Args)
	}
	if rc.Applied.PromptDigest != canonjson.DigestBytes([]byte("please use bash")) || rc.Applied.NativeEffort != "high" ||
		len(rc.Files) != 1 || rc.Files[0].Purpose != "opencode-config" {
		t.Errorf("receipt %+v", rc)
	}
	if !slices.Contains(rc.EnvNames, opencodeAPIKeyEnv) || !slices.Contains(rc.EnvNames, "XDG_DATA_HOME") {
		t.Errorf("receipt env names %v", rc.EnvNames)
	}
	checkNoSecrets(t, f, evs, recs)
	checkPublicStream(t, env)
}

// opencodeScenarios are the recorded opencode turns
// (testdata/opencode).
var opencodeScenarios = []captureScenario{
	{name: "text", prompt: "Say hello.", script: opencodeScript},
	{name: "tool", prompt: "please use bash", script: opencodeScript, model: "fake-oc-e2e",
		profile: &profile.Profile{Model: &profile.ModelHints{ReasoningEffort: harness.EffortHigh}}},
	{name: "api-error", prompt: "hi", script: func(fakeRequest) fakeReply { return fakeReply{Status: 400, Text: "fake refusal"} }},
	{name: "cancelled", prompt: "hang", cancel: true, script: func(fakeRequest) fakeReply { return fakeReply{Hang: true, In: 5} }},
}

// What each recorded opencode stream means, asserted by hand.
func TestOpencodeTranscriptMeaning(t *testing.T) {
	set := opencodeSuite
	replay := func(name string) ([]contract.EnvironmentEvent, Outcome, contract.TerminalKind) {
		evs, out := set.replay(t, name)
		k, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1])
		return evs, out, k
	}
	t.Run("text", func(t *testing.T) {
		_, out, k := replay("text")
		if k != contract.TerminalCompleted || out.Usage == nil || out.Usage.InputTokens != 12 || out.Usage.OutputTokens != 3 {
			t.Errorf("terminal %q usage %+v", k, out.Usage)
		}
		if out.Text != "Hello." || !strings.HasPrefix(out.NativeSessionID, "ses_") || out.ServedModel != "" {
			t.Errorf("outcome %+v", out)
		}
	})
	t.Run("tool", func(t *testing.T) {
		evs, out, k := replay("tool")
		if k != contract.TerminalCompleted || out.Usage.InputTokens != 28 || out.Usage.OutputTokens != 12 || *out.Usage.TotalTokens != 40 {
			t.Errorf("terminal %q usage %+v", k, out.Usage)
		}
		var states []string
		for _, ev := range evs {
			if ev.Normalized != nil && ev.Normalized.MessagePartUpdated != nil && ev.Normalized.MessagePartUpdated.Part.IsTool() {
				states = append(states, ev.Normalized.MessagePartUpdated.Part.State.Status)
			}
		}
		// opencode writes a tool part once, when the call has ended.
		if strings.Join(states, ",") != "completed" {
			t.Errorf("tool states %v", states)
		}
	})
	t.Run("api-error", func(t *testing.T) {
		_, out, k := replay("api-error")
		if k != contract.TerminalFailed || out.Usage != nil || out.NativeSessionID == "" {
			t.Errorf("terminal %q outcome %+v", k, out)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		_, out, k := replay("cancelled")
		if k != contract.TerminalCancelled || out.Usage != nil {
			t.Errorf("terminal %q usage %+v", k, out.Usage)
		}
	})
	t.Run("exit-zero-without-steps", func(t *testing.T) {
		// A stream cut before any step finished, even with exit 0: failed.
		n := opencodeDriver{}.normalizer(&turnSpec{provider: "clibridge-opencode", turn: 1})
		a := set.load(t, "text")
		n.line(bytes.SplitN(section(t, a, "stream.jsonl"), []byte("\n"), 2)[0])
		evs := n.end(exit{code: 0})
		if k, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); k != contract.TerminalFailed || n.outcome().Usage != nil {
			t.Errorf("terminal %q", k)
		}
	})
}

// What the opencode driver cannot apply is refused before anything is
// spawned: tools and permission keys the bridge did not verify (opencode
// ignores an unknown one), "ask", patterns for another tool than bash or
// holding text opencode would substitute, an empty replacing system
// prompt (opencode would send its own), a model
// provider, another harness and MCP servers it cannot mount (SSE, a
// secret reference) at create and validation;
// an effort without the bridge's provider and a missing model at the
// turn.
func TestOpencodeRefusedBeforeSpawn(t *testing.T) {
	bin, marker := fakeCLI(t, "exit 0")
	newP := func(baseURL, model string) *Provider {
		p, err := New(Options{Harness: harness.OpenCode, Binary: bin, BaseURL: baseURL, APIKey: fakeKey, Model: model, WorkRoot: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := newP("http://127.0.0.1:9/v1", "m")
	for name, pr := range map[string]*profile.Profile{
		"empty-system-prompt": {Prompt: &profile.Prompt{SystemPrompt: profile.Ptr("")}},
		"unknown-tool":        {Tools: map[string]bool{"Bash": false}},
		"mcp-tool":            {Tools: map[string]bool{"probe_probe_echo": false}},
		"unknown-permission":  {Permissions: map[string]profile.Permission{"write": {Value: profile.Deny}}},
		"ask":                 {Permissions: map[string]profile.Permission{"bash": {Value: profile.Ask}}},
		"ask-pattern":         {Permissions: map[string]profile.Permission{"bash": {Patterns: map[string]profile.PermissionValue{"git *": profile.Ask}}}},
		"edit-pattern":        {Permissions: map[string]profile.Permission{"edit": {Patterns: map[string]profile.PermissionValue{"*.go": profile.Deny}}}},
		"substituted-pattern": {Permissions: map[string]profile.Permission{"bash": {Patterns: map[string]profile.PermissionValue{"echo {env:HOME}": profile.Allow}}}},
		"mcp-sse":             {MCP: map[string]profile.MCPServer{"s": {URL: profile.Ptr("https://mcp.example.com/sse"), Transport: profile.Ptr("sse")}}},
		"mcp-secret": {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("server"), Args: []profile.ConfigValue{
			{Kind: profile.ConfigSecretRef, Key: profile.Ptr("k")}}}}},
		"provider":    {Model: &profile.ModelHints{Provider: profile.Ptr("openai")}},
		"harness":     {Harness: harness.ClaudeCode},
		"small-model": {Model: &profile.ModelHints{Small: profile.Ptr("s")}},
	} {
		if _, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: pr}}); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("%s: create error %v, want ErrUnsupported", name, err)
		}
		if v, err := p.ValidateProfile(context.Background(), profile.Ref{Inline: pr}); err != nil || v.OK {
			t.Errorf("%s: validation %+v, %v", name, v, err)
		}
	}
	for name, c := range map[string]struct {
		p  *Provider
		pr *profile.Profile
	}{
		"effort-without-base-url": {newP("", "openai/gpt-x"), &profile.Profile{Model: &profile.ModelHints{ReasoningEffort: harness.EffortHigh}}},
		"no-model":                {newP("http://127.0.0.1:9/v1", ""), nil},
	} {
		env, err := c.p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: c.pr}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkTurnUnsupported(t, name, env, &contract.TurnInput{Prompt: profile.Ptr("x")})
	}
	if spawned(marker) {
		t.Error("a refused profile spawned the harness")
	}
}

// The system prompts travel in files: the replacing one as the build
// agent's prompt read through {file:...}, the appended one as an
// instructions file; the receipt lists both files with the digests of
// their text.
func TestOpencodeMaterializePrompts(t *testing.T) {
	root := t.TempDir()
	d := dirs{root: root, home: root + "/home", bridge: root + "/bridge"}
	for _, c := range []struct {
		name         string
		prompt       *profile.Prompt
		agent        map[string]opencodeAgent
		instructions []string
		files        []ReceiptFile
	}{
		{"none", nil, map[string]opencodeAgent{"title": {Disable: true}}, nil, nil},
		{"replace", &profile.Prompt{SystemPrompt: profile.Ptr("S {env:X}")},
			map[string]opencodeAgent{"title": {Disable: true}, "build": {Prompt: "{file:" + root + "/bridge/turn-3-system-prompt.md}"}}, nil,
			[]ReceiptFile{{Path: "bridge/turn-3-system-prompt.md", Digest: canonjson.DigestBytes([]byte("S {env:X}")), Purpose: "system-prompt"}}},
		{"append", &profile.Prompt{AppendSystemPrompt: profile.Ptr("A")},
			map[string]opencodeAgent{"title": {Disable: true}}, []string{root + "/bridge/turn-3-append-system-prompt.md"},
			[]ReceiptFile{{Path: "bridge/turn-3-append-system-prompt.md", Digest: canonjson.DigestBytes([]byte("A")), Purpose: "append-system-prompt"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr := &profile.Profile{Prompt: c.prompt}
			pl, err := opencodeDriver{}.materialize(&turnSpec{turn: 3, profile: pr, dirs: d, baseURL: "http://h/v1", model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			var cfg struct {
				Agent        map[string]opencodeAgent `json:"agent"`
				Instructions []string                 `json:"instructions"`
			}
			if err := json.Unmarshal(pl.files[len(pl.files)-1].content, &cfg); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.agent, cfg.Agent); diff != "" {
				t.Errorf("agent (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.instructions, cfg.Instructions); diff != "" {
				t.Errorf("instructions (-want +got):\n%s", diff)
			}
			files := pl.receipt.Files[:len(pl.receipt.Files)-1] // the last is the configuration
			if diff := cmp.Diff(c.files, files, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("receipt files (-want +got):\n%s", diff)
			}
		})
	}
}

// The configuration the bridge writes: the provider on the bundled
// OpenAI-compatible SDK with the endpoint and key read from the
// environment (never written), the model declared with the effort's
// variant.
func TestOpencodeMaterialize(t *testing.T) {
	root := t.TempDir()
	d := dirs{root: root, home: root + "/home", bridge: root + "/bridge"}
	pr := &profile.Profile{Model: &profile.ModelHints{Default: profile.Ptr("agentrt/m1"), ReasoningEffort: harness.EffortLow}}
	pl, err := opencodeDriver{}.materialize(&turnSpec{turn: 2, profile: pr, dirs: d, baseURL: "http://h/v1", apiKey: "sk-x"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pl.args, []string{"run", "--format", "json", "--model", "agentrt/m1", "--variant", "low"}) {
		t.Errorf("args %v", pl.args)
	}
	if len(pl.files) != 1 || pl.files[0].rel != "bridge/turn-2-opencode.json" || pl.env["OPENCODE_CONFIG"] != pl.files[0].path {
		t.Fatalf("files %+v env %v", pl.files, pl.env)
	}
	content := string(pl.files[0].content)
	if strings.Contains(content, "sk-x") || strings.Contains(content, "http://h/v1") {
		t.Error("the key or endpoint was written to the configuration")
	}
	var cfg struct {
		Agent    map[string]map[string]bool `json:"agent"`
		Model    string                     `json:"model"`
		Provider map[string]struct {
			NPM     string            `json:"npm"`
			Options map[string]string `json:"options"`
			Models  map[string]struct {
				Variants map[string]map[string]string `json:"variants"`
			} `json:"models"`
		} `json:"provider"`
	}
	if err := json.Unmarshal(pl.files[0].content, &cfg); err != nil {
		t.Fatal(err)
	}
	prov := cfg.Provider["agentrt"]
	if cfg.Model != "agentrt/m1" || !cfg.Agent["title"]["disable"] || prov.NPM != "@ai-sdk/openai-compatible" || prov.Options["apiKey"] != "{env:AGENTRT_OPENCODE_API_KEY}" ||
		prov.Models["m1"].Variants["low"]["reasoningEffort"] != "low" {
		t.Errorf("configuration %s", content)
	}
	if pl.env[opencodeAPIKeyEnv] != "sk-x" || pl.env[opencodeBaseURLEnv] != "http://h/v1" || pl.env["XDG_DATA_HOME"] != root+"/home/.local/share" {
		t.Errorf("env %v", pl.env)
	}
}

// chatSystem returns the text of a chat completions call's system
// messages, joined by newlines.
func chatSystem(t *testing.T, r fakeRequest) string {
	t.Helper()
	var b messagesBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("the model call's body: %v", err)
	}
	var texts []string
	for _, m := range b.Messages {
		if m.Role != "system" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			for _, bl := range blocks(m.Content) {
				text += bl.Text
			}
		}
		texts = append(texts, text)
	}
	return strings.Join(texts, "\n")
}

// opencodeBuiltinPrompt begins opencode 1.18.33's built-in system
// prompt; opencodeEnvPrompt begins what it adds after any agent prompt
// (the model, the environment, the skills).
const (
	opencodeBuiltinPrompt = "You are opencode, an interactive CLI tool"
	opencodeEnvPrompt     = "You are powered by the model named"
)

// The system prompt intents reach the real opencode binary. Without a
// prompt the system message is opencode's built-in prompt followed by
// its environment part. systemPrompt (the build agent's prompt, read
// from a file) replaces the built-in prompt: the system message is
// exactly the profile's text, a newline and the same environment part.
// appendSystemPrompt (an instructions file) keeps everything and adds
// "Instructions from: <file>" and the text, exactly, after the
// environment block; with both, the text follows the replacing prompt's
// environment part the same way. Prompt text opencode would otherwise
// substitute ({env:...}, {file:...}) arrives verbatim. The receipt
// records the digests and the prompt files.
func TestOpencodeSystemPrompts(t *testing.T) {
	f := newFakeServer(t, chatCompletionsAPI{}, opencodeScript)
	env := newTestEnv(t, newOpencodeProvider(t, f), nil)
	turn := func(pr *profile.Prompt) (string, Receipt) {
		t.Helper()
		evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hi"), Profile: &profile.Profile{Prompt: pr}})
		if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
			t.Fatalf("terminal %q", kind)
		}
		msgs := f.messages()
		recs := env.(*Environment).Turns()
		return chatSystem(t, msgs[len(msgs)-1]), recs[len(recs)-1].Receipt
	}
	base, _ := turn(nil)
	i := strings.Index(base, opencodeEnvPrompt)
	if !strings.HasPrefix(base, opencodeBuiltinPrompt) || i < 0 {
		t.Fatalf("the default system message does not begin with opencode's prompt and hold its environment part: %q", clip(base, 200))
	}
	envPart := base[i:]
	const (
		replacing = "You are the \"oc\" probe.\n\tC:\\x {env:HOME} {file:/etc/hostname} é"
		appended  = "Also: the \"append\" probe.\n{env:AGENTRT_OPENCODE_API_KEY}"
	)
	root := filepath.Dir(env.(*Environment).WorkDir())
	// withInstructions is sys with the instructions block opencode adds
	// for file rel (relative to the environment) after its environment
	// block.
	withInstructions := func(sys, rel string) string {
		return strings.Replace(sys, "</env>\n", "</env>\nInstructions from: "+filepath.Join(root, rel)+"\n"+appended+"\n", 1)
	}

	sys, rc := turn(&profile.Prompt{SystemPrompt: profile.Ptr(replacing)})
	if sys != replacing+"\n"+envPart {
		t.Errorf("replace: system message %q, want the profile's prompt, a newline and opencode's environment part", clip(sys, 300))
	}
	if rc.Applied.SystemPromptDigest != canonjson.DigestBytes([]byte(replacing)) || !hasFile(rc, "system-prompt", replacing) {
		t.Errorf("replace: receipt %+v", rc)
	}

	sys, rc = turn(&profile.Prompt{AppendSystemPrompt: profile.Ptr(appended)})
	if rel := fileOf(rc, "append-system-prompt"); rel == "" || sys != withInstructions(base, rel) {
		t.Errorf("append: system message %q, want opencode's with the instructions block for %s", clip(sys, 300), rel)
	}
	if rc.Applied.AppendSystemPromptDigest != canonjson.DigestBytes([]byte(appended)) || rc.Applied.SystemPromptDigest != "" ||
		!hasFile(rc, "append-system-prompt", appended) {
		t.Errorf("append: receipt %+v", rc)
	}

	sys, rc = turn(&profile.Prompt{SystemPrompt: profile.Ptr(replacing), AppendSystemPrompt: profile.Ptr(appended)})
	if rel := fileOf(rc, "append-system-prompt"); rel == "" || sys != withInstructions(replacing+"\n"+envPart, rel) {
		t.Errorf("replace and append: system message %q", clip(sys, 300))
	}
	if strings.Contains(sys, opencodeBuiltinPrompt) || strings.Contains(sys, fakeKey) {
		t.Error("replace and append: opencode's prompt or the API key is in the system message")
	}
}

// fileOf returns the path of the receipt's file with purpose ("" for
// none).
func fileOf(rc Receipt, purpose string) string {
	for _, f := range rc.Files {
		if f.Purpose == purpose {
			return f.Path
		}
	}
	return ""
}

// hasFile reports whether the receipt lists a file with purpose whose
// digest is content's.
func hasFile(rc Receipt, purpose, content string) bool {
	for _, f := range rc.Files {
		if f.Purpose == purpose && f.Digest == canonjson.DigestBytes([]byte(content)) {
			return true
		}
	}
	return false
}

// An environment path holding a brace cannot be named in opencode's
// configuration (it would be substituted, and {file:...} cannot carry
// it): a turn with a system prompt there is refused, nothing written.
func TestOpencodePromptPathWithBraces(t *testing.T) {
	root := filepath.Join(t.TempDir(), "{env:HOME}")
	d := dirs{root: root, home: root + "/home", bridge: root + "/bridge"}
	for _, pr := range []*profile.Prompt{{SystemPrompt: profile.Ptr("S")}, {AppendSystemPrompt: profile.Ptr("A")}} {
		pl, err := opencodeDriver{}.materialize(&turnSpec{turn: 1, profile: &profile.Profile{Prompt: pr}, dirs: d, baseURL: "http://h/v1", model: "m"})
		if !errors.Is(err, contract.ErrUnsupported) || pl != nil {
			t.Errorf("%+v: %v, want unsupported", pr, err)
		}
	}
}
