package clibridge

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// fakeAnthropic is a local Anthropic Messages API for the real claude
// binary: it logs every request and answers POST /v1/messages with the
// streamed (SSE) reply its script picks. What claude 2.1.197 calls is
// documented in doc.go and testdata/claude-code/README.
type fakeAnthropic struct {
	srv    *httptest.Server
	script func(req fakeRequest) fakeReply
	// openai makes it an OpenAI-compatible chat completions server
	// instead (fakeopenai_test.go), for opencode.
	openai bool

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
	// Title marks opencode's title-generation call (not a turn's model
	// call).
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
	// Usage: input tokens (message_start) and output tokens
	// (message_delta).
	In, Out int
	// Status, when non-zero, answers with this HTTP error instead.
	Status int
	// Hang sends message_start and then blocks until the client leaves.
	Hang bool
}

func newFakeAnthropic(t testing.TB, script func(req fakeRequest) fakeReply) *fakeAnthropic {
	f := &fakeAnthropic{script: script}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the server's base URL (ANTHROPIC_BASE_URL).
func (f *fakeAnthropic) URL() string { return f.srv.URL }

// Requests returns the requests received so far.
func (f *fakeAnthropic) Requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// messages returns the model calls: POST /v1/messages, or (openai) POST
// /v1/chat/completions other than title generation.
func (f *fakeAnthropic) messages() []fakeRequest {
	var out []fakeRequest
	for _, r := range f.Requests() {
		if r.Method == http.MethodPost && (r.Path == "/v1/messages" || r.Path == "/v1/chat/completions" && !r.Title) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := fakeRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	if r.Method == http.MethodPost && r.URL.Path == "/v1/messages" {
		var m struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
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
	if f.openai {
		f.serveOpenAI(w, r, req)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	switch {
	case r.Method == http.MethodHead:
		return
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		f.reply(w, r, req, f.script(req))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"type":"error","error":{"type":"not_found_error","message":"not served by the fake"}}`)
	}
}

func (f *fakeAnthropic) reply(w http.ResponseWriter, r *http.Request, req fakeRequest, rep fakeReply) {
	model, fl, ok := startReply(w, req, rep, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`)
	if !ok {
		return
	}
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	n := len(f.messages())
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", n), "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": rep.In, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}})
	if rep.Hang {
		<-r.Context().Done()
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
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": rep.Out}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// startReply answers rep's HTTP error (errFormat with the reply's text)
// and returns false, or starts an event stream and returns the model
// the reply is served by.
func startReply(w http.ResponseWriter, req fakeRequest, rep fakeReply, errFormat string) (string, http.Flusher, bool) {
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, errFormat, rep.Text)
		return "", nil, false
	}
	model := rep.Model
	if model == "" {
		model = req.Model
	}
	w.Header().Set("Content-Type", "text/event-stream")
	return model, w.(http.Flusher), true
}

// claudeBinary finds the real claude binary for a test (harnessBinary).
func claudeBinary(t testing.TB) string {
	t.Helper()
	return harnessBinary(t, "AGENTRT_CLAUDE_BIN", "claude", "@anthropic-ai/claude-code@2.1.197")
}

// harnessBinary finds a real harness binary for a test: $envVar, else
// name in PATH. Without one the test fails when AGENTRT_REQUIRE_CLIS=1
// and is skipped otherwise, naming the npm package to install.
func harnessBinary(t testing.TB, envVar, name, pkg string) string {
	t.Helper()
	if bin := os.Getenv(envVar); bin != "" {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s=%s is not an executable: %v", envVar, bin, err)
		}
		return bin
	}
	if bin, err := exec.LookPath(name); err == nil {
		return bin
	}
	msg := fmt.Sprintf("the %s binary is not installed (npm install %s, then set %s or put %s in PATH)", name, pkg, envVar, name)
	if os.Getenv("AGENTRT_REQUIRE_CLIS") == "1" {
		t.Fatal(msg + "; AGENTRT_REQUIRE_CLIS=1 forbids skipping")
	}
	t.Skip(msg)
	return ""
}

// fakeKey is the API key tests give the bridge; it must never appear in
// an event or a receipt.
const fakeKey = "sk-ant-fake-e2e-key-0123456789"

// newClaudeProvider returns a bridge to the real claude binary talking to
// f.
func newClaudeProvider(t testing.TB, f *fakeAnthropic) *Provider {
	t.Helper()
	p, err := New(Options{Binary: claudeBinary(t), BaseURL: f.URL(), APIKey: fakeKey, WorkRoot: t.TempDir()})
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
