package clibridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// newFakeOpenAI returns a local OpenAI-compatible chat completions server
// for the real opencode binary: it logs every request and answers POST
// /v1/chat/completions with the streamed (SSE) reply its script picks.
// opencode's title-generation call (its system prompt names a "title
// generator") is answered with a fixed title and not counted as a model
// call. What opencode 1.18.33 calls is documented in doc.go and
// testdata/opencode/README.
func newFakeOpenAI(t testing.TB, script func(req fakeRequest) fakeReply) *fakeAnthropic {
	f := newFakeAnthropic(t, script)
	f.openai = true
	return f
}

// openaiURL is the OpenAI-compatible base URL opencode is given.
func (f *fakeAnthropic) openaiURL() string { return f.URL() + "/v1" }

func (f *fakeAnthropic) serveOpenAI(w http.ResponseWriter, r *http.Request, req fakeRequest) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" {
		var m struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		json.Unmarshal(req.Body, &m)
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
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" && req.Title:
		f.replyOpenAI(w, r, req, fakeReply{Text: "Fake title", In: 1, Out: 1})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		f.replyOpenAI(w, r, req, f.script(req))
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":{"type":"not_found","message":"not served by the fake"}}`)
	}
}

func (f *fakeAnthropic) replyOpenAI(w http.ResponseWriter, r *http.Request, req fakeRequest, rep fakeReply) {
	model, fl, ok := startReply(w, req, rep, `{"error":{"type":"invalid_request_error","message":%q}}`)
	if !ok {
		return
	}
	chunk := func(choices []any, usage any) {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": choices}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}
	}
	if rep.Hang {
		chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil), nil)
		<-r.Context().Done()
		return
	}
	finish := "stop"
	if rep.ToolName != "" {
		finish = "tool_calls"
		n := len(f.messages())
		chunk(delta(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_fake_%d", n),
			"type": "function", "function": map[string]any{"name": rep.ToolName, "arguments": ""}}}}, nil), nil)
		chunk(delta(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": rep.ToolInput}}}}, nil), nil)
	} else {
		chunk(delta(map[string]any{"role": "assistant", "content": rep.Text}, nil), nil)
	}
	chunk(delta(map[string]any{}, finish), nil)
	chunk([]any{}, map[string]any{"prompt_tokens": rep.In, "completion_tokens": rep.Out, "total_tokens": rep.In + rep.Out})
	fmt.Fprint(w, "data: [DONE]\n\n")
	fl.Flush()
}

// opencodeBinary finds the real opencode binary for a test
// (harnessBinary).
func opencodeBinary(t testing.TB) string {
	t.Helper()
	return harnessBinary(t, "AGENTRT_OPENCODE_BIN", "opencode", "opencode-ai@1.18.33")
}

// opencodeModelName is the model the opencode tests ask for.
const opencodeModelName = "fake-oc-1"

// newOpencodeProvider returns a bridge to the real opencode binary
// talking to f, with opencodeModelName as the default model.
func newOpencodeProvider(t testing.TB, f *fakeAnthropic) *Provider {
	t.Helper()
	p, err := New(Options{Harness: "opencode", Binary: opencodeBinary(t), BaseURL: f.openaiURL(), APIKey: fakeKey,
		Model: opencodeModelName, WorkRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// opencodeScript answers a prompt mentioning "use bash" with a bash call
// first and text after its result; anything else with text.
func opencodeScript(req fakeRequest) fakeReply {
	switch {
	case strings.Contains(req.LastUser, "use bash") && !req.HasResult:
		return fakeReply{ToolName: "bash", ToolInput: `{"command":"echo hi","description":"say hi"}`, In: 11, Out: 7}
	case req.HasResult:
		return fakeReply{Text: "Done: hi", In: 17, Out: 5}
	}
	return fakeReply{Text: "Hello.", In: 12, Out: 3}
}
