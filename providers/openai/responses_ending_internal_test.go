package openai

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
)

// line writes a chat event as one line.
func line(e contract.ChatEvent) string {
	switch e.Kind {
	case contract.ChatText:
		return "text " + e.Text
	case contract.ChatToolCall:
		return "call " + e.ToolCall.ID + " " + e.ToolCall.Name
	case contract.ChatUsage:
		return fmt.Sprintf("usage %s in=%d out=%d", e.UsageMode, e.Usage.InputTokens, e.Usage.OutputTokens)
	case contract.ChatServed:
		return "served " + e.Model
	case contract.ChatFailure:
		return "failure " + e.Failure
	}
	return "unknown " + string(e.Kind)
}

// A Responses turn that ends early — cut, failed, incomplete, an error
// event — hands over first what it already knew whole: the served model,
// a running usage total an endpoint sent on a lifecycle event, and the
// function calls whose items were done. A call whose item was still open
// is partial and dropped. (ERR-04: what is reported before the end is
// the floor the kernel records.)
func TestResponsesEarlyEndingKeepsWhatWasKnown(t *testing.T) {
	const (
		created    = `{"type":"response.created","response":{"id":"r","model":"m","status":"in_progress","usage":null}}`
		inProgress = `{"type":"response.in_progress","response":{"id":"r","model":"m","status":"in_progress","usage":{"input_tokens":40,"output_tokens":3}}}`
		callA      = `{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"a","call_id":"c_a","name":"ghost","arguments":"{}"}}`
		openB      = `{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"b","call_id":"c_b","name":"f","arguments":"{\"x\":"}}`
		incomplete = `{"type":"response.incomplete","response":{"id":"r","model":"m","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":40,"output_tokens":9}}}`
		failed     = `{"type":"response.failed","response":{"id":"r","model":"m","status":"failed","error":{"code":"server_error","message":"boom"}}}`
		errorEvent = `{"type":"error","code":"server_error","message":"boom"}`
	)
	for _, tc := range []struct {
		name   string
		events []string
		want   []string
		err    error
	}{
		{name: "cut after a done call", events: []string{created, inProgress, callA, openB},
			want: []string{"served m", "usage cumulative in=40 out=3", "call c_a ghost"}, err: ErrStreamBroken},
		{name: "incomplete after a done call", events: []string{created, callA, openB, incomplete},
			want: []string{"served m", "call c_a ghost", "usage cumulative in=40 out=9", "failure the response is incomplete (max_output_tokens)"}},
		{name: "failed after a done call", events: []string{created, inProgress, callA, failed},
			want: []string{"served m", "usage cumulative in=40 out=3", "call c_a ghost", "failure boom (server_error)"}},
		{name: "error event after a done call", events: []string{created, callA, errorEvent},
			want: []string{"served m", "call c_a ghost", "failure boom (server_error)"}},
		{name: "malformed event after a done call", events: []string{created, callA, `{"type":"response.output_text.delta","delta":5}`},
			want: []string{"served m", "call c_a ghost"}, err: ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, evs, err := decodeResponses(sse(tc.events...))
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			var got []string
			for _, e := range evs {
				got = append(got, line(e))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
