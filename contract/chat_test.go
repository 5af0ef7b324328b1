package contract_test

import (
	"context"
	"iter"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

func mustJSON(t *testing.T, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The transcript shape the tool loop sends a model (runtime spec §3.4):
// an assistant message with OpenAI tool_calls (content null when the turn
// only called tools, arguments as JSON text) and one tool message per
// result keyed by tool_call_id.
func TestChatMessageWireShape(t *testing.T) {
	text := "Looking it up."
	tests := []struct {
		name string
		msg  contract.ChatMessage
		want string
	}{
		{"system", contract.ChatMessage{Role: contract.ChatSystem, Content: &text},
			`{"content":"Looking it up.","role":"system"}`},
		{"tool-only assistant turn has null content",
			contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{
				{ID: "call_1", Name: "lookup", Args: mustJSON(t, `{"q":"go","n":2}`)},
			}},
			`{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"q\":\"go\",\"n\":2}","name":"lookup"},"id":"call_1","type":"function"}]}`},
		{"absent arguments are an empty object",
			contract.ChatMessage{Role: contract.ChatAssistant, Content: &text, ToolCalls: []contract.ToolCall{{ID: "call_now", Name: "now"}}},
			`{"content":"Looking it up.","role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"now"},"id":"call_now","type":"function"}]}`},
		{"tool result", contract.ChatMessage{Role: contract.ChatTool, Content: &text, ToolCallID: "call_1"},
			`{"content":"Looking it up.","role":"tool","tool_call_id":"call_1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := canonjson.ToValue(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := canonjson.Canonical(v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestChatModelFunc(t *testing.T) {
	var m contract.ChatModel = contract.ChatModelFunc(func(ctx context.Context, msgs []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
		return func(yield func(contract.ChatEvent, error) bool) {
			yield(contract.ChatEvent{Kind: contract.ChatText, Text: *msgs[0].Content + " " + tools[0].Name}, nil)
		}
	})
	hi := "hi"
	var got []contract.ChatEvent
	for e, err := range m.Turn(context.Background(), []contract.ChatMessage{{Role: contract.ChatUser, Content: &hi}}, []contract.Tool{{Name: "t"}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if len(got) != 1 || got[0].Kind != contract.ChatText || got[0].Text != "hi t" {
		t.Errorf("got %+v", got)
	}
}

// A retry event carries its reason bounded, cut at a character boundary,
// and everything else as given.
func TestRetryEvent(t *testing.T) {
	long := strings.Repeat("é", contract.MaxRetryReasonBytes) // 2 bytes each
	tests := []struct {
		name, reason, want string
	}{
		{"short", "HTTP 429 Too Many Requests", "HTTP 429 Too Many Requests"},
		{"empty", "", ""},
		{"exactly the bound", strings.Repeat("a", contract.MaxRetryReasonBytes), strings.Repeat("a", contract.MaxRetryReasonBytes)},
		{"multi-byte cut", long, strings.Repeat("é", (contract.MaxRetryReasonBytes-len("…"))/2) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := contract.ModelRetry{Attempt: 2, Delay: time.Second, Status: 429, Reason: tc.reason}
			e := contract.RetryEvent(r)
			want := r
			want.Reason = tc.want
			if e.Kind != contract.ChatRetry || e.Retry == nil {
				t.Fatalf("event %+v", e)
			}
			if d := cmp.Diff(want, *e.Retry); d != "" {
				t.Errorf("retry (-want +got):\n%s", d)
			}
			if len(e.Retry.Reason) > contract.MaxRetryReasonBytes || !utf8.ValidString(e.Retry.Reason) {
				t.Errorf("reason of %d bytes, valid UTF-8 %v", len(e.Retry.Reason), utf8.ValidString(e.Retry.Reason))
			}
		})
	}
}
