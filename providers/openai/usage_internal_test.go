package openai

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
)

// lastUsage runs decoder d over body as a 200 stream and returns the last
// usage it reported (nil: none).
func lastUsage(t *testing.T, d eventDecoder, body string) *contract.TokenUsage {
	t.Helper()
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
	var u *contract.TokenUsage
	err := runStream(context.Background(), res, d, func(e contract.ChatEvent, err error) bool {
		if err == nil && e.Kind == contract.ChatUsage {
			u = e.Usage
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Spec runtime §2.1, the rule every provider follows: InputTokens is the
// whole prompt — prompt_tokens and input_tokens already count the cached
// tokens — with the cache reads broken out beside it. Neither API
// reports cache writes, so CacheCreationInputTokens stays nil, and a
// cached_tokens the endpoint did not send stays nil too: unknown, not 0.
func TestCachedInputTokensAreBrokenOutOfTheWholePrompt(t *testing.T) {
	p := func(n int64) *int64 { return &n }
	for _, c := range []struct {
		name, chat, responses string
		want                  *contract.TokenUsage
	}{
		{"cache read", `{"prompt_tokens":2077,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":2048}}`,
			`{"input_tokens":2077,"output_tokens":9,"input_tokens_details":{"cached_tokens":2048}}`,
			&contract.TokenUsage{InputTokens: 2077, OutputTokens: 9, CacheReadInputTokens: p(2048)}},
		{"no cache read", `{"prompt_tokens":29,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":0}}`,
			`{"input_tokens":29,"output_tokens":9,"input_tokens_details":{"cached_tokens":0}}`,
			&contract.TokenUsage{InputTokens: 29, OutputTokens: 9, CacheReadInputTokens: p(0)}},
		{"no details", `{"prompt_tokens":29,"completion_tokens":9}`,
			`{"input_tokens":29,"output_tokens":9}`,
			&contract.TokenUsage{InputTokens: 29, OutputTokens: 9}},
		{"details without the count", `{"prompt_tokens":29,"completion_tokens":9,"prompt_tokens_details":{"audio_tokens":0}}`,
			`{"input_tokens":29,"output_tokens":9,"input_tokens_details":{}}`,
			&contract.TokenUsage{InputTokens: 29, OutputTokens: 9}},
	} {
		t.Run("chat-completions/"+c.name, func(t *testing.T) {
			body := `data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"id":"c","model":"m","choices":[],"usage":` + c.chat + "}\n\n" + "data: [DONE]\n\n"
			if d := cmp.Diff(c.want, lastUsage(t, newChatState(""), body)); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
		t.Run("responses/"+c.name, func(t *testing.T) {
			body := sse(`{"type":"response.completed","response":{"id":"r","model":"m","status":"completed","usage":` + c.responses + `}}`)
			if d := cmp.Diff(c.want, lastUsage(t, newResponsesState(""), body)); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
	}
}

// Spec runtime §2.3, P3: the dollars a router bills a turn (OpenRouter
// sends usage.cost, its receipt) are the turn's known cost, on both
// APIs; a cost that is not a finite number at or above zero, or none at
// all, leaves the dollars unknown (nil), never 0 — and never fails the
// turn, whose tokens stand.
func TestRouterReportedCostIsTheTurnsDollars(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name, cost string
		want       *float64
	}{
		{"billed", `,"cost":0.00042`, f(0.00042)},
		{"free", `,"cost":0`, f(0)},
		{"none", ``, nil},
		{"null", `,"cost":null`, nil},
		{"string", `,"cost":"0.1"`, nil},
		{"negative", `,"cost":-1`, nil},
		{"object", `,"cost":{"usd":1}`, nil},
	} {
		want := &contract.TokenUsage{InputTokens: 29, OutputTokens: 9, Cost: c.want}
		t.Run("chat-completions/"+c.name, func(t *testing.T) {
			body := `data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"id":"c","model":"m","choices":[],"usage":{"prompt_tokens":29,"completion_tokens":9` + c.cost + "}}\n\n" + "data: [DONE]\n\n"
			if d := cmp.Diff(want, lastUsage(t, newChatState(""), body)); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
		t.Run("responses/"+c.name, func(t *testing.T) {
			body := sse(`{"type":"response.completed","response":{"id":"r","model":"m","status":"completed","usage":{"input_tokens":29,"output_tokens":9` + c.cost + `}}}`)
			if d := cmp.Diff(want, lastUsage(t, newResponsesState(""), body)); d != "" {
				t.Errorf("usage (-want +got):\n%s", d)
			}
		})
	}
}

// RG-03: a Chat Completions turn is an answer only when it finished with
// stop or tool_calls; length, content_filter, a missing or an unknown
// finish reason fail it — the rule the anthropic package applies to
// stop_reason. The calls of a turn that did not finish as an answer are
// not yielded (length may have cut their arguments).
func TestFinishReasons(t *testing.T) {
	for _, c := range []struct {
		reason, failure string
		call            bool
	}{
		{"stop", "", true},
		{"tool_calls", "", true},
		{"length", "the completion was cut at its token limit (finish_reason length)", false},
		{"content_filter", "the endpoint's content filter stopped the completion (finish_reason content_filter)", false},
		{"sleepy", "the completion finished with an unknown reason sleepy", false},
		{"", "the stream ended without a finish_reason", false},
	} {
		t.Run(c.reason, func(t *testing.T) {
			finish := "null"
			if c.reason != "" {
				finish = `"` + c.reason + `"`
			}
			body := `data: {"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"x","tool_calls":[{"index":0,"id":"call_1","function":{"name":"ghost","arguments":"{}"}}]},"finish_reason":null}]}` + "\n\n" +
				`data: {"id":"c","model":"m","choices":[{"index":0,"delta":{},"finish_reason":` + finish + `}]}` + "\n\n" + "data: [DONE]\n\n"
			res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
			var failure string
			calls := 0
			err := runStream(context.Background(), res, newChatState(""), func(e contract.ChatEvent, err error) bool {
				switch {
				case err != nil:
				case e.Kind == contract.ChatFailure:
					failure = e.Failure
				case e.Kind == contract.ChatToolCall:
					calls++
				}
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
			if failure != c.failure {
				t.Errorf("failure %q, want %q", failure, c.failure)
			}
			if (calls == 1) != c.call {
				t.Errorf("%d calls yielded", calls)
			}
		})
	}
}
