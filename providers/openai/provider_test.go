package openai_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/openai"
)

// provider returns a provider over srv whose default model is gpt-5.2
// and which sends a profile's "openai/…" model as the bare id.
func provider(t testing.TB, srv *transcript.Server, reportsUsage bool) *openai.Provider {
	t.Helper()
	p, err := openai.NewProvider(openai.ProviderOptions{
		Options:      openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"},
		ReportsUsage: reportsUsage, StripModelPrefix: "openai/",
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The provider passes providertest with what it declares: every scenario
// of an ability it does not declare skips itself.
func TestConformance(t *testing.T) {
	for _, usage := range []bool{true, false} {
		name := "usage-declared"
		if !usage {
			name = "usage-not-declared"
		}
		t.Run(name, func(t *testing.T) {
			providertest.Run(t, func(t *testing.T) contract.Provider {
				return provider(t, server(t, "conformance", transcript.ServerOptions{Cycle: true}), usage)
			}, providertest.Options{})
		})
	}
}

func TestCapabilitiesDeclareOnlyWhatIsEnforced(t *testing.T) {
	p := provider(t, server(t, "conformance", transcript.ServerOptions{}), false)
	c, err := p.Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := contract.Capabilities{Streaming: contract.StreamingCapabilities{Live: true}}
	want.Profile.SystemPrompt.Replace, want.Profile.SystemPrompt.Append = true, true
	got, err1 := canonjson.ToValue(c)
	exp, err2 := canonjson.ToValue(&want)
	if err1 != nil || err2 != nil || !canonjson.Equal(got, exp) {
		t.Errorf("capabilities %s, want %s (%v, %v)", canonjson.Marshal(got), canonjson.Marshal(exp), err1, err2)
	}
}

func mustProfile(t testing.TB, src string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// briefProfile asks for gpt-5.2 with the system prompt the transcripts
// expect.
const briefProfile = `{"name":"brief","harness":"cli-base","model":{"provider":"openai","default":"openai/gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`

// briefEnv is an environment of briefProfile over the transcript name.
func briefEnv(t *testing.T, name string) contract.Environment {
	t.Helper()
	p := provider(t, server(t, name, transcript.ServerOptions{}), true)
	env, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: mustProfile(t, briefProfile)}})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func streamTurn(t *testing.T, name string) ([]contract.EnvironmentEvent, error) {
	t.Helper()
	return collect(briefEnv(t, name).Stream(context.Background(), &contract.TurnInput{Prompt: str("Say hello.")}))
}

func backendModel(e contract.EnvironmentEvent) string {
	b := e.Data["effectiveBackend"]
	m, _ := b.Get("model")
	return m.Str()
}

func TestStreamTextUsageAndServedModel(t *testing.T) {
	evs, err := streamTurn(t, "text")
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
	want := []string{"execution.started", "message.part.updated", "message.part.updated", "usage", "done"}
	if len(types) != len(want) {
		t.Fatalf("event types %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("event types %v, want %v", types, want)
		}
	}
	if usage == nil || usage.InputTokens != 19 || usage.OutputTokens != 3 {
		t.Errorf("usage %+v", usage)
	}
	done := evs[len(evs)-1]
	if kind, ok := contract.EnvironmentEventTerminal(done); !ok || kind != contract.TerminalCompleted {
		t.Errorf("terminal %v %v", kind, ok)
	}
	if done.Data["text"].Str() != "Hello!" || backendModel(done) != "gpt-5.2" || done.Data["finishReason"].Str() != "stop" {
		t.Errorf("done %s", canonjson.Marshal(canonjson.ObjectValue(members(done.Data))))
	}
}

func members(m map[string]canonjson.Value) []canonjson.Member {
	var out []canonjson.Member
	for k, v := range m {
		out = append(out, canonjson.Member{Name: k, Value: v})
	}
	return out
}

func TestStreamServedModelMismatchIsReported(t *testing.T) {
	evs, err := streamTurn(t, "served")
	if err != nil {
		t.Fatal(err)
	}
	if got := backendModel(evs[len(evs)-1]); got != "gpt-5.2-mini" {
		t.Errorf("served model on the terminal event %q", got)
	}
}

func TestStreamNoUsageStaysUnknown(t *testing.T) {
	evs, err := streamTurn(t, "nousage")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Usage != nil {
			t.Errorf("event %s carries usage %+v the endpoint never sent", e.Type, e.Usage)
		}
	}
}

func TestStreamInBandErrorFails(t *testing.T) {
	evs, err := streamTurn(t, "inband_error")
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if kind, ok := contract.EnvironmentEventTerminal(last); !ok || kind != contract.TerminalFailed || last.Type != "error" {
		t.Errorf("last event %s: %v %v", last.Type, kind, ok)
	}
}

func TestStreamDroppedConnectionBreaks(t *testing.T) {
	evs, err := streamTurn(t, "dropped")
	if !errors.Is(err, openai.ErrStreamBroken) {
		t.Fatalf("err %v", err)
	}
	for _, e := range evs {
		if _, ok := contract.EnvironmentEventTerminal(e); ok {
			t.Errorf("a dropped stream emitted terminal event %s", e.Type)
		}
	}
}

func TestStreamCancelled(t *testing.T) {
	env := briefEnv(t, "hang")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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

func TestStreamTimeoutFails(t *testing.T) {
	env := briefEnv(t, "hang")
	timeout := int64(50)
	evs, err := collect(env.Stream(context.Background(), &contract.TurnInput{Prompt: str("Say hello."), TimeoutMs: &timeout}))
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if kind, ok := contract.EnvironmentEventTerminal(last); !ok || kind != contract.TerminalFailed || !strings.Contains(last.Data["error"].Str(), "timeoutMs") {
		t.Errorf("last event %s %v", last.Type, kind)
	}
}

// The key reaches the endpoint in the Authorization header only: the
// debug log of every attempt, the error and the failure never carry it.
func TestKeyNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, name := range []string{"unauthorized", "inband_error", "dropped"} {
		srv := server(t, name, transcript.ServerOptions{})
		m, err := openai.New(openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2", Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := collect(m.Turn(context.Background(), hello(), nil))
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: the error carries the key: %v", name, err)
		}
		for _, e := range evs {
			if strings.Contains(e.Failure, testKey) {
				t.Errorf("%s: the failure carries the key", name)
			}
		}
	}
	if !strings.Contains(logs.String(), "request attempt") {
		t.Fatalf("nothing was logged: %q", logs.String())
	}
	if strings.Contains(logs.String(), testKey) || strings.Contains(logs.String(), "Bearer") {
		t.Errorf("the log carries the key:\n%s", logs.String())
	}
}

// Refusals come before any request: the endpoint sees nothing.
func TestRefusedBeforeDispatch(t *testing.T) {
	creates := []struct {
		name string
		in   func(t *testing.T) *contract.CreateInput
	}{
		{"mcp", profileInput(`{"harness":"cli-base","model":{"default":"openai/gpt-5.2"},"mcp":{"docs":{"url":"https://mcp.example.com"}}}`)},
		{"tools map", profileInput(`{"harness":"cli-base","model":{"default":"openai/gpt-5.2"},"tools":{"bash":true}}`)},
		{"permissions", profileInput(`{"harness":"cli-base","model":{"default":"openai/gpt-5.2"},"permissions":{"bash":"deny"}}`)},
		{"instructions", profileInput(`{"harness":"cli-base","model":{"default":"openai/gpt-5.2"},"prompt":{"instructions":["Use tabs."]}}`)},
		{"reasoning effort", profileInput(`{"harness":"cli-base","model":{"default":"openai/gpt-5.2","reasoningEffort":"high"}}`)},
		{"other harness", profileInput(`{"harness":"codex","model":{"default":"openai/gpt-5.2"}}`)},
		{"reasoning token ceiling", profileInput(`{"harness":"cli-base","model":{"default":"openai/gpt-5.2","maxReasoningTokens":100}}`)},
		{"workspace", func(t *testing.T) *contract.CreateInput {
			in := profileInput(briefProfile)(t)
			in.Workspace = &contract.WorkspaceRequest{}
			return in
		}},
		{"env", func(t *testing.T) *contract.CreateInput {
			in := profileInput(briefProfile)(t)
			in.Env = map[string]string{"A": "b"}
			return in
		}},
	}
	for _, tc := range creates {
		t.Run("create/"+tc.name, func(t *testing.T) {
			srv := server(t, "text", transcript.ServerOptions{})
			if _, err := provider(t, srv, true).Create(context.Background(), tc.in(t)); !errors.Is(err, contract.ErrUnsupported) {
				t.Errorf("err %v", err)
			}
			if srv.Requests() != 0 {
				t.Errorf("%d requests", srv.Requests())
			}
		})
	}
	turns := []struct {
		name string
		in   *contract.TurnInput
	}{
		{"turn id", &contract.TurnInput{Prompt: str("x"), TurnID: str("t1")}},
		{"session", &contract.TurnInput{Prompt: str("x"), SessionID: str("s1")}},
		{"image part", &contract.TurnInput{Parts: []contract.InputPart{{Type: "file", URL: str("https://example.com/a.png")}}}},
		{"no prompt", &contract.TurnInput{}},
		{"turn profile with mcp", &contract.TurnInput{Prompt: str("x"), Profile: mustProfile(t, `{"mcp":{"docs":{"url":"https://mcp.example.com"}}}`)}},
	}
	for _, tc := range turns {
		t.Run("turn/"+tc.name, func(t *testing.T) {
			srv := server(t, "text", transcript.ServerOptions{})
			env, err := provider(t, srv, true).Create(context.Background(), profileInput(briefProfile)(t))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := collect(env.Stream(context.Background(), tc.in)); !errors.Is(err, contract.ErrUnsupported) {
				t.Errorf("err %v", err)
			}
			if srv.Requests() != 0 {
				t.Errorf("%d requests", srv.Requests())
			}
		})
	}
}

func profileInput(src string) func(t *testing.T) *contract.CreateInput {
	return func(t *testing.T) *contract.CreateInput {
		return &contract.CreateInput{Profile: profile.Ref{Inline: mustProfile(t, src)}}
	}
}
