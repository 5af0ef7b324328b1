package clibridge

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/clitest"
)

// fakeServer is a local model API for a real harness binary: it logs
// every request and answers the model call (POST api.path) with the
// streamed (SSE) reply its script picks, in the API's wire format. What
// each binary calls is documented in doc.go and testdata/*/README.
type fakeServer struct {
	srv    *httptest.Server
	script func(req fakeRequest) fakeReply
	api    fakeAPI

	mu       sync.Mutex
	requests []fakeRequest
}

// fakeRequest is one request the server received.
type fakeRequest struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	// Model and the last user message's text, for POST /v1/messages.
	Model     string
	LastUser  string
	HasResult bool
	// Title marks opencode's title-generation call (which the bridge
	// disables).
	Title bool
}

// wireBody is what the tests read of a message call's body.
type wireBody struct {
	Model  string
	Stream bool
	// Effort is output_config.effort.
	Effort string
	// System are the system blocks' texts; Tools the tools' names.
	System, Tools []string
}

// wire decodes the message call's body.
func (r fakeRequest) wire(t testing.TB) wireBody {
	t.Helper()
	var b struct {
		Model        string `json:"model"`
		Stream       bool   `json:"stream"`
		OutputConfig struct {
			Effort string `json:"effort"`
		} `json:"output_config"`
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatalf("the message call's body: %v", err)
	}
	w := wireBody{Model: b.Model, Stream: b.Stream, Effort: b.OutputConfig.Effort}
	for _, s := range b.System {
		w.System = append(w.System, s.Text)
	}
	for _, tl := range b.Tools {
		w.Tools = append(w.Tools, tl.Name)
	}
	return w
}

// fakeReply is one scripted answer.
type fakeReply struct {
	// Model is the model the reply says served it; "" means the
	// requested one.
	Model string
	// Text, or a tool call (ToolName with ToolInput JSON).
	Text      string
	ToolName  string
	ToolInput string
	// ToolNamespace, for the Responses API, is the function call's
	// namespace (codex groups an MCP server's tools in a namespace
	// "mcp__<server>"); "" for none.
	ToolNamespace string
	// Usage: input tokens (message_start) and output tokens
	// (message_delta); for the Responses API, response.completed's, with
	// Cached input tokens among In.
	In, Out, Cached int
	// NoUsage leaves every usage field out of the stream, as an endpoint
	// that reports none.
	NoUsage bool
	// Status, when non-zero, answers with this HTTP error instead.
	Status int
	// Hang sends message_start and then blocks until the client leaves.
	Hang bool
}

// sseData is an event's data written as is (not as JSON).
type sseData []byte

// fakeAPI is one model API's wire format.
type fakeAPI interface {
	// name names the API in recordings.
	name() string
	// path is the model call's path.
	path() string
	// parse reads the model call's body into req.
	parse(body []byte, req *fakeRequest)
	// fail answers with an HTTP error carrying message.
	fail(w http.ResponseWriter, status int, message string)
	// stream writes the reply's events (n counts the model calls; an
	// event without a name is a bare data line); hang blocks after the
	// first until the client leaves.
	stream(ev func(name string, data any), req fakeRequest, rep fakeReply, model string, n int, hang func())
}

func newFakeServer(t testing.TB, api fakeAPI, script func(req fakeRequest) fakeReply) *fakeServer {
	f := &fakeServer{script: script, api: api}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// newFakeAnthropic is a local Anthropic Messages API for the real
// claude binary (POST /v1/messages).
func newFakeAnthropic(t testing.TB, script func(req fakeRequest) fakeReply) *fakeServer {
	return newFakeServer(t, anthropicAPI{}, script)
}

// URL is the server's base URL (ANTHROPIC_BASE_URL; codex's base_url
// and opencode's provider baseURL are URL()+"/v1").
func (f *fakeServer) URL() string { return f.srv.URL }

// Requests returns the requests received so far.
func (f *fakeServer) Requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// messages returns the model calls (POST api.path).
func (f *fakeServer) messages() []fakeRequest {
	var out []fakeRequest
	for _, r := range f.Requests() {
		if r.Method == http.MethodPost && r.Path == f.api.path() {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := fakeRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if r.Method == http.MethodPost && r.URL.Path == f.api.path() {
		f.api.parse(body, &req)
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	switch {
	case r.Method == http.MethodHead:
		return
	case r.Method == http.MethodPost && r.URL.Path == f.api.path():
		f.reply(w, r, req, f.script(req))
	default:
		f.api.fail(w, http.StatusNotFound, "not served by the fake")
	}
}

func (f *fakeServer) reply(w http.ResponseWriter, r *http.Request, req fakeRequest, rep fakeReply) {
	if rep.Status != 0 {
		f.api.fail(w, rep.Status, rep.Text)
		return
	}
	model := rep.Model
	if model == "" {
		model = req.Model
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	ev := func(name string, data any) {
		b, ok := data.(sseData)
		if !ok {
			b, _ = json.Marshal(data)
		}
		if name != "" {
			fmt.Fprintf(w, "event: %s\n", name)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	f.api.stream(ev, req, rep, model, len(f.messages()), func() { <-r.Context().Done() })
}

// messagesBody is what the fake reads of a Messages or chat completions
// call: the model and the role and content of each message.
type messagesBody struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// anthropicAPI is the Messages API claude-code calls.
type anthropicAPI struct{}

func (anthropicAPI) name() string { return "Anthropic" }
func (anthropicAPI) path() string { return "/v1/messages" }

func (anthropicAPI) parse(body []byte, req *fakeRequest) {
	var m messagesBody
	json.Unmarshal(body, &m)
	req.Model = m.Model
	for _, msg := range m.Messages {
		if msg.Role != "user" {
			continue
		}
		req.LastUser = ""
		for _, b := range blocks(msg.Content) {
			switch b.Type {
			case "text":
				req.LastUser += b.Text
			case "tool_result":
				req.HasResult = true
			}
		}
	}
}

func (anthropicAPI) fail(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, message)
}

func (anthropicAPI) stream(ev func(string, any), req fakeRequest, rep fakeReply, model string, n int, hang func()) {
	start := map[string]any{"id": fmt.Sprintf("msg_fake_%d", n), "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil}
	if !rep.NoUsage {
		start["usage"] = map[string]any{"input_tokens": rep.In, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
	}
	ev("message_start", map[string]any{"type": "message_start", "message": start})
	if rep.Hang {
		hang()
		return
	}
	stop := "end_turn"
	if rep.ToolName != "" {
		stop = "tool_use"
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{
			"type": "tool_use", "id": fmt.Sprintf("toolu_fake_%d", n), "name": rep.ToolName, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{
			"type": "input_json_delta", "partial_json": rep.ToolInput}})
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": rep.Text}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	delta := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}}
	if !rep.NoUsage {
		delta["usage"] = map[string]any{"output_tokens": rep.Out}
	}
	ev("message_delta", delta)
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// openAIAPI is the OpenAI Responses API codex calls (wire_api
// "responses"): POST /v1/responses, streamed.
type openAIAPI struct{}

func (openAIAPI) name() string { return "OpenAI Responses" }
func (openAIAPI) path() string { return "/v1/responses" }

func (openAIAPI) parse(body []byte, req *fakeRequest) {
	var m struct {
		Model string           `json:"model"`
		Input []responsesInput `json:"input"`
	}
	json.Unmarshal(body, &m)
	req.Model = m.Model
	for _, in := range m.Input {
		switch {
		case in.Type == "function_call_output":
			req.HasResult = true
		case in.Type == "message" && in.Role == "user":
			req.LastUser = ""
			for _, c := range in.Content {
				req.LastUser += c.Text
			}
		}
	}
}

// responsesInput is one input item of a Responses API call.
type responsesInput struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
}

func (openAIAPI) fail(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error","code":"fake"}}`, message)
}

func (openAIAPI) stream(ev func(string, any), req fakeRequest, rep fakeReply, model string, n int, hang func()) {
	id := fmt.Sprintf("resp_fake_%d", n)
	ev("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "model": model, "status": "in_progress"}})
	if rep.Hang {
		hang()
		return
	}
	if rep.ToolName != "" {
		item := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_fake_%d", n), "call_id": fmt.Sprintf("call_fake_%d", n),
			"name": rep.ToolName, "arguments": rep.ToolInput}
		if rep.ToolNamespace != "" {
			item["namespace"] = rep.ToolNamespace
		}
		ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	} else {
		msgID := fmt.Sprintf("msg_fake_%d", n)
		ev("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{
			"type": "message", "id": msgID, "role": "assistant", "content": []any{}}})
		ev("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": msgID, "output_index": 0,
			"content_index": 0, "delta": rep.Text})
		ev("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": map[string]any{
			"type": "message", "id": msgID, "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": rep.Text}}}})
	}
	completed := map[string]any{"id": id, "model": model, "status": "completed"}
	if !rep.NoUsage {
		completed["usage"] = map[string]any{"input_tokens": rep.In, "output_tokens": rep.Out, "total_tokens": rep.In + rep.Out,
			"input_tokens_details": map[string]any{"cached_tokens": rep.Cached}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	}
	ev("response.completed", map[string]any{"type": "response.completed", "response": completed})
}

// chatCompletionsAPI is the OpenAI-compatible chat completions API
// opencode's bridge provider calls: POST /v1/chat/completions, streamed
// as bare data lines ending in [DONE]. What opencode 1.18.33 calls is
// documented in doc.go and testdata/opencode/README.
type chatCompletionsAPI struct{}

func (chatCompletionsAPI) name() string { return "OpenAI-compatible" }
func (chatCompletionsAPI) path() string { return "/v1/chat/completions" }

// parse reads the model, the last user message and whether a tool result
// was sent; a system prompt naming a "title generator" marks opencode's
// title-generation call.
func (chatCompletionsAPI) parse(body []byte, req *fakeRequest) {
	var m messagesBody
	json.Unmarshal(body, &m)
	req.Model = m.Model
	for _, msg := range m.Messages {
		var text string
		if json.Unmarshal(msg.Content, &text) != nil {
			for _, b := range blocks(msg.Content) {
				text += b.Text
			}
		}
		switch msg.Role {
		case "system":
			req.Title = req.Title || strings.Contains(text, "You are a title generator")
		case "user":
			req.LastUser = text
		case "tool":
			req.HasResult = true
		}
	}
}

func (chatCompletionsAPI) fail(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"type":"invalid_request_error","message":%q}}`, message)
}

func (chatCompletionsAPI) stream(ev func(string, any), req fakeRequest, rep fakeReply, model string, n int, hang func()) {
	chunk := func(choices []any, usage any) {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		ev("", c)
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	if rep.Hang {
		chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
		hang()
		return
	}
	finish := "stop"
	if rep.ToolName != "" {
		finish = "tool_calls"
		chunk(delta(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_fake_%d", n),
			"type": "function", "function": map[string]any{"name": rep.ToolName, "arguments": ""}}}}, nil), nil)
		chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": rep.ToolInput}}}}, nil), nil)
	} else {
		chunk(delta(map[string]any{"role": "assistant", "content": rep.Text}, nil), nil)
	}
	chunk(delta(map[string]any{}, finish), nil)
	if !rep.NoUsage {
		chunk([]any{}, map[string]any{"prompt_tokens": rep.In, "completion_tokens": rep.Out, "total_tokens": rep.In + rep.Out})
	}
	ev("", sseData("[DONE]"))
}

// fakeKey is the API key tests give the bridge; it must never appear in
// an event or a receipt.
const fakeKey = "sk-ant-fake-e2e-key-0123456789"

// newClaudeProvider returns a bridge to the real claude binary talking to
// f.
func newClaudeProvider(t testing.TB, f *fakeServer) *Provider {
	t.Helper()
	p, err := New(Options{Binary: clitest.Claude(t), BaseURL: f.URL(), APIKey: fakeKey, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hasText reports whether any string of ss contains sub.
func hasText(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// newCodexProvider returns a bridge to the real codex binary talking to
// f (a fake Responses API).
func newCodexProvider(t testing.TB, f *fakeServer) *Provider {
	t.Helper()
	p, err := New(Options{Harness: harness.Codex, Binary: clitest.Codex(t), BaseURL: f.URL() + "/v1", APIKey: fakeKey, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// opencodeModelName is the model the opencode tests ask for.
const opencodeModelName = "fake-oc-1"

// newOpencodeProvider returns a bridge to the real opencode binary
// talking to f, with opencodeModelName as the default model.
func newOpencodeProvider(t testing.TB, f *fakeServer) *Provider {
	t.Helper()
	p, err := New(Options{Harness: harness.OpenCode, Binary: clitest.OpenCode(t), BaseURL: f.URL() + "/v1", APIKey: fakeKey,
		Model: opencodeModelName, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// opencodeScript is opencode's bashScript (its tool is "bash").
var opencodeScript = bashScript("bash")
