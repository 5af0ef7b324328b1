package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// decodeResponses runs the Responses decoder over body as a 200 stream.
func decodeResponses(body string) (*responsesState, []contract.ChatEvent, error) {
	res := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))}
	s := newResponsesState("sk-secret")
	var evs []contract.ChatEvent
	err := runStream(context.Background(), res, s, func(e contract.ChatEvent, err error) bool {
		if err == nil {
			evs = append(evs, e)
		}
		return true
	})
	return s, evs, err
}

// sse writes events as "event:" and "data:" lines, the type taken from
// the data.
func sse(events ...string) string {
	var b bytes.Buffer
	for _, e := range events {
		typ := e[len(`{"type":"`):]
		typ = typ[:strings.IndexByte(typ, '"')]
		b.WriteString("event: " + typ + "\ndata: " + e + "\n\n")
	}
	return b.String()
}

const completed = `{"type":"response.completed","response":{"id":"r","model":"m","status":"completed","usage":{"input_tokens":1,"output_tokens":2}}}`

// The decoder's rules at the edges the transcripts do not reach.
func TestResponsesDecoderEdges(t *testing.T) {
	call := func(id, args string) []string {
		return []string{
			`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"` + id + `","call_id":"c_` + id + `","name":"f","arguments":""}}`,
			`{"type":"response.function_call_arguments.delta","item_id":"` + id + `","delta":` + args + `}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"` + id + `","call_id":"c_` + id + `","name":"f"}}`,
		}
	}
	for _, tc := range []struct {
		name    string
		events  []string
		err     error  // the stream error, if any
		failure string // the failure's text, if any
		calls   []string
	}{
		{name: "arguments from deltas when the item has none", events: append(call("a", `"{\"x\":1}"`), completed), calls: []string{`c_a f {"x":1}`}},
		{name: "arguments that are not JSON reach the loop as absent", events: append(call("a", `"{]"`), completed), calls: []string{`c_a f <absent>`}},
		{name: "arguments that are not an object are kept for the loop to refuse", events: append(call("a", `"[1]"`), completed), calls: []string{`c_a f [1]`}},
		{name: "calls in output order", events: []string{
			`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","id":"b","call_id":"c_b","name":"g","arguments":"{}"}}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"a","call_id":"c_a","name":"f","arguments":"{}"}}`,
			completed}, calls: []string{"c_a f {}", "c_b g {}"}},
		{name: "a call without a call id", events: []string{`{"type":"response.output_item.done","item":{"type":"function_call","id":"a","name":"f","arguments":"{}"}}`}, err: ErrMalformed},
		{name: "a call still open at completion", events: []string{call("a", `"{}"`)[0], completed}, err: ErrMalformed},
		{name: "arguments for an unknown item", events: []string{`{"type":"response.function_call_arguments.delta","item_id":"z","delta":"{}"}`}, err: ErrMalformed},
		{name: "a delta that is not a string", events: []string{`{"type":"response.output_text.delta","delta":5}`}, err: ErrMalformed},
		{name: "an event that is not an object", events: []string{`{"type":"x"`}, err: ErrMalformed},
		{name: "a refusal", events: []string{`{"type":"response.refusal.delta","delta":"I can't help with that."}`, completed}, failure: "the model refused: I can't help with that."},
		{name: "a refusal part", events: []string{`{"type":"response.output_item.done","item":{"type":"message","content":[{"type":"refusal","refusal":"No."}]}}`, completed}, failure: "the model refused: No."},
		{name: "two served models", events: []string{`{"type":"response.created","response":{"model":"a","status":"in_progress"}}`, `{"type":"response.completed","response":{"model":"b","status":"completed"}}`}, failure: "two served models, a and b"},
		{name: "completed with another status", events: []string{`{"type":"response.completed","response":{"model":"m","status":"cancelled"}}`}, failure: "status cancelled"},
		{name: "an error event nesting its error", events: []string{`{"type":"error","error":{"type":"server_error","message":"boom sk-secret"}}`}, failure: "boom [redacted] (server_error)"},
		{name: "failed without an error object", events: []string{`{"type":"response.failed","response":{"model":"m","status":"failed","error":null}}`}, failure: "the response failed"},
		{name: "a negative count", events: []string{`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":-1,"output_tokens":2}}}`}, err: ErrMalformed},
		{name: "only [DONE]", events: nil, err: ErrStreamBroken},
		{name: "unknown events are skipped", events: []string{`{"type":"response.reasoning_summary_text.delta","delta":{"odd":true}}`, completed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := sse(tc.events...)
			if tc.events == nil {
				body = "data: [DONE]\n\n"
			}
			s, evs, err := decodeResponses(body)
			if tc.err != nil || err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			var failure string
			var calls []string
			for _, e := range evs {
				switch e.Kind {
				case contract.ChatFailure:
					failure = e.Failure
				case contract.ChatToolCall:
					args := "<absent>"
					if e.ToolCall.Args.IsValid() {
						args = string(canonjson.Marshal(e.ToolCall.Args))
					}
					calls = append(calls, e.ToolCall.ID+" "+e.ToolCall.Name+" "+args)
				}
			}
			if tc.failure == "" && failure != "" || !strings.Contains(failure, tc.failure) {
				t.Errorf("failure %q, want %q", failure, tc.failure)
			}
			if strings.Join(calls, "|") != strings.Join(tc.calls, "|") {
				t.Errorf("calls %q, want %q", calls, tc.calls)
			}
			if tc.failure == "" && !s.completed {
				t.Error("not completed")
			}
		})
	}
}

// A native reasoning control and an output ceiling reach the Responses
// body as reasoning.effort and max_output_tokens (cli-base's table has
// no native control today, so no transcript shows them).
func TestResponsesParamsControls(t *testing.T) {
	n := int64(64)
	p, err := responsesParams(request{model: "m", effort: "low", maxTokens: &n}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"model":"m","input":[],"reasoning":{"effort":"low"},"max_output_tokens":64,"store":false,"stream":true}`; string(got) != want {
		t.Errorf("body %s, want %s", got, want)
	}
}
