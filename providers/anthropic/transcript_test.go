package anthropic_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/providers/anthropic"
)

const (
	testKey   = "sk-ant-api03-test-0123456789abcdef"
	testModel = "claude-sonnet-4-5-20250929"
)

func str(s string) *string { return &s }

// hello is the conversation of most transcripts.
var hello = []contract.ChatMessage{
	{Role: contract.ChatSystem, Content: str("You are terse.")},
	{Role: contract.ChatUser, Content: str("Say hello.")},
}

func weatherTool(t testing.TB) contract.Tool {
	schema, err := canonjson.Decode([]byte(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return contract.Tool{Name: "weather", Description: "Current weather for a city", InputSchema: schema,
		Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
			return canonjson.Decode([]byte(`{"temp_c":18,"sky":"sunny"}`))
		}}
}

// serve starts the transcript testdata/name.txtar and returns a model
// talking to it.
func serve(t testing.TB, name string, opts anthropic.Options) (*anthropic.Model, *transcript.Server) {
	t.Helper()
	srv := transcript.Serve(t, filepath.Join("testdata", name+".txtar"), transcript.ServerOptions{
		Complete: true, Check: transcript.AnthropicHeaders(testKey, anthropic.APIVersion)})
	opts.BaseURL, opts.APIKey = srv.URL, testKey
	if opts.Model == "" {
		opts.Model = testModel
	}
	if opts.MaxTokens == 0 {
		opts.MaxTokens = 1024
	}
	m, err := anthropic.NewModel(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

// show writes an event as one line.
func show(e contract.ChatEvent) string {
	switch e.Kind {
	case contract.ChatText:
		return "text " + e.Text
	case contract.ChatToolCall:
		args := "<absent>"
		if e.ToolCall.Args.IsValid() {
			args = string(canonjson.Marshal(e.ToolCall.Args))
		}
		return fmt.Sprintf("call %s %s %s", e.ToolCall.ID, e.ToolCall.Name, args)
	case contract.ChatUsage:
		u := e.Usage
		opt := func(p *int64) string {
			if p == nil {
				return "?"
			}
			return fmt.Sprint(*p)
		}
		return fmt.Sprintf("usage %s in=%d out=%d cache_read=%s cache_write=%s reasoning=%s", e.UsageMode,
			u.InputTokens, u.OutputTokens, opt(u.CacheReadInputTokens), opt(u.CacheCreationInputTokens), opt(u.ReasoningTokens))
	case contract.ChatFailure:
		return "failure " + e.Failure
	case contract.ChatServed:
		return "served " + e.Model
	case contract.ChatRetry:
		r := e.Retry
		return fmt.Sprintf("retry attempt=%d delay=%v status=%d reason=%s", r.Attempt, r.Delay, r.Status, r.Reason)
	}
	return "unknown kind " + string(e.Kind)
}

// drain runs one turn and returns its events as lines and its error. The
// served-model report every successful message_start makes is checked
// to come first (after any retries) and to name the transcripts' model,
// then left out, so
// the expectations read as what the turn said and spent
// (TestServedModelReported covers another model).
func drain(ctx context.Context, m contract.ChatModel, msgs []contract.ChatMessage, tools []contract.Tool) ([]string, error) {
	var got []string
	retries := 0
	for e, err := range m.Turn(ctx, msgs, tools) {
		if err != nil {
			return got, err
		}
		if e.Kind == contract.ChatServed && len(got) == retries && e.Model == testModel {
			continue
		}
		if e.Kind == contract.ChatRetry && len(got) == retries {
			retries++
		}
		got = append(got, show(e))
	}
	return got, nil
}

// expect runs one turn that must end without error and checks its events.
func expect(t *testing.T, m contract.ChatModel, msgs []contract.ChatMessage, tools []contract.Tool, want []string) {
	t.Helper()
	got, err := drain(t.Context(), m, msgs, tools)
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, want)
}

func check(t *testing.T, got, want []string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestOneTurn plays the transcripts of one successful exchange: the
// turn's events are the transcript's, and the sequence ends without error.
func TestOneTurn(t *testing.T) {
	for _, c := range []struct {
		name, transcript string
		opts             anthropic.Options
		want             []string
	}{
		// input_tokens 25 excludes the cache: the prompt was 25 + 2048
		// read + 1200 written (spec runtime §2.1).
		{name: "text answer with cache usage", transcript: "text", want: []string{
			"usage cumulative in=3273 out=1 cache_read=2048 cache_write=1200 reasoning=?",
			"text Hello",
			"text , world.",
			"usage cumulative in=3273 out=6 cache_read=2048 cache_write=1200 reasoning=?",
		}},
		// No input_tokens anywhere: no usage event, so the turn's usage is
		// unknown rather than a zero input.
		{name: "missing usage is unknown", transcript: "usage_missing", want: []string{"text Hello."}},
		// Another served model is reported, not judged: the turn goes on.
		{name: "another served model is reported", transcript: "served_other", want: []string{
			"served claude-3-5-haiku-20241022",
			"usage cumulative in=25 out=1 cache_read=? cache_write=? reasoning=?",
			"text Hi from another model.",
			"usage cumulative in=25 out=7 cache_read=? cache_write=? reasoning=?",
		}},
		// An in-band error is a ChatFailure event, not a stream error.
		{name: "in-band error is a failure", transcript: "inband_error", want: []string{
			"usage cumulative in=25 out=1 cache_read=? cache_write=? reasoning=?",
			"text Hel",
			"failure overloaded_error: Overloaded",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _ := serve(t, c.transcript, c.opts)
			expect(t, m, hello, nil, c.want)
		})
	}
}

func TestToolUseThenAnswerFromToolResult(t *testing.T) {
	m, _ := serve(t, "tool_use", anthropic.Options{})
	tools := []contract.Tool{weatherTool(t)}
	msgs := []contract.ChatMessage{{Role: contract.ChatSystem, Content: str("")}, {Role: contract.ChatUser, Content: str("What is the weather in Paris?")}}
	expect(t, m, msgs, tools, []string{
		"usage cumulative in=412 out=2 cache_read=0 cache_write=0 reasoning=?",
		"text Let me check.",
		`call toolu_01A09q90qw90lq917835lq9 weather {"city":"Paris","unit":"celsius"}`,
		"usage cumulative in=412 out=58 cache_read=0 cache_write=0 reasoning=?",
	})
	args, _ := canonjson.Decode([]byte(`{"city":"Paris","unit":"celsius"}`))
	msgs = append(msgs,
		contract.ChatMessage{Role: contract.ChatAssistant, Content: str("Let me check."),
			ToolCalls: []contract.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "weather", Args: args}}},
		contract.ChatMessage{Role: contract.ChatTool, ToolCallID: "toolu_01A09q90qw90lq917835lq9", Content: str(`- weather → ok: {"temp_c":18,"sky":"sunny"}`)},
	)
	expect(t, m, msgs, tools, []string{
		"usage cumulative in=530 out=1 cache_read=424 cache_write=0 reasoning=?",
		"text It is 18°C and sunny",
		"text  in Paris.",
		"usage cumulative in=530 out=16 cache_read=424 cache_write=0 reasoning=?",
	})
}

// TestServedModelReported: message_start's model is the turn's first
// event, as reported (the kernel, not the model, judges it).
func TestServedModelReported(t *testing.T) {
	m, _ := serve(t, "served_other", anthropic.Options{})
	got, err := drain(t.Context(), m, hello, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0] != "served claude-3-5-haiku-20241022" {
		t.Errorf("events %q; want the served model first", got)
	}
}

// TestRefusals plays HTTP refusals before the stream: each ends the turn
// with the *APIError the transcript implies, after the requests the retry
// policy allows, and never with the key in its text.
func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name, transcript string
		opts             anthropic.Options
		backoff          time.Duration // the first retry's wait
		want             anthropic.APIError
	}{
		{name: "400 is not retried", transcript: "bad_request",
			want: anthropic.APIError{StatusCode: 400, Type: "invalid_request_error", Message: "max_tokens: Field required", RequestID: "req_011CVbad", Attempts: 1}},
		{name: "401 is not retried", transcript: "unauthorized",
			want: anthropic.APIError{StatusCode: 401, Type: "authentication_error", Message: "invalid x-api-key", RequestID: "req_011CVauth", Attempts: 1}},
		{name: "429 beyond the wait bound", transcript: "rate_limited_long",
			want: anthropic.APIError{StatusCode: 429, Type: "rate_limit_error", Message: "rate limited", Retryable: true, RetryAfter: 2 * time.Minute, Attempts: 1}},
		{name: "529 without retries", transcript: "overloaded", opts: anthropic.Options{MaxRetries: -1},
			want: anthropic.APIError{StatusCode: 529, Type: "overloaded_error", Message: "Overloaded", Retryable: true, Attempts: 1}},
		{name: "500 retried then given up", transcript: "server_error", opts: anthropic.Options{MaxRetries: 1, RetryBackoff: time.Millisecond}, backoff: time.Millisecond,
			want: anthropic.APIError{StatusCode: 500, Type: "api_error", Message: "Internal server error", Retryable: true, Attempts: 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, srv := serve(t, c.transcript, c.opts)
			got, err := drain(t.Context(), m, hello, nil)
			// Each retry is shown, and nothing else comes before the
			// refusal.
			var want []string
			for a := 2; a <= c.want.Attempts; a++ {
				want = append(want, fmt.Sprintf("retry attempt=%d delay=%v status=%d reason=HTTP %d %s (%s)",
					a, c.backoff<<(a-2), c.want.StatusCode, c.want.StatusCode, http.StatusText(c.want.StatusCode), c.want.Type))
			}
			check(t, got, want)
			var ae *anthropic.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v (%T), want *APIError", err, err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the error carries the API key: %v", err)
			}
			if diff := cmp.Diff(c.want, *ae); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if srv.Requests() != c.want.Attempts {
				t.Errorf("%d requests, want %d", srv.Requests(), c.want.Attempts)
			}
		})
	}
}

// A transient refusal is retried after the wait the server asked for;
// the retry is shown as an event, and only the accepted attempt's usage
// is reported.
func TestTransientRefusalRetried(t *testing.T) {
	for _, c := range []struct {
		transcript string
		wait       time.Duration
		retry      string
	}{
		{"rate_limited", time.Second, "retry attempt=2 delay=1s status=429 reason=HTTP 429 Too Many Requests (rate_limit_error)"},
		{"unavailable", 20 * time.Millisecond, "retry attempt=2 delay=20ms status=503 reason=HTTP 503 Service Unavailable (api_error)"},
	} {
		t.Run(c.transcript, func(t *testing.T) {
			m, srv := serve(t, c.transcript, anthropic.Options{})
			start := time.Now()
			got, err := drain(t.Context(), m, hello, nil)
			if err != nil {
				t.Fatal(err)
			}
			if waited := time.Since(start); waited < c.wait {
				t.Errorf("retried after %v; the server asked for %v", waited, c.wait)
			}
			check(t, got, []string{
				c.retry,
				"usage cumulative in=25 out=1 cache_read=0 cache_write=0 reasoning=?",
				"text Hello.",
				"usage cumulative in=25 out=4 cache_read=0 cache_write=0 reasoning=?",
			})
			if srv.Requests() != 2 {
				t.Errorf("%d requests, want 2", srv.Requests())
			}
		})
	}
}

func TestDroppedConnectionIsAnError(t *testing.T) {
	m, _ := serve(t, "dropped", anthropic.Options{})
	got, err := drain(t.Context(), m, hello, nil)
	if !errors.Is(err, anthropic.ErrStreamBroken) {
		t.Fatalf("err = %v, want ErrStreamBroken", err)
	}
	check(t, got, []string{"usage cumulative in=25 out=1 cache_read=? cache_write=? reasoning=?", "text Hello"})
}

func TestContextCancelEndsTheTurn(t *testing.T) {
	m, _ := serve(t, "hang", anthropic.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []string
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e, e2 := range m.Turn(ctx, hello, nil) {
			if e2 != nil {
				err = e2
				return
			}
			got = append(got, show(e))
			if e.Kind == contract.ChatText {
				cancel()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end after its context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want one wrapping context.Canceled", err)
	}
	check(t, got, []string{"served " + testModel, "usage cumulative in=25 out=1 cache_read=? cache_write=? reasoning=?", "text Thinking about it"})
}

func TestThinkingBlocksAreNotAnswerText(t *testing.T) {
	m, _ := serve(t, "thinking_tool", anthropic.Options{Effort: "medium", MaxTokens: 8192})
	tools := []contract.Tool{weatherTool(t)}
	msgs := []contract.ChatMessage{{Role: contract.ChatUser, Content: str("What is the weather in Paris?")}}
	expect(t, m, msgs, tools, []string{
		"usage cumulative in=420 out=4 cache_read=0 cache_write=0 reasoning=?",
		`call toolu_01Thk weather {"city":"Paris"}`,
		"usage cumulative in=420 out=61 cache_read=0 cache_write=0 reasoning=40",
	})
	args, _ := canonjson.Decode([]byte(`{"city":"Paris"}`))
	msgs = append(msgs,
		contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{ID: "toolu_01Thk", Name: "weather", Args: args}}},
		contract.ChatMessage{Role: contract.ChatTool, ToolCallID: "toolu_01Thk", Content: str("18C, sunny")},
	)
	expect(t, m, msgs, tools, []string{
		"usage cumulative in=530 out=3 cache_read=0 cache_write=0 reasoning=?",
		"text 18C and sunny.",
		"usage cumulative in=530 out=25 cache_read=0 cache_write=0 reasoning=12",
	})
	effort, applied, on := m.AppliedEffort()
	if effort != "medium" || applied != "medium" || !on {
		t.Errorf("AppliedEffort = %q %q %v", effort, applied, on)
	}
}

// A server that echoes the API key into an error never gets it into an
// error or an event.
func TestKeyNeverLeaks(t *testing.T) {
	echo := `{"type":"error","error":{"type":"authentication_error","message":"key ` + testKey + ` is revoked"}}`
	for _, c := range []struct {
		name string
		tp   *bodyTransport
	}{
		{"in-band", &bodyTransport{body: []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"" + testModel + "\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\nevent: error\ndata: " + echo + "\n\n")}},
		{"http", &bodyTransport{status: 401, body: []byte(echo)}},
	} {
		m := over(t, c.tp, anthropic.Options{})
		var seen []string
		for e, err := range m.Turn(t.Context(), hello, nil) {
			if err != nil {
				seen = append(seen, err.Error())
				var ae *anthropic.APIError
				if errors.As(err, &ae) {
					seen = append(seen, ae.Message)
				}
				continue
			}
			seen = append(seen, show(e))
		}
		joined := strings.Join(seen, "\n")
		if strings.Contains(joined, testKey) || !strings.Contains(joined, "[redacted]") {
			t.Errorf("%s: %s", c.name, joined)
		}
	}
}

func TestContextCancelDuringRetryWait(t *testing.T) {
	m, srv := serve(t, "rate_limited_cancel", anthropic.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := drain(ctx, m, hello, nil)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 900*time.Millisecond {
		t.Fatalf("err = %v after %v, want the context's deadline before the retry", err, time.Since(start))
	}
	if srv.Requests() != 1 {
		t.Errorf("%d requests, want 1", srv.Requests())
	}
}

// A response that never reaches message_stop, or that cannot be read, is
// an error, never an empty success.
func TestBrokenBodies(t *testing.T) {
	start := func(usage string) string {
		return "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"" + testModel + "\",\"usage\":" + usage + "}}\n\n"
	}
	stop := "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for name, body := range map[string]string{
		"empty":                "",
		"not an event stream":  `{"type":"message","content":[]}`,
		"no message_stop":      start(`{"input_tokens":1,"output_tokens":1}`),
		"no model":             "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n" + stop,
		"negative count":       start(`{"input_tokens":-1,"output_tokens":1}`) + stop,
		"count of wrong type":  start(`{"input_tokens":"many","output_tokens":1}`) + stop,
		"delta before start":   "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" + stop,
		"delta of no block":    start(`{}`) + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" + stop,
		"block left open":      start(`{}`) + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" + stop,
		"undecodable event":    start(`{}`) + "event: message_delta\ndata: {not json\n\n" + stop,
		"two message_start":    start(`{}`) + start(`{}`) + stop,
		"tool_use without id":  start(`{}`) + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"name\":\"weather\",\"input\":{}}}\n\n" + stop,
		"json delta into text": start(`{}`) + "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n" + stop,
	} {
		m := over(t, &bodyTransport{body: []byte(body)}, anthropic.Options{})
		if _, err := drain(t.Context(), m, hello, nil); !errors.Is(err, anthropic.ErrStreamBroken) {
			t.Errorf("%s: err = %v, want ErrStreamBroken", name, err)
		}
	}
}

// x-should-retry overrides the status's retryability, both ways.
func TestShouldRetryHeader(t *testing.T) {
	for _, c := range []struct {
		status    int
		header    string
		retryable bool
		attempts  int
	}{
		{429, "false", false, 1},
		{400, "true", true, 2},
	} {
		tp := &bodyTransport{status: c.status, header: http.Header{"X-Should-Retry": {c.header}},
			body: []byte(`{"type":"error","error":{"type":"x","message":"y"}}`)}
		m := over(t, tp, anthropic.Options{MaxRetries: 1, RetryBackoff: time.Millisecond})
		_, err := drain(t.Context(), m, hello, nil)
		var ae *anthropic.APIError
		if !errors.As(err, &ae) || ae.Retryable != c.retryable || ae.Attempts != c.attempts {
			t.Errorf("%d with x-should-retry %s: %+v", c.status, c.header, ae)
		}
	}
}

// A server that cannot be reached is an error that still matches the
// transport's own.
func TestUnreachable(t *testing.T) {
	refuse := errors.New("connection refused")
	m := over(t, roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, refuse }), anthropic.Options{})
	if _, err := drain(t.Context(), m, hello, nil); !errors.Is(err, refuse) || errors.Is(err, anthropic.ErrStreamBroken) {
		t.Errorf("err = %v, want one wrapping the transport's", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A response the API stopped with stop_reason refusal is a failure, not
// an answer.
func TestRefusalIsAFailure(t *testing.T) {
	body := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"" + testModel + "\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	m := over(t, &bodyTransport{body: []byte(body)}, anthropic.Options{})
	expect(t, m, hello, nil, []string{
		"usage cumulative in=9 out=1 cache_read=? cache_write=? reasoning=?",
		"usage cumulative in=9 out=2 cache_read=? cache_write=? reasoning=?",
		"failure refusal: the API stopped the response for policy reasons (stop_reason refusal)",
	})
}

// Many retries of a refusal without retry-after wait a doubling backoff
// that stops at MaxRetryWait: never a negative or overflowed wait.
func TestManyRetriesStayBounded(t *testing.T) {
	srv := transcript.Serve(t, filepath.Join("testdata", "server_error.txtar"), transcript.ServerOptions{
		Cycle: true, Check: transcript.AnthropicHeaders(testKey, anthropic.APIVersion)})
	m, err := anthropic.NewModel(anthropic.Options{BaseURL: srv.URL, APIKey: testKey, Model: testModel, MaxTokens: 1024,
		MaxRetries: 70, RetryBackoff: time.Microsecond, MaxRetryWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	retries := 0
	for e, err := range m.Turn(t.Context(), hello, nil) {
		if err != nil {
			if ae, ok := errors.AsType[*anthropic.APIError](err); !ok || ae.Attempts != 71 {
				t.Errorf("err %v; want the 71st refusal", err)
			}
			break
		}
		if e.Kind != contract.ChatRetry {
			t.Fatalf("event %+v", e)
		}
		// 1µs doubled passes 1ms after 10 doublings; from then on every
		// wait is the bound.
		if want := min(time.Microsecond<<min(retries, 20), time.Millisecond); e.Retry.Delay != want {
			t.Fatalf("retry %d waits %v, want %v", e.Retry.Attempt, e.Retry.Delay, want)
		}
		retries++
	}
	if retries != 70 {
		t.Errorf("%d retries, want 70", retries)
	}
}
