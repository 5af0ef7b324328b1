package clibridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/clitest"
	"github.com/agentrt/agentrt/profile"
)

// buildMCPProbe builds testdata/mcpprobe, a real stdio MCP server with
// one tool (probe_echo), into a temporary directory and returns the
// executable's path.
func buildMCPProbe(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building the MCP probe needs the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mcpprobe")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./testdata/mcpprobe").CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/mcpprobe: %v\n%s", err, out)
	}
	return bin
}

// mcpPrivate is a value the MCP server receives in its environment: it
// must reach the server and never an event or a receipt. (A profile
// cannot carry a credential as a public value — validation refuses a
// credential-shaped value or name — and the bridge refuses secret
// references; this is the closest a profile gets: a value meant for the
// server alone.)
const mcpPrivate = "probe-private-7d1f3a9c-value"

// mcpProbeProfile mounts the probe as server "probe" (with one argument
// and an environment carrying mcpPrivate, whose digest the probe puts in
// its tool's output, and its method log at logPath) and declares server
// "off" disabled.
func mcpProbeProfile(bin, logPath string) *profile.Profile {
	pub := func(s string) profile.ConfigValue { return profile.ConfigValue{Kind: profile.ConfigPublic, Value: &s} }
	return &profile.Profile{MCP: map[string]profile.MCPServer{
		"probe": {Command: &bin, Args: []profile.ConfigValue{pub("--from-profile")}, Env: map[string]profile.ConfigValue{
			"MCPPROBE_LOG": pub(logPath), "MCPPROBE_DIGEST_OF": pub("PROBE_VALUE"), "PROBE_VALUE": pub(mcpPrivate)}},
		"off": {Enabled: profile.Ptr(false)},
	}}
}

// mcpProbeOutput is what probe_echo returns for text: the echo and the
// digest of the private value the server received in its environment.
func mcpProbeOutput(text string) string {
	sum := sha256.Sum256([]byte(mcpPrivate))
	return "probe-echo:" + text + " digest:" + hex.EncodeToString(sum[:])
}

// checkMCPProbeRan checks the probe's log: it started in the workspace
// with the profile's argument and served a tools/list and a tools/call.
func checkMCPProbeRan(t *testing.T, env contract.Environment, logPath string) {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("the MCP server never started: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 || lines[0] != "cwd "+env.(*Environment).WorkDir() || lines[1] != "args --from-profile" {
		t.Errorf("the MCP server started as %q, want in the workspace %s with --from-profile", lines[:min(2, len(lines))], env.(*Environment).WorkDir())
	}
	for _, m := range []string{"initialize", "tools/list", "tools/call"} {
		if !slices.Contains(lines, m) {
			t.Errorf("the MCP server never received %s (log %q)", m, lines)
		}
	}
}

// checkMCPTurn checks the events and receipt of a turn that called the
// probe's tool (named tool in the events): completed, the tool part
// completed with the probe's output, the servers recorded as mounted and
// disabled, and the private value nowhere.
func checkMCPTurn(t *testing.T, f *fakeServer, env contract.Environment, evs []contract.EnvironmentEvent, tool, text string) {
	t.Helper()
	if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
		t.Errorf("terminal %q, want completed (events %v)", kind, eventTypes(evs))
	}
	var outputs []string
	for _, ev := range evs {
		if ev.Normalized == nil || ev.Normalized.MessagePartUpdated == nil {
			continue
		}
		if part := ev.Normalized.MessagePartUpdated.Part; part.IsTool() && *part.Tool == tool && part.State.Status == contract.ToolStatusCompleted {
			outputs = append(outputs, part.State.Output.Str())
		}
	}
	if !hasText(outputs, mcpProbeOutput(text)) {
		t.Errorf("no completed %s tool part with the probe's output (outputs %q, events %v)", tool, outputs, eventTypes(evs))
	}
	recs := env.(*Environment).Turns()
	rc := recs[len(recs)-1].Receipt
	if !slices.Equal(rc.Applied.MCPServers, []string{"probe"}) || !slices.Equal(rc.Applied.DisabledMCPServers, []string{"off"}) {
		t.Errorf("receipt mcp servers %v disabled %v", rc.Applied.MCPServers, rc.Applied.DisabledMCPServers)
	}
	checkNoSecrets(t, f, evs, recs)
	v, err := canonjson.ToValue(map[string]any{"events": evs, "turns": recs})
	if err != nil {
		t.Fatal(err)
	}
	all, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(all), mcpPrivate) {
		t.Error("the MCP server's private environment value leaked into an event or receipt")
	}
}

// mcpScript calls tool (in namespace ns, for the Responses API) with
// {"text": text} first and answers after its result.
func mcpScript(tool, ns, text string) func(fakeRequest) fakeReply {
	return func(req fakeRequest) fakeReply {
		if !req.HasResult {
			return fakeReply{ToolName: tool, ToolNamespace: ns, ToolInput: `{"text":"` + text + `"}`, In: 9, Out: 4}
		}
		return fakeReply{Text: "Echoed.", In: 13, Out: 2}
	}
}

// Issue 7, item 2: codex mounts the profile's local MCP server from its
// config.toml ([mcp_servers.probe]): the model call offers the server's
// tool (in codex's namespace "mcp__probe"), the model's call of it runs
// the real server — started in the workspace with the profile's
// arguments and environment — and the next model call carries its
// output; the receipt records the mounted and the disabled server, and
// the server's private environment value reaches no event or receipt.
func TestCodexMCPServer(t *testing.T) {
	clitest.Codex(t) // skip before building when codex is not installed
	probe := buildMCPProbe(t)
	logPath := filepath.Join(t.TempDir(), "mcp.log")
	f := newFakeServer(t, openAIAPI{}, mcpScript("probe_echo", "mcp__probe", "ping-codex"))
	// A model outside codex's bundled catalog: codex then lists every
	// tool in the request's tools (with its default model it announces
	// MCP namespaces as deferred, by name only, in a developer message).
	pr := mcpProbeProfile(probe, logPath)
	pr.Model = &profile.ModelHints{Default: profile.Ptr("gpt-e2e-1")}
	env := newTestEnv(t, newCodexProvider(t, f), pr)
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("use the probe")})
	msgs := f.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d model calls, want 2 (the MCP call, then the answer)", len(msgs))
	}
	offered := codexNamespacedTools(t, msgs[0])
	if !slices.Contains(offered, "namespace:mcp__probe/probe_echo") {
		t.Errorf("namespaced tools offered %v, want the probe's probe_echo in mcp__probe", offered)
	}
	var second struct {
		Input []struct {
			Type   string `json:"type"`
			Output []struct {
				Text string `json:"text"`
			} `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(msgs[1].Body, &second); err != nil {
		t.Fatal(err)
	}
	var returned []string
	for _, in := range second.Input {
		if in.Type == "function_call_output" {
			for _, o := range in.Output {
				returned = append(returned, o.Text)
			}
		}
	}
	if !slices.Contains(returned, mcpProbeOutput("ping-codex")) {
		t.Errorf("the tool output sent back to the model %q lacks the probe's answer", returned)
	}
	checkMCPProbeRan(t, env, logPath)
	checkMCPTurn(t, f, env, evs, "mcp__probe__probe_echo", "ping-codex")
}

// opencode mounts the profile's local MCP server from its configuration
// ("mcp": {"probe": {"type": "local", ...}}): the model call offers the
// server's tool as "probe_probe_echo", the model's call of it runs the
// real server in the workspace, and the next model call carries its
// output; the receipt records the servers, and the server's private
// environment value reaches no event or receipt.
func TestOpencodeMCPServer(t *testing.T) {
	clitest.OpenCode(t) // skip before building when opencode is not installed
	probe := buildMCPProbe(t)
	logPath := filepath.Join(t.TempDir(), "mcp.log")
	f := newFakeServer(t, chatCompletionsAPI{}, mcpScript("probe_probe_echo", "", "ping-opencode"))
	env := newTestEnv(t, newOpencodeProvider(t, f), mcpProbeProfile(probe, logPath))
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("use the probe")})
	msgs := f.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d model calls, want 2 (the MCP call, then the answer)", len(msgs))
	}
	if tools := chatTools(t, msgs[0]); !slices.Contains(tools, "probe_probe_echo") {
		t.Errorf("tools offered %v lack the probe's probe_probe_echo", tools)
	}
	var second struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(msgs[1].Body, &second)
	var returned []string
	for _, m := range second.Messages {
		if m.Role == "tool" {
			returned = append(returned, m.Content)
		}
	}
	if !slices.Equal(returned, []string{mcpProbeOutput("ping-opencode")}) {
		t.Errorf("the tool output sent back to the model %q, want the probe's answer", returned)
	}
	checkMCPProbeRan(t, env, logPath)
	checkMCPTurn(t, f, env, evs, "probe_probe_echo", "ping-opencode")
}

// chatTools returns the names of the tools a chat completions call
// offers.
func chatTools(t *testing.T, r fakeRequest) []string {
	t.Helper()
	var b struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("the model call's body: %v", err)
	}
	var names []string
	for _, tl := range b.Tools {
		names = append(names, tl.Function.Name)
	}
	return names
}

// A mounted server's tool the profile sets false is in codex's
// disabled_tools: the model call does not offer it, a call of it anyway
// is answered "unsupported call" and never reaches the server, and the
// receipt records the rule.
func TestCodexMCPToolDisabled(t *testing.T) {
	clitest.Codex(t) // skip before building when codex is not installed
	probe := buildMCPProbe(t)
	logPath := filepath.Join(t.TempDir(), "mcp.log")
	f := newFakeServer(t, openAIAPI{}, mcpScript("probe_echo", "mcp__probe", "ping-codex"))
	pr := mcpProbeProfile(probe, logPath)
	pr.Model = &profile.ModelHints{Default: profile.Ptr("gpt-e2e-1")}
	pr.Tools = map[string]bool{"mcp__probe__probe_echo": false}
	env := newTestEnv(t, newCodexProvider(t, f), pr)
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("use the probe")})
	if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
		t.Errorf("terminal %q", kind)
	}
	msgs := f.messages()
	if len(msgs) != 2 {
		t.Fatalf("%d model calls, want 2 (the refused call, then the answer)", len(msgs))
	}
	if offered := codexNamespacedTools(t, msgs[0]); slices.Contains(offered, "namespace:mcp__probe/probe_echo") {
		t.Errorf("the disabled tool was offered to the model: %v", offered)
	}
	var second struct {
		Input []struct {
			Type   string `json:"type"`
			Output any    `json:"output"`
		} `json:"input"`
	}
	json.Unmarshal(msgs[1].Body, &second)
	last := second.Input[len(second.Input)-1]
	if out, _ := last.Output.(string); last.Type != "function_call_output" || !strings.Contains(out, "unsupported call") {
		t.Errorf("the refused call's output %+v, want codex's unsupported call", last)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("the MCP server never started: %v", err)
	}
	if lines := strings.Split(string(b), "\n"); !slices.Contains(lines, "tools/list") || slices.Contains(lines, "tools/call") {
		t.Errorf("the server's log %q: want it listed and never called", lines)
	}
	recs := env.(*Environment).Turns()
	if ap := recs[0].Receipt.Applied; !slices.Equal(ap.DisallowedTools, []string{"mcp__probe__probe_echo"}) {
		t.Errorf("receipt disallowed tools %v", ap.DisallowedTools)
	}
}

// codexNamespacedTools returns the tools of a Responses API call's
// namespaces, as "TYPE:NAMESPACE/TOOL".
func codexNamespacedTools(t *testing.T, r fakeRequest) []string {
	t.Helper()
	var b struct {
		Tools []struct {
			Type, Name string
			Tools      []struct{ Name string }
		}
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, tl := range b.Tools {
		for _, sub := range tl.Tools {
			offered = append(offered, tl.Type+":"+tl.Name+"/"+sub.Name)
		}
	}
	return offered
}

// A profile's MCP server that takes longer to start than the harness's
// own bound on it (claude-code 5 s in print mode, codex 10 s, opencode
// 5 s; past it each goes on without the server's tools) is still
// mounted: the bridge gives each a longer one (MCPStartTimeout), so the
// first model call offers the server's tool and the turn runs as the
// profile declared. Seen in CI under load: a claude-code manager's
// coordination server connected late and the manager ran its turn with
// no coordination tools at all.
func TestMCPServerSlowToStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		delay   string // past the harness's own bound
		tool    string // the probe's tool as the model is offered it
		ns      string
		offered func(*testing.T, fakeRequest) []string
		api     fakeAPI
		prov    func(testing.TB, *fakeServer) *Provider
		skip    func(testing.TB) string
		model   string
	}{
		{name: "claude-code", delay: "7000", tool: "mcp__probe__probe_echo", offered: func(t *testing.T, r fakeRequest) []string { return r.wire(t).Tools },
			api: anthropicAPI{}, prov: newClaudeProvider, skip: clitest.Claude, model: "claude-e2e-1"},
		{name: "codex", delay: "12000", tool: "probe_echo", ns: "mcp__probe", offered: func(t *testing.T, r fakeRequest) []string {
			var names []string
			for _, n := range codexNamespacedTools(t, r) {
				names = append(names, strings.TrimPrefix(n, "namespace:mcp__probe/"))
			}
			return names
		}, api: openAIAPI{}, prov: newCodexProvider, skip: clitest.Codex, model: "gpt-e2e-1"},
		{name: "opencode", delay: "7000", tool: "probe_probe_echo", offered: chatTools, api: chatCompletionsAPI{}, prov: newOpencodeProvider, skip: clitest.OpenCode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.skip(t) // skip before building when the harness is not installed
			probe := buildMCPProbe(t)
			logPath := filepath.Join(t.TempDir(), "mcp.log")
			f := newFakeServer(t, tc.api, mcpScript(tc.tool, tc.ns, "slow-start"))
			pr := mcpProbeProfile(probe, logPath)
			s := pr.MCP["probe"]
			s.Env["MCPPROBE_START_DELAY_MS"] = profile.ConfigValue{Kind: profile.ConfigPublic, Value: &tc.delay}
			pr.MCP["probe"] = s
			if tc.model != "" {
				pr.Model = &profile.ModelHints{Default: profile.Ptr(tc.model)}
			}
			if tc.name == "claude-code" {
				pr.Tools = map[string]bool{"mcp__probe__probe_echo": true} // dontAsk: allowed by name
			}
			env := newTestEnv(t, tc.prov(t, f), pr)
			evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("use the probe")})
			msgs := f.messages()
			if len(msgs) == 0 {
				t.Fatal("no model call")
			}
			if tools := tc.offered(t, msgs[0]); !slices.Contains(tools, tc.tool) {
				t.Fatalf("the first model call offered %v: the slow server's %s is missing (the harness went on without it)", tools, tc.tool)
			}
			want := tc.tool
			if tc.ns != "" {
				want = tc.ns + "__" + tc.tool
			}
			checkMCPProbeRan(t, env, logPath)
			checkMCPTurn(t, f, env, evs, want, "slow-start")
		})
	}
}

// A profile's MCP server that cannot start fails the turn rather than
// letting it run without what the profile declared: codex because the
// server is required (no model call at all), claude-code because the
// bridge stops it when its init line reports the server not connected
// (the failure names the server).
func TestMCPServerThatCannotStartFailsTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		api     fakeAPI
		prov    func(testing.TB, *fakeServer) *Provider
		skip    func(testing.TB) string
		model   string
		noCalls bool
	}{
		{name: "claude-code", api: anthropicAPI{}, prov: newClaudeProvider, skip: clitest.Claude, model: "claude-e2e-1"},
		{name: "codex", api: openAIAPI{}, prov: newCodexProvider, skip: clitest.Codex, model: "gpt-e2e-1", noCalls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.skip(t)
			f := newFakeServer(t, tc.api, func(fakeRequest) fakeReply { return fakeReply{Text: "ran without the server", In: 3, Out: 2} })
			dead := "/bin/false"
			pr := &profile.Profile{Model: &profile.ModelHints{Default: profile.Ptr(tc.model)},
				MCP: map[string]profile.MCPServer{"dead": {Command: &dead}}}
			env := newTestEnv(t, tc.prov(t, f), pr)
			var evs []contract.EnvironmentEvent
			for ev, err := range env.(*Environment).StreamOwned(context.Background(), &contract.TurnInput{Prompt: profile.Ptr("use the server")}) {
				if err != nil {
					t.Fatalf("stream: %v", err)
				}
				evs = append(evs, ev)
			}
			last := evs[len(evs)-1]
			if kind, _ := contract.EnvironmentEventTerminal(last); kind != contract.TerminalFailed {
				t.Fatalf("the turn ended %q (events %v), want failed", kind, eventTypes(evs))
			}
			if n := len(f.messages()); tc.noCalls && n != 0 {
				t.Errorf("%d model calls, want none: the turn must not run without the server", n)
			}
			if tc.name == "claude-code" {
				if d := last.Normalized; d == nil || d.Status == nil || d.Status.Detail == nil || !strings.Contains(*d.Status.Detail, `MCP server "dead" did not connect`) {
					t.Errorf("the failure does not name the server: %+v", last.Normalized)
				}
			}
		})
	}
}
