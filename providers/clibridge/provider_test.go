package clibridge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// fakeCLI writes an executable test stand-in for a harness binary: a
// shell script (the test's, not the bridge's: the bridge execs it
// directly) that records its spawn in marker and then runs body.
func fakeCLI(t *testing.T, body string) (bin, marker string) {
	t.Helper()
	dir := t.TempDir()
	bin, marker = filepath.Join(dir, "claude"), filepath.Join(dir, "spawned")
	script := "#!/bin/sh\necho spawned >> " + marker + "\n" + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, marker
}

// fakeProvider is a bridge to a fakeCLI running body; marker is the
// stand-in's spawn record.
func fakeProvider(t *testing.T, body string) (p *Provider, marker string) {
	t.Helper()
	bin, marker := fakeCLI(t, body)
	p, err := New(Options{Binary: bin, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p, marker
}

func spawned(marker string) bool {
	_, err := os.Stat(marker)
	return err == nil
}

// A missing binary is a typed refusal naming the npm package, never a
// crash.
func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, bin := range []string{"", "/nonexistent/claude"} {
		_, err := New(Options{Binary: bin, WorkRoot: t.TempDir()})
		var nf *BinaryNotFoundError
		if !errors.Is(err, ErrBinaryNotFound) || !errors.As(err, &nf) {
			t.Fatalf("binary %q: error %v, want a *BinaryNotFoundError", bin, err)
		}
		if nf.Package != "@anthropic-ai/claude-code" || nf.Harness != harness.ClaudeCode || !strings.Contains(err.Error(), "npm install") {
			t.Errorf("refusal %+v: %v", nf, err)
		}
	}
}

// Harnesses without a driver, bad names and process-control variables
// are refused by New.
func TestNewRefusals(t *testing.T) {
	bin, _ := fakeCLI(t, "")
	for name, opts := range map[string]Options{
		"gemini":          {Harness: harness.Gemini},
		"codex_home":      {Harness: harness.Codex, Env: map[string]string{"CODEX_HOME": "/tmp"}},
		"codex_key":       {Harness: harness.Codex, Env: map[string]string{"openai_api_key": "k"}},
		"opencode_config": {Harness: harness.OpenCode, Env: map[string]string{"OPENCODE_CONFIG": "/x.json"}},
		"opencode_xdg":    {Harness: harness.OpenCode, Env: map[string]string{"XDG_CONFIG_HOME": "/x"}},
		"name":            {Name: "Not A Name"},
		"ld_preload":      {Env: map[string]string{"LD_PRELOAD": "/x.so"}},
		"proxy":           {Env: map[string]string{"HTTPS_PROXY": "http://proxy"}},
		"home":            {Env: map[string]string{"HOME": "/root"}},
		"key":             {Env: map[string]string{"ANTHROPIC_API_KEY": "k"}},
		"config":          {Env: map[string]string{"claude_config_dir": "/tmp"}},
	} {
		opts.Binary, opts.WorkRoot = bin, t.TempDir()
		if _, err := New(opts); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(Options{Binary: bin, WorkRoot: t.TempDir(), Harness: harness.Gemini}); !errors.Is(err, ErrHarnessUnsupported) {
		t.Errorf("gemini: %v", err)
	}
	if _, err := New(Options{Binary: bin, WorkRoot: t.TempDir(), Env: map[string]string{"NODE_OPTIONS": "--require x"}}); !errors.Is(err, ErrEnvRefused) {
		t.Errorf("NODE_OPTIONS: %v", err)
	}
	p, err := New(Options{Binary: bin, WorkRoot: t.TempDir(), Env: map[string]string{"GREETING": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(context.Background(), &contract.CreateInput{Env: map[string]string{"LD_LIBRARY_PATH": "/x"}}); !errors.Is(err, ErrEnvRefused) {
		t.Errorf("create env LD_LIBRARY_PATH: %v", err)
	}
}

// Every profile feature the bridge cannot apply is refused before any
// process is spawned, at create and per turn, and ValidateProfile says
// so.
func TestProfileRefusedBeforeSpawn(t *testing.T) {
	p, marker := fakeProvider(t, "exit 0")
	secret := profile.ConfigValue{Kind: profile.ConfigSecretRef, Key: profile.Ptr("mcp-token")}
	for name, pr := range map[string]*profile.Profile{
		"instructions": {Prompt: &profile.Prompt{Instructions: []string{"be brief"}}},
		"hooks":        {Hooks: map[string][]profile.HookCommand{"start": {{Command: "true"}}}},
		"subagents":    {Subagents: map[string]profile.Subagent{"a": {}}},
		"ask":          {Permissions: map[string]profile.Permission{"bash": {Value: profile.Ask}}},
		"ask-pattern":  {Permissions: map[string]profile.Permission{"bash": {Patterns: map[string]profile.PermissionValue{"git *": profile.Ask}}}},
		"bad-pattern":  {Permissions: map[string]profile.Permission{"bash": {Patterns: map[string]profile.PermissionValue{"a,b": profile.Allow}}}},
		"unknown-tool": {Tools: map[string]bool{"Teleport": true}},
		"unknown-perm": {Permissions: map[string]profile.Permission{"teleport": {Value: profile.Allow}}},
		"mcp-tool":     {Tools: map[string]bool{"mcp__ghost__x": true}},
		"small-model":  {Model: &profile.ModelHints{Small: profile.Ptr("claude-haiku")}},
		"ceiling":      {Model: &profile.ModelHints{MaxVisibleOutputTokens: profile.Ptr(int64(10))}},
		"provider":     {Model: &profile.ModelHints{Provider: profile.Ptr("openai")}},
		"harness":      {Harness: harness.Codex},
		"seats": {Harness: harness.ClaudeCode, Model: &profile.ModelHints{Provider: profile.Ptr("anthropic"), Default: profile.Ptr("claude-sonnet-4-5")},
			Seats: []profile.Seat{{Harness: harness.ClaudeCode, Provider: "anthropic", Model: "claude-sonnet-4-5", Selector: profile.SeatSelector{Kind: profile.SelectorAllEligible}}}},
		"secret-mcp":   {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("server"), Env: map[string]profile.ConfigValue{"TOKEN": secret}}}},
		"mcp-cwd":      {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("server"), Cwd: profile.Ptr("sub")}}},
		"confidential": {Confidential: &profile.Confidential{}},
		"files":        {Resources: &profile.Resources{Files: []profile.FileMount{{Path: "a", Resource: profile.ResourceRef{Kind: "inline", Name: profile.Ptr("a"), Content: profile.Ptr("x")}}}}},
		"extension":    {Extensions: map[string]map[string]canonjson.Value{"acme": {}}},
	} {
		if _, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: pr}}); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("%s: create error %v, want ErrUnsupported", name, err)
		}
		v, err := p.ValidateProfile(context.Background(), profile.Ref{Inline: pr})
		if err != nil || v.OK {
			t.Errorf("%s: validation %+v, %v", name, v, err)
		}
		env, err := p.Create(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		checkTurnUnsupported(t, name, env, &contract.TurnInput{Prompt: profile.Ptr("x"), Profile: pr})
	}
	if spawned(marker) {
		t.Error("a refused profile spawned the harness")
	}
}

// checkTurnUnsupported runs in on env, wants its first yield to be an
// error matching contract.ErrUnsupported, and destroys env.
func checkTurnUnsupported(t *testing.T, name string, env contract.Environment, in *contract.TurnInput) {
	t.Helper()
	for _, err := range env.Stream(context.Background(), in) {
		if !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("%s: turn error %v, want ErrUnsupported", name, err)
		}
		break
	}
	env.Destroy(context.Background())
}

// Turn inputs the bridge cannot honor are refused before spawning.
func TestTurnRefusedBeforeSpawn(t *testing.T) {
	p, marker := fakeProvider(t, "exit 0")
	env, err := p.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.Background())
	for name, in := range map[string]*contract.TurnInput{
		"empty":  {},
		"blank":  {Prompt: profile.Ptr("  ")},
		"detach": {Prompt: profile.Ptr("x"), Detach: profile.Ptr(true)},
		"image":  {Parts: []contract.InputPart{{Type: contract.PartTypeImage, URL: profile.Ptr("https://x/y.png")}}},
		"replay": {Prompt: profile.Ptr("x"), LastEventID: profile.Ptr("e1")},
	} {
		n := 0
		for _, err := range env.Stream(context.Background(), in) {
			n++
			if err == nil {
				t.Errorf("%s: accepted", name)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d yields, want the one refusal", name, n)
		}
	}
	if spawned(marker) {
		t.Error("a refused turn spawned the harness")
	}
}

// collectTurn streams one owned turn of a fresh environment of p.
func collectTurn(t *testing.T, ctx context.Context, p *Provider, prompt string) ([]contract.EnvironmentEvent, *Environment) {
	t.Helper()
	env, err := p.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Destroy(context.Background()) })
	return collectOwned(t, ctx, env, &contract.TurnInput{Prompt: &prompt}), env.(*Environment)
}

// A process that dies mid-stream (after init and some text, before its
// result) fails the turn — never success, no usage.
func TestProcessDiesMidStream(t *testing.T) {
	bin, _ := fakeCLI(t, `cat >/dev/null
echo '{"type":"system","subtype":"init","session_id":"11111111-2222-3333-4444-555555555555","model":"claude-x","claude_code_version":"2.1.197"}'
echo '{"type":"assistant","message":{"id":"msg_1","model":"claude-x","content":[{"type":"text","text":"partial"}]},"parent_tool_use_id":null}'
echo 'dying' >&2
kill -9 $$`)
	p, err := New(Options{Binary: bin, WorkRoot: t.TempDir(), APIKey: fakeKey})
	if err != nil {
		t.Fatal(err)
	}
	evs, env := collectTurn(t, context.Background(), p, "hi")
	last := evs[len(evs)-1]
	if kind, _ := contract.EnvironmentEventTerminal(last); kind != contract.TerminalFailed {
		t.Fatalf("terminal %q, want failed", kind)
	}
	if d := *last.Normalized.Status.Detail; !strings.Contains(d, "without a result line") || !strings.Contains(d, "dying") {
		t.Errorf("detail %q", d)
	}
	out := env.Turns()[0].Outcome
	if out.Usage != nil || out.Terminal != contract.TerminalFailed || out.NativeSessionID == "" || out.ServedModel != "claude-x" {
		t.Errorf("outcome %+v", out)
	}
}

// A successful result line followed by a non-zero exit is a failure.
func TestSuccessLineButNonZeroExit(t *testing.T) {
	p, _ := fakeProvider(t, `cat >/dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"input_tokens":1,"output_tokens":1}}'
exit 3`)
	evs, _ := collectTurn(t, context.Background(), p, "hi")
	last := evs[len(evs)-1]
	if kind, _ := contract.EnvironmentEventTerminal(last); kind != contract.TerminalFailed || last.Usage != nil {
		t.Errorf("terminal %q usage %+v, want failed without usage", kind, last.Usage)
	}
}

// Children the harness leaves behind die with the turn; a cancelled
// turn kills the whole group and reports cancelled.
func TestProcessTreeKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	bin, _ := fakeCLI(t, `cat >/dev/null
sleep 300 >/dev/null 2>&1 &
echo $! > `+pidFile+`
sleep 300`)
	p, err := New(Options{Binary: bin, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	pgids := make(chan int, 1)
	p.cfg.hooks.onSpawn = func(pgid int) { pgids <- pgid }
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(pidFile); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	evs, _ := collectTurn(t, ctx, p, "hi")
	if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCancelled {
		t.Fatalf("terminal %q, want cancelled", kind)
	}
	if err := groupGone(<-pgids, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// The MCP servers are written to a config file the receipt names with
// its digest; disabled servers are recorded, not mounted; MCP tools of a
// mounted server are allowed by name.
func TestMaterializeMCP(t *testing.T) {
	d := claudeDriver{}
	root := t.TempDir()
	pr := &profile.Profile{
		MCP: map[string]profile.MCPServer{
			"files": {Command: profile.Ptr("mcp-files"), Args: []profile.ConfigValue{{Kind: profile.ConfigPublic, Value: profile.Ptr("--ro")}}},
			"web":   {URL: profile.Ptr("https://mcp.example.com/sse"), Transport: profile.Ptr("sse")},
			"off":   {Enabled: profile.Ptr(false)},
		},
		Tools:       map[string]bool{"mcp__files": true},
		Permissions: map[string]profile.Permission{"bash": {Patterns: map[string]profile.PermissionValue{"git *": profile.Allow, "*": profile.Deny}}},
	}
	if errs := d.check(pr); len(errs) > 0 {
		t.Fatal(errs)
	}
	pl, err := d.materialize(&turnSpec{turn: 1, prompt: "x", profile: pr, apiKey: fakeKey, baseURL: "http://127.0.0.1:1",
		dirs: dirs{root: root, bridge: filepath.Join(root, "bridge"), config: filepath.Join(root, "home", ".config")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.files) != 1 || len(pl.receipt.Files) != 1 || pl.receipt.Files[0].Path != filepath.Join("bridge", "turn-1-mcp.json") {
		t.Fatalf("files %+v receipt %+v", pl.files, pl.receipt.Files)
	}
	want := `{
  "mcpServers": {
    "files": {
      "type": "stdio",
      "command": "mcp-files",
      "args": [
        "--ro"
      ]
    },
    "web": {
      "type": "sse",
      "url": "https://mcp.example.com/sse"
    }
  }
}`
	if got := string(pl.files[0].content); got != want {
		t.Errorf("mcp config\n%s\nwant\n%s", got, want)
	}
	a := pl.receipt.Applied
	if !slices.Equal(a.MCPServers, []string{"files", "web"}) || !slices.Equal(a.DisabledMCPServers, []string{"off"}) {
		t.Errorf("applied %+v", a)
	}
	if !slices.Equal(a.AllowedTools, []string{"mcp__files", "Bash(git *)"}) || !slices.Equal(a.DisallowedTools, []string{"Bash"}) {
		t.Errorf("rules allowed %v denied %v", a.AllowedTools, a.DisallowedTools)
	}
	if !slices.Contains(pl.args, "--mcp-config="+pl.files[0].path) || !slices.Contains(pl.receipt.Args, "--mcp-config=bridge/turn-1-mcp.json") {
		t.Errorf("args %v receipt %v", pl.args, pl.receipt.Args)
	}
	if pl.env["ANTHROPIC_API_KEY"] != fakeKey || slices.ContainsFunc(pl.receipt.Args, func(s string) bool { return strings.Contains(s, fakeKey) }) {
		t.Error("the key is not in the process environment, or it is in the receipt")
	}
}

// A turn's own timeoutMs kills the process group and fails the turn: a
// deadline is not the caller cancelling.
func TestTurnTimeoutFails(t *testing.T) {
	p, _ := fakeProvider(t, "cat >/dev/null\nsleep 300")
	pgids := make(chan int, 1)
	p.cfg.hooks.onSpawn = func(pgid int) { pgids <- pgid }
	env, err := p.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.Background())
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hi"), TimeoutMs: profile.Ptr(int64(200))})
	last := evs[len(evs)-1]
	if kind, _ := contract.EnvironmentEventTerminal(last); kind != contract.TerminalFailed || !strings.Contains(*last.Normalized.Status.Detail, "timeout") {
		t.Errorf("terminal %q detail %q, want failed by the timeout", kind, *last.Normalized.Status.Detail)
	}
	if err := groupGone(<-pgids, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// Destroying an environment mid-turn cancels the turn, waits for its
// process group and removes the directories.
func TestDestroyDuringTurn(t *testing.T) {
	p, marker := fakeProvider(t, "cat >/dev/null\nsleep 300")
	env, err := p.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for !spawned(marker) {
			time.Sleep(10 * time.Millisecond)
		}
		if err := env.Destroy(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hi")})
	if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCancelled {
		t.Errorf("terminal %q, want cancelled", kind)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(env.(*Environment).st.dirs.root); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the environment directory survived Destroy")
		}
	}
	if got, _ := p.Get(context.Background(), env.ID()); got != nil {
		t.Error("Get finds a destroyed environment")
	}
}

// A profile built in Go that is not a valid AgentProfile (here an MCP env
// value shaped like a credential, which the schema refuses) is refused at
// Create and at the turn with the schema's issues, before anything is
// provisioned or spawned.
func TestInvalidProfileRefusedAtCreate(t *testing.T) {
	p, marker := fakeProvider(t, "exit 0")
	invalid := &profile.Profile{MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("server"),
		Env: map[string]profile.ConfigValue{"X": {Kind: profile.ConfigPublic, Value: profile.Ptr("sk-live-abcdefghijklmnop")}}}}}
	_, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: invalid}})
	if _, ok := errors.AsType[*schema.Error](err); !ok {
		t.Fatalf("create error %v, want a *schema.Error", err)
	}
	if entries, _ := os.ReadDir(p.cfg.workRoot); len(entries) != 0 {
		t.Errorf("an environment was provisioned: %v", entries)
	}
	env, err := p.Create(context.Background(), &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	prompt := "x"
	for _, err := range env.Stream(context.Background(), &contract.TurnInput{Prompt: &prompt, Profile: invalid}) {
		if _, ok := errors.AsType[*schema.Error](err); !ok {
			t.Fatalf("turn error %v, want a *schema.Error", err)
		}
		break
	}
	if spawned(marker) {
		t.Error("the harness was spawned")
	}
}

// tokenUsage: counts that are not whole and non-negative are unknown,
// and so is a report of no input token of any kind (what the CLIs print
// when the endpoint sent no usage); a cached-only input is a measurement.
func TestTokenUsage(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name                        string
		in, out, read, write, think *float64
		known                       bool
	}{
		{"measured", f(11), f(3), nil, nil, nil, true},
		{"no output", f(11), f(0), nil, nil, nil, true},
		{"all cached", f(0), f(2), f(40), f(0), nil, true},
		{"cache written", f(0), f(2), f(0), f(40), nil, true},
		{"zero input, zero cache", f(0), f(0), f(0), f(0), f(0), false},
		{"zero input, no cache counts", f(0), f(7), nil, nil, nil, false},
		{"missing input", nil, f(3), nil, nil, nil, false},
		{"fraction", f(1.5), f(3), nil, nil, nil, false},
		{"negative", f(-1), f(3), nil, nil, nil, false},
	} {
		if got := tokenUsage(tc.in, tc.out, tc.read, tc.write, tc.think); (got != nil) != tc.known {
			t.Errorf("%s: usage %+v, known %v", tc.name, got, tc.known)
		}
	}
}

// Spec runtime §2.1: InputTokens is the whole prompt on every provider.
// claude (the Messages API's split) and opencode report an input count
// that excludes the cache, so the cache reads and writes are added in and
// stay broken out; codex's input_tokens already includes the cached ones
// (the Responses API's split) and is kept. A cache count not reported
// stays unknown and adds nothing.
func TestInputTokensAreTheWholePrompt(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	type cache = struct {
		Read  *float64 `json:"read"`
		Write *float64 `json:"write"`
	}
	for _, tc := range []struct {
		name string
		got  *contract.TokenUsage
		want *contract.TokenUsage
	}{
		{"claude with cache", (&claudeUsage{InputTokens: f(12), OutputTokens: f(3), CacheRead: f(2048), CacheCreation: f(300)}).token(),
			&contract.TokenUsage{InputTokens: 2360, OutputTokens: 3, CacheReadInputTokens: i(2048), CacheCreationInputTokens: i(300)}},
		{"claude without cache counts", (&claudeUsage{InputTokens: f(12), OutputTokens: f(3)}).token(),
			&contract.TokenUsage{InputTokens: 12, OutputTokens: 3}},
		{"opencode with cache", (&opencodeTokens{Input: f(12), Output: f(3), Cache: &cache{Read: f(2048), Write: f(300)}}).token(),
			&contract.TokenUsage{InputTokens: 2360, OutputTokens: 3, CacheReadInputTokens: i(2048), CacheCreationInputTokens: i(300)}},
		{"opencode with only a read", (&opencodeTokens{Input: f(12), Output: f(3), Cache: &cache{Read: f(2048)}}).token(),
			&contract.TokenUsage{InputTokens: 2060, OutputTokens: 3, CacheReadInputTokens: i(2048)}},
		{"codex already whole", (&codexUsage{InputTokens: f(2060), OutputTokens: f(3), CachedInput: f(2048)}).token(),
			&contract.TokenUsage{InputTokens: 2060, OutputTokens: 3, CacheReadInputTokens: i(2048)}},
		{"a total past the safe range is unknown", (&claudeUsage{InputTokens: f(1 << 52), OutputTokens: f(3), CacheRead: f(1 << 52)}).token(), nil},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: usage %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
}
