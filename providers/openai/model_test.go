package openai_test

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/openai"
)

// testKey is the key every transcript expects in its Authorization header.
const testKey = "sk-test-4f9c2a7b1e"

// replay starts a local endpoint playing testdata/name.txtar and returns
// it with a Model of gpt-5.2 over it.
func replay(t testing.TB, name string, opts openai.Options) (*transcript.Server, *openai.Model) {
	t.Helper()
	srv := server(t, name, transcript.ServerOptions{})
	opts.BaseURL, opts.APIKey = srv.BaseURL(), testKey
	if opts.Model == "" {
		opts.Model = "gpt-5.2"
	}
	m, err := openai.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, m
}

func server(t testing.TB, name string, so transcript.ServerOptions) *transcript.Server {
	t.Helper()
	tr, err := transcript.Load(filepath.Join("testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return transcript.NewServer(t, tr, so)
}

func str(s string) *string { return &s }

// hello is the transcript most transcripts expect.
func hello() []contract.ChatMessage {
	return []contract.ChatMessage{{Role: contract.ChatSystem, Content: str("Be brief.")}, {Role: contract.ChatUser, Content: str("Say hello.")}}
}

// collect ranges over a turn's sequence: its items up to the first
// error, and that error.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var evs []T
	for e, err := range seq {
		if err != nil {
			return evs, err
		}
		evs = append(evs, e)
	}
	return evs, nil
}

func text(evs []contract.ChatEvent) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Kind == contract.ChatText {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func usages(evs []contract.ChatEvent) []contract.ChatEvent {
	var out []contract.ChatEvent
	for _, e := range evs {
		if e.Kind == contract.ChatUsage {
			out = append(out, e)
		}
	}
	return out
}

func i64(n int64) *int64 { return &n }

// reports records the TurnReports of a Model.
type reports struct {
	mu  sync.Mutex
	all []openai.TurnReport
}

func (r *reports) observe(rep openai.TurnReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rep)
}

func (r *reports) last(t *testing.T) openai.TurnReport {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		t.Fatal("no turn was reported")
	}
	return r.all[len(r.all)-1]
}

// play runs one turn of hello() over transcript name and returns its
// events, the turn's report, the endpoint and its stream error.
func play(t *testing.T, name string, opts openai.Options) ([]contract.ChatEvent, openai.TurnReport, *transcript.Server, error) {
	t.Helper()
	var reps reports
	opts.Observe = reps.observe
	srv, m := replay(t, name, opts)
	evs, err := collect(m.Turn(context.Background(), hello(), nil))
	return evs, reps.last(t), srv, err
}

func TestTextWithUsage(t *testing.T) {
	evs, rep, srv, err := play(t, "text", openai.Options{})
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
	if evs[len(evs)-1].Kind != contract.ChatUsage {
		t.Errorf("the usage chunk is the last event; got %v", evs[len(evs)-1].Kind)
	}
	if rep.RequestedModel != "gpt-5.2" || rep.ServedModel != "gpt-5.2" || rep.FinishReason != "stop" || rep.ResponseID != "chatcmpl-BjT1" || rep.Usage == nil || rep.Err != nil {
		t.Errorf("report %+v", rep)
	}
	if !srv.Served() {
		t.Error("the transcript was not served")
	}
}

// weather is the tool of the tool-call transcript.
func weather() contract.Tool {
	schema, _ := canonjson.Decode([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	return contract.Tool{Name: "get_weather", Description: "Current weather for a city.", InputSchema: schema,
		Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
			return canonjson.Decode([]byte(`{"celsius":4,"sky":"rain"}`))
		}}
}

// A tool call streamed in pieces goes into the kernel's loop whole, and
// its result goes back in the next request (a tool message for Chat
// Completions, a function_call_output item after the function_call item
// for Responses); both transcripts answer with the same text and usage.
func TestToolCallRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		api        openai.API
		transcript string
	}{{openai.APIChatCompletions, "toolcall"}, {openai.APIResponses, "responses/toolcall"}} {
		t.Run(string(tc.api), func(t *testing.T) {
			srv, m := replay(t, tc.transcript, openai.Options{API: tc.api})
			tools := []contract.Tool{weather()}
			msgs := []contract.ChatMessage{{Role: contract.ChatSystem, Content: str("Use the tools.")}, {Role: contract.ChatUser, Content: str("What is the weather in Oslo?")}}
			evs, err := collect(m.Turn(context.Background(), msgs, tools))
			if err != nil {
				t.Fatal(err)
			}
			var calls []contract.ToolCall
			for _, e := range evs {
				if e.Kind == contract.ChatToolCall {
					calls = append(calls, e.ToolCall)
				}
			}
			if len(calls) != 1 || calls[0].ID != "call_Qx7aLm" || calls[0].Name != "get_weather" || string(canonjson.Marshal(calls[0].Args)) != `{"city":"Oslo"}` {
				t.Fatalf("calls %+v", calls)
			}
			if text(evs) != "" {
				t.Errorf("text %q", text(evs))
			}
			if u := usages(evs); len(u) != 1 || u[0].Usage.InputTokens != 61 || u[0].Usage.OutputTokens != 17 {
				t.Errorf("usage %+v", u)
			}
			out := "- get_weather → ok: {\"celsius\":4,\"sky\":\"rain\"}"
			msgs = append(msgs, contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: calls},
				contract.ChatMessage{Role: contract.ChatTool, Content: &out, ToolCallID: calls[0].ID})
			evs, err = collect(m.Turn(context.Background(), msgs, tools))
			if err != nil {
				t.Fatal(err)
			}
			if got := text(evs); got != "Rain in Oslo, 4 °C." {
				t.Errorf("answer %q", got)
			}
			if u := usages(evs); len(u) != 1 || u[0].Usage.CacheReadInputTokens == nil || *u[0].Usage.CacheReadInputTokens != 64 {
				t.Errorf("usage %+v", u)
			}
			if !srv.Served() {
				t.Error("the transcript was not served")
			}
		})
	}
}

func TestNoUsageChunkIsUnknown(t *testing.T) {
	evs, rep, _, err := play(t, "nousage", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if text(evs) != "Hello!" {
		t.Errorf("text %q", text(evs))
	}
	if u := usages(evs); len(u) != 0 {
		t.Errorf("a stream without a usage chunk reported usage %+v", u)
	}
	if rep.Usage != nil {
		t.Errorf("unknown usage reported as %+v", rep.Usage)
	}
}

func TestServedModelReadBack(t *testing.T) {
	evs, rep, _, err := play(t, "served", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.RequestedModel != "gpt-5.2" || rep.ServedModel != "gpt-5.2-mini" {
		t.Errorf("requested %q served %q", rep.RequestedModel, rep.ServedModel)
	}
	// The turn reports it, once and first, for the kernel to judge.
	var served []string
	for _, e := range evs {
		if e.Kind == contract.ChatServed {
			served = append(served, e.Model)
		}
	}
	if len(evs) == 0 || evs[0].Kind != contract.ChatServed || len(served) != 1 || served[0] != "gpt-5.2-mini" {
		t.Errorf("served events %q (first event %+v)", served, evs[0])
	}
}

func TestInBandErrorIsAFailure(t *testing.T) {
	evs, _, _, err := play(t, "inband_error", openai.Options{})
	if err != nil {
		t.Fatalf("an in-band error is an event, not a stream error: %v", err)
	}
	last := evs[len(evs)-1]
	if last.Kind != contract.ChatFailure || !strings.Contains(last.Failure, "server had an error") || !strings.Contains(last.Failure, "server_error") {
		t.Errorf("last event %+v", last)
	}
	if text(evs) != "Hel" {
		t.Errorf("text before the failure %q", text(evs))
	}
}

func TestUnauthorized(t *testing.T) {
	_, _, srv, err := play(t, "unauthorized", openai.Options{})
	apiErr, ok := errors.AsType[*openai.APIError](err)
	if !ok {
		t.Fatalf("err %v is not an *APIError", err)
	}
	if apiErr.StatusCode != http.StatusUnauthorized || apiErr.Retryable || apiErr.Code != "invalid_api_key" {
		t.Errorf("%+v", apiErr)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "Incorrect API key") || apiErr.Message != "" {
		t.Errorf("the error exposes the key or the endpoint's message about it: %q", err)
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests: a 401 is not retried", srv.Requests())
	}
}

func TestRateLimitRetriedAfterRetryAfter(t *testing.T) {
	start := time.Now()
	evs, _, srv, err := play(t, "ratelimit", openai.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < time.Second {
		t.Errorf("retried after %v, before the endpoint's Retry-After of 1s", elapsed)
	}
	if text(evs) != "Hello!" || srv.Requests() != 2 {
		t.Errorf("text %q after %d requests", text(evs), srv.Requests())
	}
}

// A Retry-After beyond MaxRetryWait is not waited for: the 429 comes back
// as data the caller can schedule with.
func TestRateLimitBeyondBound(t *testing.T) {
	_, _, srv, err := play(t, "ratelimit", openai.Options{MaxRetryWait: 100 * time.Millisecond})
	apiErr, ok := errors.AsType[*openai.APIError](err)
	if !ok || apiErr.StatusCode != http.StatusTooManyRequests || !apiErr.Retryable || apiErr.RetryAfter != time.Second || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("err %v (%+v)", err, apiErr)
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests", srv.Requests())
	}
}

func TestServerError(t *testing.T) {
	_, _, _, err := play(t, "server_error", openai.Options{MaxRetries: -1})
	apiErr, ok := errors.AsType[*openai.APIError](err)
	if !ok || apiErr.StatusCode != http.StatusInternalServerError || !apiErr.Retryable || apiErr.Type != "server_error" {
		t.Fatalf("err %v (%+v)", err, apiErr)
	}
}

func TestDroppedConnectionIsNotSuccess(t *testing.T) {
	evs, rep, _, err := play(t, "dropped", openai.Options{})
	if !errors.Is(err, openai.ErrStreamBroken) {
		t.Fatalf("err %v, want ErrStreamBroken", err)
	}
	if text(evs) != "Hello" {
		t.Errorf("text before the drop %q", text(evs))
	}
	if rep.Usage != nil || rep.Err == nil {
		t.Errorf("report %+v", rep)
	}
}

func TestContextCancel(t *testing.T) {
	_, m := replay(t, "hang", openai.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var err error
		for e, e2 := range m.Turn(ctx, hello(), nil) {
			if e2 != nil {
				err = e2
				break
			}
			if e.Kind == contract.ChatText {
				cancel()
			}
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err %v does not wrap context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the turn did not end after its context was cancelled")
	}
}

func TestCancelledBeforeRequest(t *testing.T) {
	srv, m := replay(t, "text", openai.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := collect(m.Turn(ctx, hello(), nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	if srv.Requests() != 0 {
		t.Errorf("%d requests after cancellation", srv.Requests())
	}
}

// Harness cli-base expresses reasoning effort none only, with no native
// control: "none" is accepted and sends nothing (the text transcript has
// no reasoning_effort), anything else is refused before a request.
func TestReasoningEffortPerHarnessTable(t *testing.T) {
	if _, ok := harness.NativeReasoningControl(harness.CLIBase, harness.EffortNone); ok {
		t.Skip("the harness table now has a native control for cli-base; extend the transcript")
	}
	if _, _, _, err := play(t, "text", openai.Options{ReasoningEffort: harness.EffortNone}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []harness.ReasoningEffort{harness.EffortLow, harness.EffortHigh, "bogus"} {
		if _, err := openai.New(openai.Options{ReasoningEffort: e}); !errors.Is(err, contract.ErrUnsupported) || !errors.Is(err, openai.ErrInvalidOptions) {
			t.Errorf("effort %s: %v", e, err)
		}
	}
}

func TestNoModelFailsBeforeRequest(t *testing.T) {
	srv := server(t, "text", transcript.ServerOptions{})
	m, err := openai.New(openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m.Turn(context.Background(), hello(), nil)); !errors.Is(err, openai.ErrNoModel) {
		t.Errorf("err %v", err)
	}
	if srv.Requests() != 0 {
		t.Errorf("%d requests", srv.Requests())
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []openai.Options{{BaseURL: "ftp://example.com"}, {BaseURL: "/v1"}, {MaxCompletionTokens: i64(0)}} {
		if _, err := openai.New(o); !errors.Is(err, openai.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
