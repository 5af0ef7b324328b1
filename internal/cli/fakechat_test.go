package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// coordinationPrefix names a coordination verb in a request's tools: a
// request offering one is the manager's.
const coordinationPrefix = "agent_runtime_coordination_"

// openAITurn is what a fake OpenAI-compatible chat-completions endpoint
// reads from one request of a supervised run.
type openAITurn struct {
	// Model is the model the request asked for.
	Model string
	// Manager says the request offered a coordination verb.
	Manager bool
	// ToolResults are the request's tool messages' contents, in order.
	ToolResults []string
	// Worker is, for a worker's request, the plan label its task names
	// ("task <label>"); empty for the manager's.
	Worker string
}

// chatRequest is what the tests' chat-completions servers read of a
// request.
type chatRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

// decodeChatRequest reads a chat-completions request. It answers the
// request itself (and returns false) when it is not one.
func decodeChatRequest(w http.ResponseWriter, r *http.Request) (chatRequest, bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not a chat completion"}}`, http.StatusNotFound)
		return chatRequest{}, false
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return chatRequest{}, false
	}
	return req, true
}

// readOpenAITurn decodes a chat-completions request. It answers the
// request itself (and returns false) when it is not one.
func readOpenAITurn(w http.ResponseWriter, r *http.Request, plan []string) (openAITurn, bool) {
	req, ok := decodeChatRequest(w, r)
	if !ok {
		return openAITurn{}, false
	}
	turn := openAITurn{Model: req.Model}
	for _, tl := range req.Tools {
		turn.Manager = turn.Manager || strings.HasPrefix(tl.Function.Name, coordinationPrefix)
	}
	for _, m := range req.Messages {
		if m.Role == "tool" {
			turn.ToolResults = append(turn.ToolResults, fmt.Sprint(m.Content))
		}
		if m.Role == "user" && !turn.Manager {
			turn.Worker = planLabel(plan, fmt.Sprint(m.Content), turn.Worker)
		}
	}
	return turn, true
}

// planLabel is the label of plan whose task ("task <label>") text names,
// or found when it names none.
func planLabel(plan []string, text, found string) string {
	for _, label := range plan {
		if strings.Contains(text, "task "+label) {
			found = label
		}
	}
	return found
}

// openAIStream writes one streamed chat-completions answer: chunks, then
// the usage chunk when there is one, then [DONE].
type openAIStream struct {
	w         http.ResponseWriter
	id, model string
}

// startOpenAIStream starts an event-stream answer.
func startOpenAIStream(w http.ResponseWriter, id, model string) openAIStream {
	w.Header().Set("Content-Type", "text/event-stream")
	return openAIStream{w: w, id: id, model: model}
}

func (s openAIStream) chunk(v map[string]any) {
	v["id"], v["object"], v["model"] = s.id, "chat.completion.chunk", s.model
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.w.(http.Flusher).Flush()
}

// delta writes one choice delta with its finish reason (nil for none).
func (s openAIStream) delta(d map[string]any, finish any) {
	s.chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}})
}

// text writes the assistant's text.
func (s openAIStream) text(text string) {
	s.delta(map[string]any{"role": "assistant", "content": text}, nil)
}

// openAICall is one tool call of an answer.
type openAICall struct {
	ID, Name string
	Args     any
}

// calls writes the assistant's tool calls.
func (s openAIStream) calls(calls ...openAICall) {
	var list []any
	for i, c := range calls {
		args, _ := json.Marshal(c.Args)
		list = append(list, map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": string(args)}})
	}
	s.delta(map[string]any{"role": "assistant", "tool_calls": list}, nil)
}

// finish writes the finish reason.
func (s openAIStream) finish(reason string) { s.delta(map[string]any{}, reason) }

// usage writes the usage chunk.
func (s openAIStream) usage(in, out int64) {
	s.chunk(map[string]any{"choices": []any{},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}})
}

// usageCost is usage with the usage.cost a router such as OpenRouter
// sends (dollars).
func (s openAIStream) usageCost(in, out int64, cost float64) {
	s.chunk(map[string]any{"choices": []any{},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out, "cost": cost}})
}

// done ends the stream.
func (s openAIStream) done() { fmt.Fprint(s.w, "data: [DONE]\n\n") }
