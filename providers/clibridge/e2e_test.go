package clibridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// toolScript is claude's bashScript (its tool is "Bash").
var toolScript = bashScript("Bash")

// bashScript answers a prompt mentioning "use bash" with a call of the
// harness's bash tool (named tool) running "echo hi" first and text
// after its result; anything else with text.
func bashScript(tool string) func(fakeRequest) fakeReply {
	return func(req fakeRequest) fakeReply {
		switch {
		case strings.Contains(req.LastUser, "use bash") && !req.HasResult:
			return fakeReply{ToolName: tool, ToolInput: `{"command":"echo hi","description":"say hi"}`, In: 11, Out: 7}
		case req.HasResult:
			return fakeReply{Text: "Done: hi", In: 17, Out: 5}
		}
		return fakeReply{Text: "Hello.", In: 12, Out: 3}
	}
}

// collectOwned runs one owned turn and returns its events; a yielded
// error fails the test.
func collectOwned(t *testing.T, ctx context.Context, env contract.Environment, in *contract.TurnInput) []contract.EnvironmentEvent {
	t.Helper()
	var evs []contract.EnvironmentEvent
	for ev, err := range env.(*Environment).StreamOwned(ctx, in) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, ev); err != nil {
			t.Errorf("event %s is not a valid AgentEnvironmentEvent: %v", ev.Type, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// Issue 7, item 3: the real claude binary, driven by the bridge against
// a local Anthropic server, yields the canonical events, the exact usage
// the server reported, the native session id, the served model and a
// receipt of exactly what was applied — and never the key or endpoint.
func TestClaudeEndToEnd(t *testing.T) {
	f := newFakeAnthropic(t, toolScript)
	p := newClaudeProvider(t, f)
	pr := &profile.Profile{
		Name:    profile.Ptr("e2e"),
		Harness: harness.ClaudeCode,
		Model:   &profile.ModelHints{Default: profile.Ptr("claude-e2e-1"), ReasoningEffort: harness.EffortLow},
		Prompt:  &profile.Prompt{AppendSystemPrompt: profile.Ptr("Answer tersely.")},
		Tools:   map[string]bool{"Bash": true, "WebFetch": false},
	}
	env := newTestEnv(t, p, pr)
	evs, first := toolTurn(t, f, env, "please use bash")

	// Wire: the key in x-api-key, the profile's model, effort, appended
	// prompt and tool rules applied.
	if got := first.Header.Get("X-Api-Key"); got != fakeKey {
		t.Errorf("x-api-key = %q", got)
	}
	body := first.wire(t)
	if body.Model != "claude-e2e-1" || !body.Stream || body.Effort != "low" {
		t.Errorf("request model %q stream %t effort %q", body.Model, body.Stream, body.Effort)
	}
	system, tools := body.System, body.Tools
	if !hasText(system, "Answer tersely.") {
		t.Error("the appended system prompt did not reach the model")
	}
	if slices.Contains(tools, "WebFetch") || !slices.Contains(tools, "Bash") {
		t.Errorf("tools offered to the model: %v (want Bash, not WebFetch)", tools)
	}

	// Events: receipt first, then started, tool running, tool completed,
	// text, and one completed result with the exact usage.
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	want := []string{"clibridge.materialization", "native.session.observed", "system.init", "assistant.tool_use",
		"user.tool_result", "assistant.text", "result"}
	if !slices.Equal(types, want) {
		t.Fatalf("event types %v, want %v", types, want)
	}
	checkToolTurnUsage(t, evs)
	tool := evs[4].Normalized.MessagePartUpdated.Part
	if *tool.Tool != "Bash" || tool.State.Status != contract.ToolStatusCompleted || tool.State.Output.Str() != "hi" ||
		tool.State.Input["command"].Str() != "echo hi" {
		t.Errorf("tool result part %+v", tool)
	}
	if d := evs[5].Normalized.MessagePartUpdated.Delta; d == nil || *d != "Done: hi" {
		t.Errorf("text delta %v", d)
	}

	// Native session id: the one claude sent the server, private.
	recs := checkSession(t, env, evs, first.Header.Get("X-Claude-Code-Session-Id"))
	out := recs[0].Outcome
	if out.ServedModel != "claude-e2e-1" || out.HarnessVersion == "" || out.Text != "Done: hi" {
		t.Errorf("outcome %+v", out)
	}

	// Receipt: exactly the flags applied, digests for prompts, env names
	// only.
	rc := recs[0].Receipt
	for _, arg := range []string{"--model=claude-e2e-1", "--effort=low", "--allowedTools=Bash", "--disallowedTools=WebFetch",
		"--append-system-prompt=" + canonjson.DigestBytes([]byte("Answer tersely.")), "--permission-mode=dontAsk"} {
		if !slices.Contains(rc.Args, arg) {
			t.Errorf("receipt args %v lack %s", rc.Args, arg)
		}
	}
	if rc.Applied.PromptDigest != canonjson.DigestBytes([]byte("please use bash")) || rc.Applied.NativeEffort != "low" {
		t.Errorf("receipt applied %+v", rc.Applied)
	}
	if !slices.Contains(rc.EnvNames, "ANTHROPIC_API_KEY") || !slices.Contains(rc.EnvNames, "HOME") {
		t.Errorf("receipt env names %v", rc.EnvNames)
	}

	checkNoSecrets(t, f, evs, recs)
	checkPublicStream(t, env)
}

// toolTurn runs one owned turn of env whose prompt makes f's script
// call a tool first and answer after its result, logs how long it took,
// checks that f saw exactly those two model calls and returns the events
// and the first call.
func toolTurn(t *testing.T, f *fakeServer, env contract.Environment, prompt string) ([]contract.EnvironmentEvent, fakeRequest) {
	t.Helper()
	start := time.Now()
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: &prompt})
	t.Logf("the %s turn took %v", env.(*Environment).st.p.cfg.driver.harness(), time.Since(start))
	msgs := f.messages()
	if len(msgs) != 2 {
		t.Fatalf("the server saw %d model calls, want 2 (tool call, then answer); requests %v", len(msgs), f.Requests())
	}
	return evs, msgs[0]
}

// checkToolTurnUsage checks that a tool turn of bashScript (or
// codexScript) completed with the usage of its two model calls, 28 input
// and 12 output tokens, as usageMode cumulative, and returns the usage.
func checkToolTurnUsage(t *testing.T, evs []contract.EnvironmentEvent) *contract.TokenUsage {
	t.Helper()
	last := evs[len(evs)-1]
	if kind, ok := contract.EnvironmentEventTerminal(last); !ok || kind != contract.TerminalCompleted {
		t.Errorf("terminal %q %t, want completed", kind, ok)
	}
	u, mode, ok := last.UsageReport()
	if !ok || mode != contract.UsageCumulative || u.InputTokens != 11+17 || u.OutputTokens != 7+5 {
		t.Fatalf("usage %+v mode %q, want 28 in, 12 out, cumulative", u, mode)
	}
	return u
}

// checkSession checks the turn record of env's one turn: its native
// session id is sent, the one the harness sent the server, evs[1] is its
// private observation, and its receipt digest is the receipt's canonical
// digest. It returns the records.
func checkSession(t *testing.T, env contract.Environment, evs []contract.EnvironmentEvent, sent string) []TurnRecord {
	t.Helper()
	recs := env.(*Environment).Turns()
	if len(recs) != 1 {
		t.Fatalf("%d turn records", len(recs))
	}
	out := recs[0].Outcome
	if sent == "" || out.NativeSessionID != sent {
		t.Errorf("native session %q, the server saw %q", out.NativeSessionID, sent)
	}
	if obs := evs[1].Normalized.NativeSessionObserved; obs == nil || obs.NativeSessionID != out.NativeSessionID ||
		!contract.IsPrivateEnvironmentEvent(evs[1]) {
		t.Error("the native session observation is missing or public")
	}
	if d, _ := recs[0].Receipt.Digest(); d != recs[0].ReceiptDigest || !canonjson.IsDigest(d) {
		t.Errorf("receipt digest %s, recorded %s", d, recs[0].ReceiptDigest)
	}
	return recs
}

// checkNoSecrets fails when the API key or the endpoint appears in any
// event or turn record.
func checkNoSecrets(t *testing.T, f *fakeServer, evs []contract.EnvironmentEvent, recs []TurnRecord) {
	t.Helper()
	v, err := canonjson.ToValue(map[string]any{"events": evs, "turns": recs})
	if err != nil {
		t.Fatal(err)
	}
	all, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(all), fakeKey) || strings.Contains(string(all), strings.TrimPrefix(f.URL(), "http://")) {
		t.Error("the API key or the endpoint leaked into an event or receipt")
	}
}

// checkPublicStream runs a turn on the public stream, which withholds
// the native session observation.
func checkPublicStream(t *testing.T, env contract.Environment) {
	t.Helper()
	for ev, err := range env.Stream(context.Background(), &contract.TurnInput{Prompt: profile.Ptr("hello")}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := contract.CheckPublicEnvironmentEvent(ev); err != nil {
			t.Error(err)
		}
	}
}

// newTestEnv creates an environment of p with the inline profile pr
// (nil for none), destroyed when the test ends.
func newTestEnv(t *testing.T, p *Provider, pr *profile.Profile) contract.Environment {
	t.Helper()
	env, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: pr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Destroy(context.Background()) })
	return env
}

// The served model is read back from the stream: a server answering with
// another model than the one requested is reported, so the kernel sees
// the mismatch.
func TestClaudeServedModelMismatch(t *testing.T) {
	f := newFakeAnthropic(t, func(req fakeRequest) fakeReply { return fakeReply{Model: "claude-other-9", Text: "hi", In: 3, Out: 1} })
	p := newClaudeProvider(t, f)
	env, err := p.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.Background())
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hi"), Model: profile.Ptr("claude-asked-1")})
	var served []string
	for _, ev := range evs {
		if b, ok := ev.Data["effectiveBackend"]; ok {
			m, _ := b.Get("model")
			served = append(served, m.Str())
		}
	}
	if !slices.Equal(served, []string{"claude-asked-1", "claude-other-9"}) {
		t.Errorf("effectiveBackend models %v, want the init line's then the message's", served)
	}
	if got := env.(*Environment).Turns()[0].Outcome.ServedModel; got != "claude-other-9" {
		t.Errorf("served model %q", got)
	}
}

// For every harness, an API error is a failed turn with unknown usage,
// never a success (and claude's synthetic error message is no served
// model).
func TestAPIErrorFails(t *testing.T) {
	for _, s := range suites {
		t.Run(string(s.driver.harness()), func(t *testing.T) {
			f := newFakeServer(t, s.api, func(req fakeRequest) fakeReply { return fakeReply{Status: 400, Text: "fake refusal"} })
			env := newTestEnv(t, s.newProvider(t, f), nil)
			checkAPIErrorFails(t, f, env)
			if got := env.(*Environment).Turns()[0].Outcome.ServedModel; got == claudeSyntheticModel {
				t.Errorf("claude's synthetic error message counted as the served model")
			}
		})
	}
}

// For every harness, an endpoint that reports no usage leaves the turn's
// usage unknown: the CLIs fill in zeros of their own, which the bridge
// must not pass on as a measured zero (unknown is never 0).
func TestMissingUsageStaysUnknown(t *testing.T) {
	for _, s := range suites {
		t.Run(string(s.driver.harness()), func(t *testing.T) {
			f := newFakeServer(t, s.api, func(req fakeRequest) fakeReply { return fakeReply{Text: "Hello.", NoUsage: true} })
			env := newTestEnv(t, s.newProvider(t, f), nil)
			evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hi")})
			last := evs[len(evs)-1]
			kind, _ := contract.EnvironmentEventTerminal(last)
			t.Logf("%s without usage from the endpoint: terminal %q, usage %+v", s.driver.harness(), kind, last.Usage)
			for _, e := range evs {
				if e.Usage != nil {
					t.Errorf("event %s carries usage %+v the endpoint never sent", e.Type, e.Usage)
				}
			}
			if len(f.messages()) == 0 {
				t.Fatal("no model call reached the server")
			}
		})
	}
}

// checkAPIErrorFails runs a turn against a server answering every model
// call with HTTP 400 "fake refusal": a failed turn with unknown usage,
// never a success, and no secret in what it reports.
func checkAPIErrorFails(t *testing.T, f *fakeServer, env contract.Environment) {
	t.Helper()
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hi")})
	last := evs[len(evs)-1]
	if kind, _ := contract.EnvironmentEventTerminal(last); kind != contract.TerminalFailed {
		t.Errorf("terminal %q, want failed", kind)
	}
	if last.Usage != nil {
		t.Errorf("a failed turn reported usage %+v", last.Usage)
	}
	if d := last.Normalized.Status.Detail; d == nil || !strings.Contains(*d, "fake refusal") {
		t.Errorf("detail %v", d)
	}
	checkNoSecrets(t, f, evs, env.(*Environment).Turns())
}

// For every harness, cancelling the turn's context mid-stream kills the
// whole process group and reports cancelled, not failed.
func TestCancellation(t *testing.T) {
	for _, s := range suites {
		t.Run(string(s.driver.harness()), func(t *testing.T) {
			f := newFakeServer(t, s.api, func(req fakeRequest) fakeReply { return fakeReply{Hang: true, In: 5} })
			checkCancellation(t, f, s.newProvider(t, f))
		})
	}
}

// checkCancellation cancels a turn once f saw a model call (f's script
// hangs) and checks that it ended cancelled with p's process group gone.
func checkCancellation(t *testing.T, f *fakeServer, p *Provider) {
	t.Helper()
	pgids := make(chan int, 1)
	p.cfg.hooks.onSpawn = func(pgid int) { pgids <- pgid }
	env := newTestEnv(t, p, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for len(f.messages()) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	evs := collectOwned(t, ctx, env, &contract.TurnInput{Prompt: profile.Ptr("hang")})
	last := evs[len(evs)-1]
	if kind, _ := contract.EnvironmentEventTerminal(last); kind != contract.TerminalCancelled {
		t.Fatalf("terminal %q, want cancelled", kind)
	}
	pgid := <-pgids
	if err := groupGone(pgid, 5*time.Second); err != nil {
		t.Error(err)
	}
	if got := env.(*Environment).Turns()[0].Outcome.Terminal; got != contract.TerminalCancelled {
		t.Errorf("recorded terminal %q", got)
	}
}

// groupGone waits until no process (zombies aside, which only their
// parent can reap) is left in the process group pgid.
func groupGone(pgid int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		live := liveMembers(pgid)
		if len(live) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the process group %d survived: %v", pgid, live)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// liveMembers lists the non-zombie processes of group pgid, from /proc.
func liveMembers(pgid int) []string {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	dirs, _ := os.ReadDir("/proc")
	var live []string
	for _, d := range dirs {
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			live = append(live, s[:i+1]+" "+f[0])
		}
	}
	return live
}

// The replacing system prompt, permission patterns and MCP servers reach
// the real binary: the server sees the profile's system prompt instead of
// the coding-agent one, and claude's init line lists the mounted server.
func TestClaudeProfileMaterialized(t *testing.T) {
	f := newFakeAnthropic(t, toolScript)
	p := newClaudeProvider(t, f)
	pr := &profile.Profile{
		Prompt: &profile.Prompt{SystemPrompt: profile.Ptr("You are the e2e probe.")},
		Permissions: map[string]profile.Permission{
			"bash":     {Patterns: map[string]profile.PermissionValue{"git *": profile.Allow}},
			"webfetch": {Value: profile.Deny},
		},
		MCP: map[string]profile.MCPServer{"probe": {Command: profile.Ptr(buildMCPProbe(t))}},
	}
	env, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: pr}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.Background())
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("hello")})
	if kind, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1]); kind != contract.TerminalCompleted {
		t.Fatalf("terminal %q", kind)
	}
	msgs := f.messages()
	if len(msgs) == 0 {
		t.Fatal("no message call")
	}
	body := msgs[0].wire(t)
	system, tools := body.System, body.Tools
	if !hasText(system, "You are the e2e probe.") || hasText(system, "You are an interactive agent") {
		t.Errorf("system blocks %q: want the profile's prompt instead of claude's", system)
	}
	if slices.Contains(tools, "WebFetch") {
		t.Error("a denied tool was offered to the model")
	}
	var servers canonjson.Value
	for _, ev := range evs {
		if ev.Type == "system.init" {
			servers = ev.Data["mcpServers"]
		}
	}
	if servers.Len() != 1 {
		t.Fatalf("init mcp servers %v", servers)
	}
	name, _ := servers.Items()[0].Get("name")
	status, _ := servers.Items()[0].Get("status")
	if name.Str() != "probe" || status.Str() != "connected" {
		t.Errorf("init mcp server %v, want probe connected", servers.Items()[0])
	}
	rc := env.(*Environment).Turns()[0].Receipt
	if !slices.Equal(rc.Applied.AllowedTools, []string{"Bash(git *)"}) || !slices.Equal(rc.Applied.DisallowedTools, []string{"WebFetch"}) ||
		!slices.Equal(rc.Applied.MCPServers, []string{"probe"}) || len(rc.Files) != 1 || rc.Applied.SystemPromptDigest == "" {
		t.Errorf("receipt %+v", rc)
	}
}

// Under --permission-mode=dontAsk a tool call without an allow rule is
// denied, not run: a file-writing command the profile did not allow
// leaves the workspace untouched, and the tool part ends in error.
func TestClaudeDeniesUnallowedTool(t *testing.T) {
	f := newFakeAnthropic(t, func(req fakeRequest) fakeReply {
		if !req.HasResult {
			return fakeReply{ToolName: "Bash", ToolInput: `{"command":"touch pwned","description":"write a file"}`, In: 4, Out: 2}
		}
		return fakeReply{Text: "ok", In: 5, Out: 1}
	})
	p := newClaudeProvider(t, f)
	env, err := p.Create(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.Background())
	evs := collectOwned(t, context.Background(), env, &contract.TurnInput{Prompt: profile.Ptr("write a file")})
	if _, err := os.Stat(filepath.Join(env.(*Environment).WorkDir(), "pwned")); err == nil {
		t.Error("a tool call without an allow rule ran")
	}
	for _, ev := range evs {
		if ev.Type == "user.tool_result" {
			st := ev.Normalized.MessagePartUpdated.Part.State
			if st.Status != contract.ToolStatusError {
				t.Errorf("tool state %q, want error", st.Status)
			}
		}
	}
}
