package anthropic_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/anthropic"
)

// terseProfile asks for the transcripts' model with the system prompt
// they expect.
const terseProfile = `{"name":"terse","harness":"cli-base","model":{"provider":"anthropic","default":"anthropic/claude-sonnet-4-5-20250929"},"prompt":{"systemPrompt":"You are terse."}}`

// newProvider returns a provider over baseURL whose default model is the
// test model, with max_tokens 1024, sending a profile's "anthropic/…"
// model as the bare id.
func newProvider(t testing.TB, baseURL string, hc *http.Client) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.NewProvider(anthropic.ProviderOptions{
		Options:          anthropic.Options{BaseURL: baseURL, APIKey: testKey, HTTPClient: hc, Model: testModel, MaxTokens: 1024},
		StripModelPrefix: "anthropic/",
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// transcriptServer plays testdata/name.txtar; cycling, it also tolerates
// exchanges never asked for (the refusal tests expect none).
func transcriptServer(t testing.TB, name string, cycle bool) *transcript.Server {
	t.Helper()
	return transcript.Serve(t, filepath.Join("testdata", name+".txtar"), transcript.ServerOptions{
		Cycle: cycle, Complete: true, Check: transcript.AnthropicHeaders(testKey, anthropic.APIVersion)})
}

func mustProfile(t testing.TB, src string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func profileInput(t testing.TB, src string) *contract.CreateInput {
	return &contract.CreateInput{Profile: profile.Ref{Inline: mustProfile(t, src)}}
}

func collectEvents(seq iter.Seq2[contract.EnvironmentEvent, error]) ([]contract.EnvironmentEvent, error) {
	var out []contract.EnvironmentEvent
	for e, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

// providerTurn streams "Say hello." in an environment of src over the
// transcript name.
func providerTurn(t *testing.T, name, src string) ([]contract.EnvironmentEvent, error) {
	t.Helper()
	p := newProvider(t, transcriptServer(t, name, false).URL, nil)
	env, err := p.Create(t.Context(), profileInput(t, src))
	if err != nil {
		t.Fatal(err)
	}
	return collectEvents(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Say hello.")}))
}

func servedModel(e contract.EnvironmentEvent) string {
	m, _ := e.Data["effectiveBackend"].Get("model")
	return m.Str()
}

func terminal(t *testing.T, evs []contract.EnvironmentEvent) (contract.EnvironmentEvent, contract.TerminalKind) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	last := evs[len(evs)-1]
	kind, ok := contract.EnvironmentEventTerminal(last)
	if !ok {
		t.Fatalf("the last event %s is not terminal", last.Type)
	}
	return last, kind
}

// The provider passes providertest with what it declares: every scenario
// of an ability it does not declare skips itself.
func TestProviderConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) contract.Provider {
		return newProvider(t, transcriptServer(t, "conformance", true).URL, nil)
	}, providertest.Options{})
}

func TestProviderCapabilitiesDeclareOnlyWhatIsEnforced(t *testing.T) {
	c, err := newProvider(t, "https://api.invalid", nil).Capabilities(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Capabilities{Streaming: contract.StreamingCapabilities{Live: true}, Usage: true}
	want.Profile.SystemPrompt.Replace, want.Profile.SystemPrompt.Append = true, true
	got, err1 := canonjson.ToValue(c)
	exp, err2 := canonjson.ToValue(&want)
	if err1 != nil || err2 != nil || !canonjson.Equal(got, exp) {
		t.Errorf("capabilities %s, want %s (%v, %v)", canonjson.Marshal(got), canonjson.Marshal(exp), err1, err2)
	}
}

func TestProviderStreamTextUsageAndServedModel(t *testing.T) {
	evs, err := providerTurn(t, "text", terseProfile)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var usage *contract.TokenUsage
	for _, e := range evs {
		types = append(types, e.Type)
		if u, mode, ok := e.UsageReport(); ok {
			if mode != contract.UsageCumulative {
				t.Errorf("usage mode %q", mode)
			}
			usage = u
		}
		if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, e); err != nil {
			t.Errorf("event %s: %v", e.Type, err)
		}
	}
	want := "execution.started usage message.part.updated message.part.updated usage done"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("event types %s, want %s", got, want)
	}
	if usage == nil || usage.InputTokens != 25 || usage.OutputTokens != 6 ||
		usage.CacheReadInputTokens == nil || *usage.CacheReadInputTokens != 2048 ||
		usage.CacheCreationInputTokens == nil || *usage.CacheCreationInputTokens != 1200 || usage.ReasoningTokens != nil {
		t.Errorf("usage %+v", usage)
	}
	done, kind := terminal(t, evs)
	if kind != contract.TerminalCompleted || done.Data["text"].Str() != "Hello, world." || servedModel(done) != testModel {
		t.Errorf("done %v: %s", kind, canonjson.Marshal(done.Data["effectiveBackend"]))
	}
	if p, _ := done.Data["effectiveBackend"].Get("provider"); p.Str() != anthropic.DefaultName {
		t.Errorf("effectiveBackend provider %q", p.Str())
	}
}

// systemPrompt and appendSystemPrompt both reach the top-level system
// parameter (the transcript checks the request body).
func TestProviderSystemPromptReplaceAndAppend(t *testing.T) {
	evs, err := providerTurn(t, "system_append",
		`{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929"},"prompt":{"systemPrompt":"You are terse.","appendSystemPrompt":"Answer in English."}}`)
	if err != nil {
		t.Fatal(err)
	}
	if done, kind := terminal(t, evs); kind != contract.TerminalCompleted || done.Data["text"].Str() != "Hello." {
		t.Errorf("terminal %v %s", kind, done.Type)
	}
}

// Another served model is reported on the terminal event's
// effectiveBackend, where kernel.Execute compares it with the request.
func TestProviderServedModelMismatchIsReported(t *testing.T) {
	evs, err := providerTurn(t, "served_other", terseProfile)
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := terminal(t, evs); servedModel(done) != "claude-3-5-haiku-20241022" {
		t.Errorf("served model on the terminal event %q", servedModel(done))
	}
}

func TestProviderMissingUsageStaysUnknown(t *testing.T) {
	evs, err := providerTurn(t, "usage_missing", terseProfile)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Usage != nil {
			t.Errorf("event %s carries usage %+v the server never sent", e.Type, e.Usage)
		}
	}
	if _, kind := terminal(t, evs); kind != contract.TerminalCompleted {
		t.Errorf("terminal %v", kind)
	}
}

func TestProviderInBandErrorFails(t *testing.T) {
	evs, err := providerTurn(t, "inband_error", terseProfile)
	if err != nil {
		t.Fatal(err)
	}
	last, kind := terminal(t, evs)
	if kind != contract.TerminalFailed || last.Type != "error" || !strings.Contains(last.Data["error"].Str(), "overloaded_error") {
		t.Errorf("last event %s %v: %s", last.Type, kind, last.Data["error"].Str())
	}
}

func TestProviderDroppedConnectionFails(t *testing.T) {
	evs, err := providerTurn(t, "dropped", terseProfile)
	if !errors.Is(err, anthropic.ErrStreamBroken) {
		t.Fatalf("err %v", err)
	}
	for _, e := range evs {
		if _, ok := contract.EnvironmentEventTerminal(e); ok {
			t.Errorf("a dropped stream emitted terminal event %s", e.Type)
		}
	}
}

func TestProviderTimeoutFails(t *testing.T) {
	p := newProvider(t, transcriptServer(t, "hang", false).URL, nil)
	env, err := p.Create(t.Context(), profileInput(t, terseProfile))
	if err != nil {
		t.Fatal(err)
	}
	timeout := int64(100)
	evs, err := collectEvents(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Say hello."), TimeoutMs: &timeout}))
	if err != nil {
		t.Fatal(err)
	}
	if last, kind := terminal(t, evs); kind != contract.TerminalFailed || !strings.Contains(last.Data["error"].Str(), "timeoutMs") {
		t.Errorf("last event %s %v", last.Type, kind)
	}
}

// Refusals come before any request: the server sees nothing.
func TestProviderRefusedBeforeDispatch(t *testing.T) {
	creates := []struct {
		name, profile string
		effort        bool // the refusal is an *EffortError too
	}{
		{"effort off the API's ladder", `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","reasoningEffort":"minimal"}}`, true},
		{"effort budget above max_tokens", `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","reasoningEffort":"high"}}`, true},
		{"reasoning token ceiling", `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","maxReasoningTokens":100}}`, false},
		{"visible token ceiling", `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","maxVisibleOutputTokens":100}}`, false},
		{"mcp", `{"harness":"cli-base","mcp":{"docs":{"url":"https://mcp.example.com"}}}`, false},
		{"tools map", `{"harness":"cli-base","tools":{"bash":true}}`, false},
		{"permissions", `{"harness":"cli-base","permissions":{"bash":"deny"}}`, false},
		{"instructions", `{"harness":"cli-base","prompt":{"instructions":["Use tabs."]}}`, false},
		{"other harness", `{"harness":"claude-code"}`, false},
	}
	for _, tc := range creates {
		t.Run("create/"+tc.name, func(t *testing.T) {
			srv := transcriptServer(t, "text", true)
			_, err := newProvider(t, srv.URL, nil).Create(t.Context(), profileInput(t, tc.profile))
			if !errors.Is(err, contract.ErrUnsupported) {
				t.Errorf("err %v", err)
			}
			if _, ok := errors.AsType[*anthropic.EffortError](err); ok != tc.effort {
				t.Errorf("*EffortError %v, want %v: %v", ok, tc.effort, err)
			}
			if srv.Requests() != 0 {
				t.Errorf("%d requests", srv.Requests())
			}
		})
	}
	t.Run("create/workspace", func(t *testing.T) {
		srv := transcriptServer(t, "text", true)
		in := profileInput(t, terseProfile)
		in.Workspace = &contract.WorkspaceRequest{}
		if _, err := newProvider(t, srv.URL, nil).Create(t.Context(), in); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("err %v", err)
		}
	})
	turns := []struct {
		name string
		in   *contract.TurnInput
	}{
		{"turn id", &contract.TurnInput{Prompt: str("x"), TurnID: str("t1")}},
		{"session", &contract.TurnInput{Prompt: str("x"), SessionID: str("s1")}},
		{"image part", &contract.TurnInput{Parts: []contract.InputPart{{Type: "file", URL: str("https://example.com/a.png")}}}},
		{"no prompt", &contract.TurnInput{}},
		{"turn profile with mcp", &contract.TurnInput{Prompt: str("x"), Profile: mustProfile(t, `{"mcp":{"docs":{"url":"https://mcp.example.com"}}}`)}},
		{"turn profile with an effort the API cannot express", &contract.TurnInput{Prompt: str("x"), Profile: mustProfile(t, `{"model":{"reasoningEffort":"minimal"}}`)}},
	}
	for _, tc := range turns {
		t.Run("turn/"+tc.name, func(t *testing.T) {
			srv := transcriptServer(t, "text", true)
			env, err := newProvider(t, srv.URL, nil).Create(t.Context(), profileInput(t, terseProfile))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := collectEvents(env.Stream(t.Context(), tc.in)); !errors.Is(err, contract.ErrUnsupported) {
				t.Errorf("err %v", err)
			}
			if srv.Requests() != 0 {
				t.Errorf("%d requests", srv.Requests())
			}
		})
	}
	t.Run("turn/no model", func(t *testing.T) {
		srv := transcriptServer(t, "text", true)
		p, err := anthropic.NewProvider(anthropic.ProviderOptions{Options: anthropic.Options{BaseURL: srv.URL, APIKey: testKey}})
		if err != nil {
			t.Fatal(err)
		}
		env, err := p.Create(t.Context(), &contract.CreateInput{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := collectEvents(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("x")})); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("err %v", err)
		}
		if srv.Requests() != 0 {
			t.Errorf("%d requests", srv.Requests())
		}
	})
}

// An effort the model honours with a budget under the profile's output
// ceiling is accepted.
func TestProviderAcceptsAnExpressibleEffort(t *testing.T) {
	p := newProvider(t, "https://api.invalid", nil)
	in := profileInput(t, `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","reasoningEffort":"medium","maxTotalOutputTokens":8192}}`)
	if _, err := p.Create(t.Context(), in); err != nil {
		t.Fatal(err)
	}
}

func TestNewProviderRefusesBadOptions(t *testing.T) {
	if _, err := anthropic.NewProvider(anthropic.ProviderOptions{Options: anthropic.Options{BaseURL: "ftp://x"}}); !errors.Is(err, anthropic.ErrInvalidOptions) {
		t.Errorf("bad base URL: %v", err)
	}
	if _, err := anthropic.NewProvider(anthropic.ProviderOptions{Options: anthropic.Options{Effort: "minimal"}}); !errors.As(err, new(*anthropic.EffortError)) {
		t.Errorf("bad effort: %v", err)
	}
}

// The key reaches the server in x-api-key only (the server checks it):
// no event and no error of the provider carries it, even when a server
// echoes it; and the process environment is never read.
func TestProviderKeyNeverInEventsOrErrors(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	check := func(name string, p *anthropic.Provider, src string) {
		env, err := p.Create(t.Context(), profileInput(t, src))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := collectEvents(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Say hello.")}))
		var seen []string
		if err != nil {
			seen = append(seen, err.Error())
		}
		for _, e := range evs {
			seen = append(seen, string(canonjson.Marshal(canonjson.ObjectValue(members(e.Data)))))
		}
		if joined := strings.Join(seen, "\n"); strings.Contains(joined, testKey) {
			t.Errorf("%s: the key leaked: %s", name, joined)
		}
	}
	for _, name := range []string{"unauthorized", "inband_error", "dropped", "text"} {
		check(name, newProvider(t, transcriptServer(t, name, false).URL, nil), terseProfile)
	}
	echo := `{"type":"error","error":{"type":"authentication_error","message":"key ` + testKey + ` is revoked"}}`
	inBand := &bodyTransport{body: []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"" + testModel + "\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: error\ndata: " + echo + "\n\n")}
	check("echo in-band", newProvider(t, "https://api.invalid", &http.Client{Transport: inBand}), terseProfile)
	check("echo http", newProvider(t, "https://api.invalid", &http.Client{Transport: &bodyTransport{status: 401, body: []byte(echo)}}), terseProfile)
}

func members(m map[string]canonjson.Value) []canonjson.Member {
	var out []canonjson.Member
	for k, v := range m {
		out = append(out, canonjson.Member{Name: k, Value: v})
	}
	return out
}

// Cancelling the caller's context ends the turn with execution.cancelled.
func TestProviderCancelled(t *testing.T) {
	p := newProvider(t, transcriptServer(t, "hang", false).URL, nil)
	env, err := p.Create(t.Context(), profileInput(t, terseProfile))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var last contract.EnvironmentEvent
	for e, err := range env.Stream(ctx, &contract.TurnInput{Prompt: str("Say hello.")}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Type == contract.EventTypeMessagePartUpdated {
			cancel()
		}
		last = e
	}
	if kind, ok := contract.EnvironmentEventTerminal(last); !ok || kind != contract.TerminalCancelled {
		t.Errorf("last event %s", last.Type)
	}
}
