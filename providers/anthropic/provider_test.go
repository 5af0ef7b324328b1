package anthropic_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/chatprovider/chatprovidertest"
)

// terseProfile asks for the transcripts' model with the system prompt
// they expect.
const terseProfile = `{"name":"terse","harness":"cli-base","model":{"provider":"anthropic","default":"anthropic/claude-sonnet-4-5-20250929"},"prompt":{"systemPrompt":"You are terse."}}`

// newProvider returns a provider over baseURL whose default model is the
// test model, with max_tokens 1024. It names no model prefix: sending a
// profile's "anthropic/…" model as the bare id the transcripts expect is
// the provider's own default.
func newProvider(t testing.TB, baseURL string, hc *http.Client) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.NewProvider(anthropic.ProviderOptions{
		Options: anthropic.Options{BaseURL: baseURL, APIKey: testKey, HTTPClient: hc, Model: testModel, MaxTokens: 1024},
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

func profileInput(t testing.TB, src string) *contract.CreateInput {
	return &contract.CreateInput{Profile: profile.Ref{Inline: chatprovidertest.MustProfile(t, src)}}
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
	return providertest.Collect(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Say hello.")}))
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
	want := "execution.started status usage message.part.updated message.part.updated usage done"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("event types %s, want %s", got, want)
	}
	if usage == nil || usage.InputTokens != 25+2048+1200 || usage.OutputTokens != 6 ||
		usage.CacheReadInputTokens == nil || *usage.CacheReadInputTokens != 2048 ||
		usage.CacheCreationInputTokens == nil || *usage.CacheCreationInputTokens != 1200 || usage.ReasoningTokens != nil {
		t.Errorf("usage %+v", usage)
	}
	done, kind := chatprovidertest.Terminal(t, evs)
	if kind != contract.TerminalCompleted || done.Data["text"].Str() != "Hello, world." || chatprovidertest.ServedModel(done) != testModel {
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
	if done, kind := chatprovidertest.Terminal(t, evs); kind != contract.TerminalCompleted || done.Data["text"].Str() != "Hello." {
		t.Errorf("terminal %v %s", kind, done.Type)
	}
}

// endpoint is the provider over the recorded Messages API, for the
// shared truthfulness suite.
func endpoint() chatprovidertest.Endpoint {
	return chatprovidertest.Endpoint{
		Provider: func(t *testing.T, name string, cycle bool) (contract.Provider, func() int) {
			srv := transcriptServer(t, name, cycle)
			return newProvider(t, srv.URL, nil), srv.Requests
		},
		Profile: terseProfile,
		Transcripts: chatprovidertest.Transcripts{Text: "text", ServedOther: "served_other", UsageMissing: "usage_missing",
			InBandError: "inband_error", Dropped: "dropped", Hang: "hang", UnofferedTool: "tool_unoffered"},
		Want: chatprovidertest.Want{Text: "Hello, world.", InputTokens: 25 + 2048 + 1200, OutputTokens: 6,
			Served: "claude-sonnet-4-5-20250929", ServedOther: "claude-3-5-haiku-20241022",
			// message_start of the early-ending transcripts reports the
			// input side and the first output token.
			PartialUsage: &contract.TokenUsage{InputTokens: 25, OutputTokens: 1}, UnofferedTool: "send_greeting"},
		ErrStreamBroken: anthropic.ErrStreamBroken,
	}
}

// The truthfulness matrix over HTTP: exact usage and the served model,
// another served model reported, missing usage unknown, an in-band error
// failed, a dropped stream broken, a timeout and a cancellation.
func TestProviderTruthfulness(t *testing.T) { chatprovidertest.Truthfulness(t, endpoint()) }

// Refusals come before any request: the server sees nothing.
func TestProviderRefusedBeforeDispatch(t *testing.T) {
	effort := func(want bool) func(t *testing.T, err error) {
		return func(t *testing.T, err error) {
			if _, ok := errors.AsType[*anthropic.EffortError](err); ok != want {
				t.Errorf("*EffortError %v, want %v: %v", ok, want, err)
			}
		}
	}
	x := "x"
	refusals := append(chatprovidertest.CommonRefusals(t),
		chatprovidertest.Refusal{Name: "effort off the API's ladder", Profile: `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","reasoningEffort":"minimal"}}`, Check: effort(true)},
		chatprovidertest.Refusal{Name: "effort budget above max_tokens", Profile: `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","reasoningEffort":"high"}}`, Check: effort(true)},
		chatprovidertest.Refusal{Name: "reasoning token ceiling", Profile: `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","maxReasoningTokens":100}}`, Check: effort(false)},
		chatprovidertest.Refusal{Name: "visible token ceiling", Profile: `{"harness":"cli-base","model":{"default":"anthropic/claude-sonnet-4-5-20250929","maxVisibleOutputTokens":100}}`, Check: effort(false)},
		chatprovidertest.Refusal{Name: "other harness", Profile: `{"harness":"claude-code"}`, Check: effort(false)},
		chatprovidertest.Refusal{Name: "turn profile with an effort the API cannot express", Turn: &contract.TurnInput{Prompt: &x, Profile: chatprovidertest.MustProfile(t, `{"model":{"reasoningEffort":"minimal"}}`)}},
	)
	chatprovidertest.RefusedBeforeDispatch(t, endpoint(), refusals)
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
		if _, err := providertest.Collect(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("x")})); !errors.Is(err, contract.ErrUnsupported) {
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
		evs, err := providertest.Collect(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Say hello.")}))
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

// sentModel is a transport that records the model of the one request it
// receives and answers nothing.
type sentModel struct{ model string }

var errNotSent = errors.New("not sent")

func (s *sentModel) RoundTrip(req *http.Request) (*http.Response, error) {
	var body struct {
		Model string `json:"model"`
	}
	if err := json.NewDecoder(req.Body).Decode(&body); err != nil {
		return nil, err
	}
	s.model = body.Model
	return nil, errNotSent
}

// The "anthropic/" prefix goes by default; KeepModelPrefix sends the
// profile's model as it is.
func TestModelPrefix(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep bool
		want string
	}{
		{"stripped by default", false, testModel},
		{"kept when asked", true, anthropic.ModelPrefix + testModel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &sentModel{}
			p, err := anthropic.NewProvider(anthropic.ProviderOptions{
				Options:         anthropic.Options{APIKey: testKey, HTTPClient: &http.Client{Transport: rt}, MaxTokens: 1024, MaxRetries: -1},
				KeepModelPrefix: tc.keep,
			})
			if err != nil {
				t.Fatal(err)
			}
			env, err := p.Create(t.Context(), profileInput(t, terseProfile))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := providertest.Collect(env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Say hello.")})); err == nil {
				t.Fatal("a turn whose request was never answered succeeded")
			}
			if rt.model != tc.want {
				t.Errorf("sent model %q, want %q", rt.model, tc.want)
			}
		})
	}
}
