package openai_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/chatprovider/chatprovidertest"
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

// endpoint is the provider over the recorded OpenAI-compatible endpoint,
// for the shared truthfulness suite.
func endpoint() chatprovidertest.Endpoint {
	return chatprovidertest.Endpoint{
		Provider: func(t *testing.T, name string, cycle bool) (contract.Provider, func() int) {
			srv := server(t, name, transcript.ServerOptions{Cycle: cycle})
			return provider(t, srv, true), srv.Requests
		},
		Profile: briefProfile,
		Transcripts: chatprovidertest.Transcripts{Text: "text", ServedOther: "served", UsageMissing: "nousage",
			InBandError: "inband_error", Dropped: "dropped", Hang: "hang", UnofferedTool: "tool_unoffered"},
		// The early-ending transcripts end before the usage chunk, the
		// only one carrying usage: PartialUsage nil, unknown.
		Want: chatprovidertest.Want{Text: "Hello!", InputTokens: 19, OutputTokens: 3, Served: "gpt-5.2", ServedOther: "gpt-5.2-mini",
			UnofferedTool: "send_greeting"},
		ErrStreamBroken: openai.ErrStreamBroken,
	}
}

// The truthfulness matrix over HTTP: exact usage and the served model,
// another served model reported, missing usage unknown, an in-band error
// failed, a dropped stream broken, a timeout and a cancellation.
func TestTruthfulness(t *testing.T) { chatprovidertest.Truthfulness(t, endpoint()) }

// The events of a text turn, in order, with the finish reason.
func TestStreamEventOrder(t *testing.T) {
	evs, err := streamTurn(t, "text")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if got, want := strings.Join(types, " "), "execution.started status message.part.updated message.part.updated usage done"; got != want {
		t.Fatalf("event types %s, want %s", got, want)
	}
	if done, _ := chatprovidertest.Terminal(t, evs); done.Data["finishReason"].Str() != "stop" {
		t.Errorf("finish reason %q", done.Data["finishReason"].Str())
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
	refusals := append(chatprovidertest.CommonRefusals(t),
		chatprovidertest.Refusal{Name: "reasoning effort", Profile: `{"harness":"cli-base","model":{"default":"openai/gpt-5.2","reasoningEffort":"high"}}`},
		chatprovidertest.Refusal{Name: "other harness", Profile: `{"harness":"codex","model":{"default":"openai/gpt-5.2"}}`},
		chatprovidertest.Refusal{Name: "reasoning token ceiling", Profile: `{"harness":"cli-base","model":{"default":"openai/gpt-5.2","maxReasoningTokens":100}}`},
		chatprovidertest.Refusal{Name: "env", Create: func(in *contract.CreateInput) { in.Env = map[string]string{"A": "b"} }},
	)
	chatprovidertest.RefusedBeforeDispatch(t, endpoint(), refusals)
}
