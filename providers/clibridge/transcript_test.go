package clibridge

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// capture re-records testdata/<harness>/*.txtar from the real binaries
// (go test -run TestCaptureTranscripts -capture).
var capture = flag.Bool("capture", false, "re-record the harness transcripts from the real binaries")

// transcriptDir holds the recorded claude-code transcripts.
const transcriptDir = "testdata/claude-code"

// transcriptSuite is one harness's recorded transcripts: where they
// live, the driver whose normalizer reads them, and how to record them
// (the fake server's wire format, the provider, the scenarios).
type transcriptSuite struct {
	dir         string
	driver      driver
	api         fakeAPI
	newProvider func(testing.TB, *fakeServer) *Provider
	scenarios   []captureScenario
}

var (
	claudeSuite = transcriptSuite{dir: transcriptDir, driver: claudeDriver{}, api: anthropicAPI{}, newProvider: newClaudeProvider,
		scenarios: captureScenarios}
	codexSuite = transcriptSuite{dir: "testdata/codex", driver: codexDriver{}, api: openAIAPI{}, newProvider: newCodexProvider,
		scenarios: codexScenarios}
	opencodeSuite = transcriptSuite{dir: "testdata/opencode", driver: opencodeDriver{}, api: chatCompletionsAPI{}, newProvider: newOpencodeProvider,
		scenarios: opencodeScenarios}
	suites = []transcriptSuite{claudeSuite, codexSuite, opencodeSuite}
)

// captureScenario is one recorded turn.
type captureScenario struct {
	name, prompt string
	model        string
	script       func(fakeRequest) fakeReply
	profile      *profile.Profile
	// cancel cancels the turn once the server saw a message call.
	cancel bool
}

var captureScenarios = []captureScenario{
	{name: "text", prompt: "Say hello.", script: toolScript},
	{name: "tool", prompt: "please use bash", script: toolScript, model: "claude-e2e-1",
		profile: &profile.Profile{Tools: map[string]bool{"Bash": true}, Model: &profile.ModelHints{ReasoningEffort: harness.EffortHigh}}},
	{name: "api-error", prompt: "hi", script: func(fakeRequest) fakeReply { return fakeReply{Status: 400, Text: "fake refusal"} }},
	{name: "served-other-model", prompt: "hi", model: "claude-asked-1",
		script: func(fakeRequest) fakeReply { return fakeReply{Model: "claude-other-9", Text: "hi", In: 3, Out: 1} }},
	{name: "cancelled", prompt: "hang", cancel: true, script: func(fakeRequest) fakeReply { return fakeReply{Hang: true, In: 5} }},
}

var codexScenarios = []captureScenario{
	{name: "text", prompt: "Say hello.", script: codexScript},
	{name: "tool", prompt: "please use shell", script: codexScript, model: "gpt-e2e-1",
		profile: &profile.Profile{Model: &profile.ModelHints{ReasoningEffort: harness.EffortHigh}}},
	{name: "api-error", prompt: "hi", script: func(fakeRequest) fakeReply { return fakeReply{Status: 400, Text: "fake refusal"} }},
	{name: "served-other-model", prompt: "hi", model: "gpt-asked-1",
		script: func(fakeRequest) fakeReply { return fakeReply{Model: "gpt-other-9", Text: "hi", In: 3, Out: 1} }},
	{name: "sandbox-denied", prompt: "write a file", script: func(req fakeRequest) fakeReply {
		if !req.HasResult {
			return fakeReply{ToolName: "exec_command", ToolInput: `{"cmd":"touch pwned"}`, In: 4, Out: 2}
		}
		return fakeReply{Text: "ok", In: 5, Out: 1}
	}},
	{name: "cancelled", prompt: "hang", cancel: true, script: func(fakeRequest) fakeReply { return fakeReply{Hang: true, In: 5} }},
}

// TestCaptureTranscripts records what each real binary writes for each
// scenario, with the fake server's request log, and the events the
// normalizer makes of it (the golden TestTranscripts checks).
func TestCaptureTranscripts(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to re-record the transcripts from the real binaries")
	}
	for _, s := range suites {
		t.Run(filepath.Base(s.dir), func(t *testing.T) { s.capture(t) })
	}
}

// capture records the suite's scenarios.
func (s transcriptSuite) capture(t *testing.T) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := s.driver.executable()
	for _, sc := range s.scenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := newFakeServer(t, s.api, sc.script)
			p := s.newProvider(t, f)
			var mu sync.Mutex
			var lines [][]byte
			var x exit
			p.cfg.hooks.onLine = func(l []byte) { mu.Lock(); lines = append(lines, bytes.Clone(l)); mu.Unlock() }
			p.cfg.hooks.onExit = func(e exit) { x = e }
			env, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: sc.profile}})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Destroy(context.Background())
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if sc.cancel {
				go func() {
					for len(f.messages()) == 0 {
						if ctx.Err() != nil {
							return
						}
						time.Sleep(20 * time.Millisecond)
					}
					cancel()
				}()
			}
			in := &contract.TurnInput{Prompt: &sc.prompt}
			if sc.model != "" {
				in.Model = &sc.model
			}
			collectOwned(t, ctx, env, in)
			var reqs strings.Builder
			for _, r := range f.Requests() {
				fmt.Fprintf(&reqs, "%s %s\n", r.Method, r.Path)
			}
			version := env.(*Environment).Turns()[0].Outcome.HarnessVersion
			if version == "" {
				b, _ := exec.Command(p.Binary(), "--version").Output()
				version = strings.TrimSpace(string(b))
			}
			a := &txtar.Archive{
				Comment: fmt.Appendf(nil, "Recorded from the real %s binary (%s) against the fake %s server\n"+
					"of fakeserver_test.go by TestCaptureTranscripts -capture.\nprompt: %s\nexit: %d\ncancelled: %t\n",
					exe, version, s.api.name(), sc.prompt, x.code, x.cancelled),
				Files: []txtar.File{
					{Name: "requests", Data: []byte(reqs.String())},
					{Name: "stream.jsonl", Data: append(bytes.Join(lines, []byte("\n")), '\n')},
				},
			}
			a.Files = append(a.Files, txtar.File{Name: "events.jsonl", Data: s.normalize(t, a)})
			if err := os.WriteFile(filepath.Join(s.dir, sc.name+".txtar"), txtar.Format(a), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// normalize feeds a transcript's stream to a fresh normalizer of the
// suite's driver and returns its events as canonical JSON lines.
func (s transcriptSuite) normalize(t *testing.T, a *txtar.Archive) []byte {
	t.Helper()
	evs, _ := s.replayArchive(t, a)
	var out bytes.Buffer
	for _, ev := range evs {
		if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, ev); err != nil {
			t.Errorf("event %s is invalid: %v", ev.Type, err)
		}
		ev.ProviderEvent = canonjson.Value{} // the stream section holds it
		v, err := canonjson.ToValue(ev)
		if err != nil {
			t.Fatal(err)
		}
		b, err := canonjson.Canonical(v)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

func section(t *testing.T, a *txtar.Archive, name string) []byte {
	t.Helper()
	for _, f := range a.Files {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no %s section", name)
	return nil
}

// load reads one recorded transcript.
func (s transcriptSuite) load(t *testing.T, name string) *txtar.Archive {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join(s.dir, name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The normalizers map every recorded stream of the real binaries to the
// recorded canonical events.
func TestTranscripts(t *testing.T) {
	for _, s := range suites {
		for _, sc := range s.scenarios {
			t.Run(filepath.Base(s.dir)+"/"+sc.name, func(t *testing.T) {
				a := s.load(t, sc.name)
				if got, want := s.normalize(t, a), section(t, a, "events.jsonl"); !bytes.Equal(got, want) {
					t.Errorf("events differ from the recording\ngot:\n%s\nwant:\n%s", got, want)
				}
			})
		}
	}
}

// replay normalizes a recorded claude transcript and returns its events
// and outcome.
func replay(t *testing.T, name string) ([]contract.EnvironmentEvent, Outcome) {
	t.Helper()
	return claudeSuite.replay(t, name)
}

// replay normalizes a recorded transcript and returns its events and
// outcome.
func (s transcriptSuite) replay(t *testing.T, name string) ([]contract.EnvironmentEvent, Outcome) {
	t.Helper()
	return s.replayArchive(t, s.load(t, name))
}

// replayArchive feeds a transcript's stream to a fresh normalizer of the
// suite's driver, ends it as the comment's exit line says, and returns
// its events and outcome.
func (s transcriptSuite) replayArchive(t *testing.T, a *txtar.Archive) ([]contract.EnvironmentEvent, Outcome) {
	t.Helper()
	x := exit{}
	for _, l := range strings.Split(string(a.Comment), "\n") {
		if v, ok := strings.CutPrefix(l, "exit: "); ok {
			x.code, _ = strconv.Atoi(v)
		}
		if v, ok := strings.CutPrefix(l, "cancelled: "); ok {
			x.cancelled = v == "true"
		}
	}
	n := s.driver.normalizer(&turnSpec{provider: "clibridge-" + string(s.driver.harness()), turn: 1})
	var evs []contract.EnvironmentEvent
	for _, l := range bytes.Split(section(t, a, "stream.jsonl"), []byte("\n")) {
		evs = append(evs, n.line(l)...)
	}
	return append(evs, n.end(x)...), n.outcome()
}

// What each recorded stream means, asserted by hand.
func TestTranscriptMeaning(t *testing.T) {
	terminal := func(evs []contract.EnvironmentEvent) contract.TerminalKind {
		k, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1])
		return k
	}
	t.Run("text", func(t *testing.T) {
		evs, out := replay(t, "text")
		if terminal(evs) != contract.TerminalCompleted || out.Usage == nil || out.Usage.InputTokens != 12 || out.Usage.OutputTokens != 3 {
			t.Errorf("terminal %q usage %+v", terminal(evs), out.Usage)
		}
		// The init line names "claude-opus-4-8[1m]"; the API was asked for
		// (and served) "claude-opus-4-8".
		if out.Text != "Hello." || out.NativeSessionID == "" || out.HarnessVersion != "2.1.197" || out.ServedModel != "claude-opus-4-8" {
			t.Errorf("outcome %+v", out)
		}
	})
	t.Run("tool", func(t *testing.T) {
		evs, out := replay(t, "tool")
		if terminal(evs) != contract.TerminalCompleted || out.Usage.InputTokens != 28 || out.Usage.OutputTokens != 12 {
			t.Errorf("terminal %q usage %+v", terminal(evs), out.Usage)
		}
		var states []string
		for _, ev := range evs {
			if ev.Normalized != nil && ev.Normalized.MessagePartUpdated != nil && ev.Normalized.MessagePartUpdated.Part.IsTool() {
				states = append(states, ev.Normalized.MessagePartUpdated.Part.State.Status)
			}
		}
		if strings.Join(states, ",") != "running,completed" {
			t.Errorf("tool states %v", states)
		}
		if out.ServedModel != "claude-e2e-1" {
			t.Errorf("served %q", out.ServedModel)
		}
	})
	t.Run("api-error", func(t *testing.T) {
		evs, out := replay(t, "api-error")
		if terminal(evs) != contract.TerminalFailed || out.Usage != nil {
			t.Errorf("terminal %q usage %+v", terminal(evs), out.Usage)
		}
		if out.ServedModel == claudeSyntheticModel {
			t.Error("a synthetic message counted as served")
		}
	})
	t.Run("served-other-model", func(t *testing.T) {
		_, out := replay(t, "served-other-model")
		if out.ServedModel != "claude-other-9" {
			t.Errorf("served %q", out.ServedModel)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		evs, out := replay(t, "cancelled")
		if terminal(evs) != contract.TerminalCancelled || out.Usage != nil {
			t.Errorf("terminal %q usage %+v", terminal(evs), out.Usage)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		// The tool stream cut after its first two lines, the process gone:
		// failed, never success.
		a := claudeSuite.load(t, "tool")
		n := claudeDriver{}.normalizer(&turnSpec{provider: "clibridge-claude-code", turn: 1})
		for _, l := range bytes.SplitN(section(t, a, "stream.jsonl"), []byte("\n"), 3)[:2] {
			n.line(l)
		}
		evs := n.end(exit{code: -1})
		if terminal(evs) != contract.TerminalFailed || n.outcome().Usage != nil {
			t.Errorf("terminal %q", terminal(evs))
		}
	})
}

// What each recorded codex stream means, asserted by hand.
func TestCodexTranscriptMeaning(t *testing.T) {
	terminal := func(evs []contract.EnvironmentEvent) contract.TerminalKind {
		k, _ := contract.EnvironmentEventTerminal(evs[len(evs)-1])
		return k
	}
	toolStates := func(evs []contract.EnvironmentEvent) string {
		var states []string
		for _, ev := range evs {
			if ev.Normalized != nil && ev.Normalized.MessagePartUpdated != nil && ev.Normalized.MessagePartUpdated.Part.IsTool() {
				states = append(states, ev.Normalized.MessagePartUpdated.Part.State.Status)
			}
		}
		return strings.Join(states, ",")
	}
	t.Run("text", func(t *testing.T) {
		evs, out := codexSuite.replay(t, "text")
		u := out.Usage
		if terminal(evs) != contract.TerminalCompleted || u == nil || u.InputTokens != 12 || u.OutputTokens != 3 ||
			u.CacheReadInputTokens == nil || *u.CacheReadInputTokens != 2 {
			t.Errorf("terminal %q usage %+v", terminal(evs), u)
		}
		// codex's stream reports no model and no version: both unknown.
		if out.Text != "Hello." || out.NativeSessionID == "" || out.ServedModel != "" || out.HarnessVersion != "" {
			t.Errorf("outcome %+v", out)
		}
	})
	t.Run("tool", func(t *testing.T) {
		evs, out := codexSuite.replay(t, "tool")
		if terminal(evs) != contract.TerminalCompleted || out.Usage.InputTokens != 28 || out.Usage.OutputTokens != 12 {
			t.Errorf("terminal %q usage %+v", terminal(evs), out.Usage)
		}
		if got := toolStates(evs); got != "running,completed" {
			t.Errorf("tool states %v", got)
		}
	})
	t.Run("api-error", func(t *testing.T) {
		evs, out := codexSuite.replay(t, "api-error")
		if terminal(evs) != contract.TerminalFailed || out.Usage != nil {
			t.Errorf("terminal %q usage %+v", terminal(evs), out.Usage)
		}
		if d := evs[len(evs)-1].Normalized.Status.Detail; d == nil || !strings.Contains(*d, "fake refusal") {
			t.Errorf("detail %v", d)
		}
	})
	t.Run("served-other-model", func(t *testing.T) {
		// The server answered as gpt-other-9; the stream never says so.
		_, out := codexSuite.replay(t, "served-other-model")
		if out.ServedModel != "" {
			t.Errorf("served %q, want unknown", out.ServedModel)
		}
	})
	t.Run("sandbox-denied", func(t *testing.T) {
		evs, _ := codexSuite.replay(t, "sandbox-denied")
		if got := toolStates(evs); got != "running,error" || terminal(evs) != contract.TerminalCompleted {
			t.Errorf("tool states %v terminal %q", got, terminal(evs))
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		evs, out := codexSuite.replay(t, "cancelled")
		if terminal(evs) != contract.TerminalCancelled || out.Usage != nil {
			t.Errorf("terminal %q usage %+v", terminal(evs), out.Usage)
		}
	})
	t.Run("truncated", func(t *testing.T) {
		// The tool stream cut before turn.completed, the process gone:
		// failed, never success.
		a := codexSuite.load(t, "tool")
		n := codexDriver{}.normalizer(&turnSpec{provider: "clibridge-codex", turn: 1})
		lines := bytes.Split(section(t, a, "stream.jsonl"), []byte("\n"))
		for _, l := range lines[:len(lines)-2] {
			n.line(l)
		}
		evs := n.end(exit{code: -1})
		if terminal(evs) != contract.TerminalFailed || n.outcome().Usage != nil {
			t.Errorf("terminal %q", terminal(evs))
		}
	})
	t.Run("completed-but-nonzero-exit", func(t *testing.T) {
		a := codexSuite.load(t, "text")
		n := codexDriver{}.normalizer(&turnSpec{provider: "clibridge-codex", turn: 1})
		for _, l := range bytes.Split(section(t, a, "stream.jsonl"), []byte("\n")) {
			n.line(l)
		}
		evs := n.end(exit{code: 1})
		if terminal(evs) != contract.TerminalFailed || n.outcome().Usage != nil {
			t.Errorf("terminal %q usage %+v", terminal(evs), n.outcome().Usage)
		}
	})
}
