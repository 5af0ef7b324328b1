package openai_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/chatprovider/chatprovidertest"
	"github.com/agentrt/agentrt/providers/openai"
)

// The Responses API's evidence: the transcripts of testdata/responses,
// replayed by the shared test endpoint, over Options.API responses.

// resp is the path of a Responses transcript under testdata.
func resp(name string) string { return "responses/" + name }

// playResponses runs one turn of hello() over the Responses transcript
// name, as play does for Chat Completions.
func playResponses(t *testing.T, name string, opts openai.Options) ([]contract.ChatEvent, openai.TurnReport, *transcript.Server, error) {
	t.Helper()
	opts.API = openai.APIResponses
	return play(t, resp(name), opts)
}

func TestResponsesTextWithUsage(t *testing.T) {
	evs, rep, srv, err := playResponses(t, "text", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(evs); got != "Hello!" {
		t.Errorf("text %q", got)
	}
	want := &contract.TokenUsage{InputTokens: 19, OutputTokens: 3, TotalTokens: i64(22), CacheReadInputTokens: i64(0), ReasoningTokens: i64(0)}
	u := usages(evs)
	if len(u) != 1 || u[0].UsageMode != contract.UsageCumulative {
		t.Fatalf("usage events %+v", u)
	}
	if d := cmp.Diff(want, u[0].Usage); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
	if evs[0].Kind != contract.ChatServed || evs[0].Model != "gpt-5.2" || evs[len(evs)-1].Kind != contract.ChatUsage {
		t.Errorf("first event %+v, last %+v: served first, usage last", evs[0], evs[len(evs)-1])
	}
	if rep.RequestedModel != "gpt-5.2" || rep.ServedModel != "gpt-5.2" || rep.FinishReason != "completed" || rep.ResponseID != "resp_Tx01" || rep.Usage == nil || rep.Err != nil {
		t.Errorf("report %+v", rep)
	}
	if !srv.Served() {
		t.Error("the transcript was not served")
	}
}

func TestResponsesCachedAndReasoningTokens(t *testing.T) {
	evs, _, _, err := playResponses(t, "reasoning", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := &contract.TokenUsage{InputTokens: 2077, OutputTokens: 139, TotalTokens: i64(2216), CacheReadInputTokens: i64(2048), ReasoningTokens: i64(128)}
	if u := usages(evs); len(u) != 1 || !cmp.Equal(want, u[0].Usage) {
		t.Errorf("usage %+v, want %+v", u, want)
	}
	if text(evs) != "Hello!" {
		t.Errorf("text %q: a reasoning item carries no text", text(evs))
	}
}

// A response completed without usage leaves the turn's usage unknown.
func TestResponsesUsageMissingIsUnknown(t *testing.T) {
	evs, rep, _, err := playResponses(t, "nousage", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if u := usages(evs); len(u) != 0 || rep.Usage != nil {
		t.Errorf("missing usage reported as %+v / %+v", u, rep.Usage)
	}
}

// A rate-limited retry's usage without the details objects leaves the
// cache and reasoning counts unknown, not 0.
func TestResponsesRateLimitRetriedAfterRetryAfter(t *testing.T) {
	start := time.Now()
	evs, _, srv, err := playResponses(t, "ratelimit", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("retried after %v, before the endpoint's Retry-After of 1s", elapsed)
	}
	if text(evs) != "Hello!" || srv.Requests() != 2 {
		t.Errorf("text %q after %d requests", text(evs), srv.Requests())
	}
	want := &contract.TokenUsage{InputTokens: 19, OutputTokens: 2, TotalTokens: i64(21)}
	if u := usages(evs); len(u) != 1 || !cmp.Equal(want, u[0].Usage) {
		t.Errorf("usage %+v", u)
	}
}

func TestResponsesRateLimitBeyondBound(t *testing.T) {
	_, _, srv, err := playResponses(t, "ratelimit", openai.Options{MaxRetryWait: 100 * time.Millisecond})
	apiErr, ok := errors.AsType[*openai.APIError](err)
	if !ok || apiErr.StatusCode != http.StatusTooManyRequests || !apiErr.Retryable || apiErr.RetryAfter != time.Second {
		t.Fatalf("err %v (%+v)", err, apiErr)
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests", srv.Requests())
	}
}

func TestResponsesServedModelReadBack(t *testing.T) {
	evs, rep, _, err := playResponses(t, "served", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, e := range evs {
		if e.Kind == contract.ChatServed {
			served = append(served, e.Model)
		}
	}
	if rep.ServedModel != "gpt-5.2-mini" || len(served) != 1 || served[0] != "gpt-5.2-mini" || evs[0].Kind != contract.ChatServed {
		t.Errorf("report %q, served events %q", rep.ServedModel, served)
	}
}

// failureOf is the turn's last event, which must be its failure.
func failureOf(t *testing.T, evs []contract.ChatEvent, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("an in-band failure is an event, not a stream error: %v", err)
	}
	if len(evs) == 0 || evs[len(evs)-1].Kind != contract.ChatFailure {
		t.Fatalf("events %+v do not end in a failure", evs)
	}
	return evs[len(evs)-1].Failure
}

func TestResponsesFailedIsAFailure(t *testing.T) {
	evs, rep, _, err := playResponses(t, "inband_error", openai.Options{})
	if f := failureOf(t, evs, err); !strings.Contains(f, "server had an error") || !strings.Contains(f, "server_error") {
		t.Errorf("failure %q", f)
	}
	if text(evs) != "Hel" || rep.FinishReason != "failed" {
		t.Errorf("text %q, finish %q", text(evs), rep.FinishReason)
	}
}

func TestResponsesErrorEventIsAFailureWithoutTheKey(t *testing.T) {
	evs, _, _, err := playResponses(t, "error_event", openai.Options{})
	f := failureOf(t, evs, err)
	if !strings.Contains(f, "exceeds the context window") || !strings.Contains(f, "context_length_exceeded") || strings.Contains(f, testKey) {
		t.Errorf("failure %q", f)
	}
}

// An output ceiling that cuts the answer is a failure naming the reason,
// not a short success; the tokens spent are still reported.
func TestResponsesIncompleteIsAFailure(t *testing.T) {
	evs, rep, _, err := playResponses(t, "incomplete", openai.Options{MaxCompletionTokens: i64(16)})
	if f := failureOf(t, evs, err); !strings.Contains(f, "incomplete") || !strings.Contains(f, "max_output_tokens") {
		t.Errorf("failure %q", f)
	}
	if u := usages(evs); len(u) != 1 || u[0].Usage.OutputTokens != 16 {
		t.Errorf("usage %+v", u)
	}
	if rep.FinishReason != "incomplete" {
		t.Errorf("finish %q", rep.FinishReason)
	}
}

func TestResponsesDroppedIsNotSuccess(t *testing.T) {
	evs, rep, _, err := playResponses(t, "dropped", openai.Options{})
	if !errors.Is(err, openai.ErrStreamBroken) {
		t.Fatalf("err %v, want ErrStreamBroken", err)
	}
	if text(evs) != "Hello" || rep.Usage != nil || rep.Err == nil {
		t.Errorf("text %q, report %+v", text(evs), rep)
	}
}

func TestResponsesUnauthorizedKeyNeverLogged(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, _, srv, err := playResponses(t, "unauthorized", openai.Options{Logger: log})
	apiErr, ok := errors.AsType[*openai.APIError](err)
	if !ok || apiErr.StatusCode != http.StatusUnauthorized || apiErr.Retryable || apiErr.Code != "invalid_api_key" || apiErr.Message != "" {
		t.Fatalf("err %v (%+v)", err, apiErr)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "Incorrect API key") {
		t.Errorf("the error exposes the key or the endpoint's message about it: %q", err)
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests: a 401 is not retried", srv.Requests())
	}
	if !strings.Contains(logs.String(), "path=/v1/responses") || !strings.Contains(logs.String(), "status=401") {
		t.Errorf("the attempt was not logged: %q", logs.String())
	}
	if strings.Contains(logs.String(), testKey) || strings.Contains(logs.String(), "Bearer") {
		t.Errorf("the log carries the key:\n%s", logs.String())
	}
}

// Transcripts and tools the Responses API cannot be sent are refused
// before any request.
func TestResponsesBadTranscript(t *testing.T) {
	for name, msgs := range map[string][]contract.ChatMessage{
		"tool result without call id": {{Role: contract.ChatUser, Content: str("x")}, {Role: contract.ChatTool, Content: str("r")}},
		"tool call without id":        {{Role: contract.ChatUser, Content: str("x")}, {Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{Name: "f"}}}},
		"unknown role":                {{Role: "narrator", Content: str("x")}},
	} {
		srv, m := replay(t, resp("text"), openai.Options{API: openai.APIResponses})
		if _, err := collect(m.Turn(context.Background(), msgs, nil)); !errors.Is(err, openai.ErrBadTranscript) {
			t.Errorf("%s: err %v", name, err)
		}
		if srv.Requests() != 0 {
			t.Errorf("%s: %d requests", name, srv.Requests())
		}
	}
}

func TestInvalidAPI(t *testing.T) {
	if _, err := openai.New(openai.Options{API: "completions"}); !errors.Is(err, openai.ErrInvalidOptions) {
		t.Errorf("err %v", err)
	}
}

// responsesProvider is provider over srv speaking the Responses API.
func responsesProvider(t testing.TB, srv *transcript.Server, reportsUsage bool) *openai.Provider {
	t.Helper()
	p, err := openai.NewProvider(openai.ProviderOptions{
		Options:      openai.Options{API: openai.APIResponses, BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"},
		ReportsUsage: reportsUsage, StripModelPrefix: "openai/",
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResponsesConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) contract.Provider {
		return responsesProvider(t, server(t, resp("conformance"), transcript.ServerOptions{Cycle: true}), true)
	}, providertest.Options{})
}

// responsesEndpoint is the provider over the recorded Responses
// endpoint, for the shared truthfulness suite.
func responsesEndpoint() chatprovidertest.Endpoint {
	e := endpoint()
	e.Provider = func(t *testing.T, name string, cycle bool) (contract.Provider, func() int) {
		srv := server(t, name, transcript.ServerOptions{Cycle: cycle})
		return responsesProvider(t, srv, true), srv.Requests
	}
	e.Transcripts = chatprovidertest.Transcripts{Text: resp("text"), ServedOther: resp("served"), UsageMissing: resp("nousage"),
		InBandError: resp("inband_error"), Dropped: resp("dropped"), Hang: resp("hang"), UnofferedTool: resp("tool_unoffered")}
	return e
}

func TestResponsesTruthfulness(t *testing.T) { chatprovidertest.Truthfulness(t, responsesEndpoint()) }

func TestResponsesRefusedBeforeDispatch(t *testing.T) {
	refusals := append(chatprovidertest.CommonRefusals(t),
		chatprovidertest.Refusal{Name: "reasoning effort", Profile: `{"harness":"cli-base","model":{"default":"openai/gpt-5.2","reasoningEffort":"high"}}`},
		chatprovidertest.Refusal{Name: "other harness", Profile: `{"harness":"codex","model":{"default":"openai/gpt-5.2"}}`},
		chatprovidertest.Refusal{Name: "reasoning token ceiling", Profile: `{"harness":"cli-base","model":{"default":"openai/gpt-5.2","maxReasoningTokens":100}}`},
	)
	chatprovidertest.RefusedBeforeDispatch(t, responsesEndpoint(), refusals)
}

// The provider's events of a Responses text turn, in order, with the
// response's status as the finish reason.
func TestResponsesStreamEventOrder(t *testing.T) {
	p := responsesProvider(t, server(t, resp("text"), transcript.ServerOptions{}), true)
	env, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: mustProfile(t, briefProfile)}})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := collect(env.Stream(context.Background(), &contract.TurnInput{Prompt: str("Say hello.")}))
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
	done, _ := chatprovidertest.Terminal(t, evs)
	if done.Data["finishReason"].Str() != "completed" {
		t.Errorf("finish reason %q", done.Data["finishReason"].Str())
	}
}

// Harness cli-base expresses reasoning effort none only, with no native
// control: over the Responses API too, "none" sends no reasoning object
// (the text transcript has none) and anything else is refused before a
// request.
func TestResponsesReasoningEffortPerHarnessTable(t *testing.T) {
	if _, ok := harness.NativeReasoningControl(harness.CLIBase, harness.EffortNone); ok {
		t.Skip("the harness table now has a native control for cli-base; extend the transcript")
	}
	if _, _, _, err := playResponses(t, "text", openai.Options{ReasoningEffort: harness.EffortNone}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []harness.ReasoningEffort{harness.EffortLow, harness.EffortHigh, "bogus"} {
		if _, err := openai.New(openai.Options{API: openai.APIResponses, ReasoningEffort: e}); !errors.Is(err, contract.ErrUnsupported) || !errors.Is(err, openai.ErrInvalidOptions) {
			t.Errorf("effort %s: %v", e, err)
		}
	}
}
