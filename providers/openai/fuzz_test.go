package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
)

// FuzzStream feeds arbitrary bytes to the SSE and chunk decoding path as a
// response body. Whatever arrives, decoding never panics, nothing follows
// a failure or an error, reported usage is never negative, and a turn
// ends without an error only when the endpoint said [DONE] after a finish
// reason or reported an in-band failure.
func FuzzStream(f *testing.F) {
	addBodies(f, "*.txtar")
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":3,\"function\":{\"arguments\":\"{]\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("data: {\"usage\":{\"prompt_tokens\":-1,\"completion_tokens\":2}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := newChatState("sk-secret")
		events, err := fuzzTurn(t, s, body)
		failed := len(events) > 0 && events[len(events)-1].Kind == contract.ChatFailure
		if err == nil && !failed && (!s.done || s.finish == "") {
			t.Fatalf("a turn without [DONE] and a finish reason ended cleanly (done %v, finish %q)", s.done, s.finish)
		}
	})
}

// fuzzTurn runs decoder d over body as a streamed 200 response and
// checks what every wire protocol must hold: nothing follows an error or
// a failure, the error returned is the one yielded, reported usage is
// never negative, and a failure never carries the key. It returns the
// events and the error.
func fuzzTurn(t *testing.T, d eventDecoder, body []byte) ([]contract.ChatEvent, error) {
	t.Helper()
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
	var events []contract.ChatEvent
	var yieldedErr error
	err := runStream(context.Background(), res, d, func(e contract.ChatEvent, err error) bool {
		if yieldedErr != nil {
			t.Fatalf("an item after the error %v", yieldedErr)
		}
		if n := len(events); n > 0 && events[n-1].Kind == contract.ChatFailure {
			t.Fatalf("an item after a failure: %+v, %v", e, err)
		}
		if err != nil {
			yieldedErr = err
			return false
		}
		switch e.Kind {
		case contract.ChatUsage:
			if e.Usage == nil || e.Usage.InputTokens < 0 || e.Usage.OutputTokens < 0 {
				t.Fatalf("usage %+v", e.Usage)
			}
		case contract.ChatFailure:
			if bytes.Contains([]byte(e.Failure), []byte("sk-secret")) {
				t.Fatalf("the failure carries the key: %q", e.Failure)
			}
		}
		events = append(events, e)
		return true
	})
	if err != yieldedErr {
		t.Fatalf("returned %v, yielded %v", err, yieldedErr)
	}
	return events, err
}

// addBodies seeds f with the response bodies of the transcripts matching
// pattern under testdata.
func addBodies(f *testing.F, pattern string) {
	paths, _ := filepath.Glob(filepath.Join("testdata", pattern))
	for _, p := range paths {
		tr, err := transcript.Load(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, x := range tr.Exchanges {
			f.Add(x.ResponseBody)
		}
	}
}

// FuzzResponsesStream feeds arbitrary bytes to the SSE and Responses
// event decoding path as a response body. Whatever arrives, decoding
// never panics, nothing follows a failure or an error, reported usage is
// never negative, every tool call has a call id and a name, and a turn
// ends without an error or a failure only when the stream carried
// response.completed with status completed.
func FuzzResponsesStream(f *testing.F) {
	addBodies(f, filepath.Join("responses", "*.txtar"))
	f.Add([]byte("event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"function_call\",\"id\":\"a\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{]\"}}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n"))
	f.Add([]byte("data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":-1,\"output_tokens\":2}}}\n\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		s := newResponsesState("sk-secret")
		events, err := fuzzTurn(t, s, body)
		for _, e := range events {
			if e.Kind == contract.ChatToolCall && (e.ToolCall.ID == "" || e.ToolCall.Name == "") {
				t.Fatalf("tool call %+v", e.ToolCall)
			}
		}
		failed := len(events) > 0 && events[len(events)-1].Kind == contract.ChatFailure
		if err == nil && !failed && (!s.completed || s.finish != "completed" || !bytes.Contains(body, []byte("response.completed"))) {
			t.Fatalf("a turn without response.completed ended cleanly (completed %v, finish %q)", s.completed, s.finish)
		}
	})
}
