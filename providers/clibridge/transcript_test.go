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

// transcriptSet is one harness's recorded transcripts: where they live,
// the driver that normalizes them, the fake server and bridge that
// record them, and the scenarios.
type transcriptSet struct {
	// dir holds the archives; binary names the harness in comments and
	// server the fake's API.
	dir, binary, server string
	d                   driver
	newFake             func(testing.TB, func(fakeRequest) fakeReply) *fakeAnthropic
	newProvider         func(testing.TB, *fakeAnthropic) *Provider
	scenarios           []captureScenario
}

// provider is the provider name the set's normalizer reports.
func (s *transcriptSet) provider() string { return "clibridge-" + string(s.d.harness()) }

var claudeTranscripts = &transcriptSet{dir: "testdata/claude-code", binary: "claude", server: "Anthropic", d: claudeDriver{},
	newFake: newFakeAnthropic, newProvider: newClaudeProvider, scenarios: captureScenarios}

var opencodeTranscripts = &transcriptSet{dir: "testdata/opencode", binary: "opencode", server: "OpenAI-compatible", d: opencodeDriver{},
	newFake: newFakeOpenAI, newProvider: newOpencodeProvider, scenarios: opencodeScenarios}

var transcriptSets = []*transcriptSet{claudeTranscripts, opencodeTranscripts}

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

// TestCaptureTranscripts records what the real binaries write for each
// scenario, with the fake server's request log, and the events the
// normalizer makes of it (the golden TestTranscripts checks).
func TestCaptureTranscripts(t *testing.T) {
	if !*capture {
		t.Skip("run with -capture to re-record the transcripts from the real binaries")
	}
	for _, set := range transcriptSets {
		t.Run(set.binary, func(t *testing.T) { set.capture(t) })
	}
}

// capture records the set's scenarios.
func (set *transcriptSet) capture(t *testing.T) {
	if err := os.MkdirAll(set.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sc := range set.scenarios {
		t.Run(sc.name, func(t *testing.T) {
			f := set.newFake(t, sc.script)
			p := set.newProvider(t, f)
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
				v, _ := exec.Command(p.cfg.binary, "--version").Output()
				version = strings.TrimSpace(string(v))
			}
			a := &txtar.Archive{
				Comment: fmt.Appendf(nil, "Recorded from the real %s binary (%s) against the fake %s server\n"+
					"of fakeserver_test.go by TestCaptureTranscripts -capture.\nprompt: %s\nexit: %d\ncancelled: %t\n",
					set.binary, version, set.server, sc.prompt, x.code, x.cancelled),
				Files: []txtar.File{
					{Name: "requests", Data: []byte(reqs.String())},
					{Name: "stream.jsonl", Data: append(bytes.Join(lines, []byte("\n")), '\n')},
				},
			}
			a.Files = append(a.Files, txtar.File{Name: "events.jsonl", Data: set.normalize(t, a)})
			if err := os.WriteFile(filepath.Join(set.dir, sc.name+".txtar"), txtar.Format(a), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// normalize feeds a transcript's stream to a fresh normalizer of the
// set's driver and returns its events as canonical JSON lines.
func (set *transcriptSet) normalize(t *testing.T, a *txtar.Archive) []byte {
	t.Helper()
	evs, _ := set.replayArchive(t, a)
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
func (set *transcriptSet) load(t *testing.T, name string) *txtar.Archive {
	t.Helper()
	a, err := txtar.ParseFile(filepath.Join(set.dir, name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The normalizer maps every recorded stream of the real binary to the
// recorded canonical events.
func TestTranscripts(t *testing.T) {
	for _, set := range transcriptSets {
		for _, sc := range set.scenarios {
			t.Run(set.binary+"/"+sc.name, func(t *testing.T) {
				a := set.load(t, sc.name)
				if got, want := set.normalize(t, a), section(t, a, "events.jsonl"); !bytes.Equal(got, want) {
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
	return claudeTranscripts.replayArchive(t, claudeTranscripts.load(t, name))
}

// replayArchive feeds a transcript's stream to a fresh normalizer of the
// set's driver, ends it as the comment's exit line says, and returns its
// events and outcome.
func (set *transcriptSet) replayArchive(t *testing.T, a *txtar.Archive) ([]contract.EnvironmentEvent, Outcome) {
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
	n := set.d.normalizer(&turnSpec{provider: set.provider(), turn: 1})
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
		a := claudeTranscripts.load(t, "tool")
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
