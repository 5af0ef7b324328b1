package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/clitest"
	"github.com/agentrt/agentrt/profile"
)

// servedOpenAIKey is the key the codex and opencode serve tests give
// the server; checkServedCLI's server log check and the fakes never
// echo it.
const servedOpenAIKey = "sk-fake-serve-clibridge-openai"

// hangingOpenAIAPI is a local OpenAI-compatible model endpoint for the
// codex (POST /v1/responses) or opencode (POST /v1/chat/completions)
// CLI: a call whose body carries hangMarker gets its first streamed
// event and then nothing until the client goes away (a turn to cancel);
// any other is answered servedAnswer. hung counts the hanging calls.
// reply writes one streamed answer given the event writer.
func hangingOpenAIAPI(t *testing.T, path string, first, reply func(ev func(name string, data any), model string)) (url string, hung *atomic.Int64) {
	hung = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
		if r.Method != http.MethodPost || r.URL.Path != path {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":{"message":"not served by the fake","type":"invalid_request_error"}}`)
			return
		}
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(name string, data any) {
			b, ok := data.(string)
			if !ok {
				raw, _ := json.Marshal(data)
				b = string(raw)
			}
			if name != "" {
				fmt.Fprintf(w, "event: %s\n", name)
			}
			fmt.Fprintf(w, "data: %s\n\n", b)
			w.(http.Flusher).Flush()
		}
		first(ev, req.Model)
		if strings.Contains(string(body), hangMarker) {
			hung.Add(1)
			select {
			case <-r.Context().Done():
			case <-time.After(3 * time.Minute):
			}
			return
		}
		reply(ev, req.Model)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", hung
}

// hangingResponsesAPI is hangingOpenAIAPI speaking the Responses API
// codex calls.
func hangingResponsesAPI(t *testing.T) (url string, hung *atomic.Int64) {
	const id, msg = "resp_served", "msg_served"
	return hangingOpenAIAPI(t, "/v1/responses", func(ev func(string, any), model string) {
		ev("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "model": model, "status": "in_progress"}})
	}, func(ev func(string, any), model string) {
		ev("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{
			"type": "message", "id": msg, "role": "assistant", "content": []any{}}})
		ev("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": msg, "output_index": 0,
			"content_index": 0, "delta": servedAnswer})
		ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
			"type": "message", "id": msg, "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": servedAnswer}}}})
		ev("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "model": model, "status": "completed",
			"usage": map[string]any{"input_tokens": 20, "output_tokens": 5, "total_tokens": 25, "input_tokens_details": map[string]any{"cached_tokens": 0},
				"output_tokens_details": map[string]any{"reasoning_tokens": 0}}}})
	})
}

// hangingChatAPI is hangingOpenAIAPI speaking the chat completions API
// opencode calls (bare data lines ending in [DONE]).
func hangingChatAPI(t *testing.T) (url string, hung *atomic.Int64) {
	chunk := func(ev func(string, any), model string, choices []any, usage any) {
		c := map[string]any{"id": "chatcmpl-served", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		ev("", c)
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	return hangingOpenAIAPI(t, "/v1/chat/completions", func(ev func(string, any), model string) {
		chunk(ev, model, delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
	}, func(ev func(string, any), model string) {
		chunk(ev, model, delta(map[string]any{"content": servedAnswer}, nil), nil)
		chunk(ev, model, delta(map[string]any{}, "stop"), nil)
		chunk(ev, model, []any{}, map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25})
		ev("", "[DONE]")
	})
}

// servedPATH puts the CLI's directory first in the server's PATH, where
// clibridge looks for it.
func servedPATH(bin string) string {
	return "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
}

// Issue 14 (serve gaps, item 4), for codex: `agentrt serve --provider
// codex --base-url <local Responses API>` drives the real codex CLI for
// providers/remote — a streamed turn, a hanging turn cancelled by id
// (accepted, a re-send replayed, ended cancelled), destroy — and the key
// (OPENAI_API_KEY) never reaches the server's log. Without the codex
// binary it skips, unless AGENTRT_REQUIRE_CLIS=1.
func TestServeCodexThroughRemote(t *testing.T) {
	codex := clitest.Codex(t)
	api, hung := hangingResponsesAPI(t)
	url, _ := startServeWithEnv(t, []string{"OPENAI_API_KEY=" + servedOpenAIKey, servedPATH(codex)},
		"--provider", "codex", "--base-url", api)
	checkServedCLI(t, url, &profile.Profile{Name: profile.Ptr("served"), Harness: harness.Codex,
		Model: &profile.ModelHints{Default: profile.Ptr("gpt-e2e-1")}}, hung)
}

// Issue 14 (serve gaps, item 4), for opencode: `agentrt serve --provider
// opencode --base-url <local chat completions API>` drives the real
// opencode CLI for providers/remote, as TestServeCodexThroughRemote
// does codex. Without the opencode binary it skips, unless
// AGENTRT_REQUIRE_CLIS=1.
func TestServeOpencodeThroughRemote(t *testing.T) {
	opencode := clitest.OpenCode(t)
	api, hung := hangingChatAPI(t)
	url, _ := startServeWithEnv(t, []string{"OPENAI_API_KEY=" + servedOpenAIKey, servedPATH(opencode)},
		"--provider", "opencode", "--base-url", api)
	checkServedCLI(t, url, &profile.Profile{Name: profile.Ptr("served"), Harness: harness.OpenCode,
		Model: &profile.ModelHints{Default: profile.Ptr("fake-oc-served")}}, hung)
}
