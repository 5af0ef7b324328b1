package scripted_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

// play drains one turn: its events and its stream error.
func play(ctx context.Context, m contract.ChatModel) (kinds []string, err error) {
	for e, err := range m.Turn(ctx, nil, nil) {
		if err != nil {
			return kinds, err
		}
		kinds = append(kinds, string(e.Kind))
	}
	return kinds, nil
}

func TestChatModelPlaysInOrder(t *testing.T) {
	m := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Text("a"), scripted.Call("c1", "t", `{"x":1}`), scripted.Usage(3, 1, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Failure("quota")}},
		{Events: []contract.ChatEvent{scripted.Text("b")}, Break: true},
	}})
	ctx := context.Background()
	tests := []struct {
		kinds []string
		err   error
	}{
		{[]string{"text", "tool_call", "usage"}, nil},
		{[]string{"failure"}, nil},
		{[]string{"text"}, scripted.ErrTransport},
		{nil, scripted.ErrScriptExhausted},
	}
	for i, tt := range tests {
		kinds, err := play(ctx, m)
		if diff := cmp.Diff(tt.kinds, kinds); diff != "" {
			t.Errorf("turn %d events (-want +got):\n%s", i, diff)
		}
		if !errors.Is(err, tt.err) {
			t.Errorf("turn %d error = %v, want %v", i, err, tt.err)
		}
	}
	if m.Calls() != 4 {
		t.Errorf("Calls() = %d, want 4", m.Calls())
	}
}

func TestChatModelCycles(t *testing.T) {
	m := scripted.NewChatModel(scripted.ChatScript{Cycle: true, Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Text("a")}},
		{Events: []contract.ChatEvent{scripted.Call("", "t", "")}},
	}})
	var got []string
	for range 5 {
		kinds, err := play(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, kinds...)
	}
	if diff := cmp.Diff([]string{"text", "tool_call", "text", "tool_call", "text"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestChatModelHangsUntilCancelled(t *testing.T) {
	m := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{{Events: []contract.ChatEvent{scripted.Text("thinking")}, Hang: true}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	kinds, err := play(ctx, m)
	if !errors.Is(err, context.DeadlineExceeded) || len(kinds) != 1 {
		t.Errorf("got %v, %v; want one text event then the deadline", kinds, err)
	}
}

func TestChatModelExpect(t *testing.T) {
	wrong := errors.New("the model was given no tools")
	m := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{{
		Expect: func(msgs []contract.ChatMessage, tools []contract.Tool) error {
			if len(tools) == 0 {
				return wrong
			}
			return nil
		},
		Events: []contract.ChatEvent{scripted.Text("never")},
	}}})
	if kinds, err := play(context.Background(), m); !errors.Is(err, wrong) || len(kinds) != 0 {
		t.Errorf("got %v, %v; want the expectation's error before any event", kinds, err)
	}
}

// Call decodes arguments as a provider does: "" is {}, non-JSON is absent.
func TestCallArguments(t *testing.T) {
	tests := []struct {
		args string
		want string // canonical, "" for absent
	}{
		{``, `{}`},
		{`{"b":1,"a":[true,null]}`, `{"a":[true,null],"b":1}`},
		{`{"a":`, ``},
		{`"just text"`, `"just text"`},
	}
	for _, tt := range tests {
		got := scripted.Call("id", "t", tt.args).ToolCall.Args
		if tt.want == "" {
			if got.IsValid() {
				t.Errorf("Call(%q) args = %s, want absent", tt.args, canonjson.Marshal(got))
			}
			continue
		}
		b, err := canonjson.Canonical(got)
		if err != nil || string(b) != tt.want {
			t.Errorf("Call(%q) args = %s, %v; want %s", tt.args, b, err, tt.want)
		}
	}
}

// A FromConversation script plays the turn the conversation it is given
// has reached — its number of assistant messages — whatever the model
// was asked before: two models (two processes) given one conversation
// play the same turn, and concurrent conversations each start at the
// first turn.
func TestChatModelFromConversation(t *testing.T) {
	turns := []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Text("a")}},
		{Events: []contract.ChatEvent{scripted.Call("c", "t", "")}},
		{Events: []contract.ChatEvent{scripted.Failure("f")}},
	}
	text := func(s string) *string { return &s }
	said := func(n int) []contract.ChatMessage {
		msgs := []contract.ChatMessage{{Role: contract.ChatSystem, Content: text("s")}, {Role: contract.ChatUser, Content: text("u")}}
		for range n {
			msgs = append(msgs, contract.ChatMessage{Role: contract.ChatAssistant, Content: text("x")},
				contract.ChatMessage{Role: contract.ChatUser, Content: text("y")})
		}
		return msgs
	}
	tests := []struct {
		name  string
		cycle bool
		said  int
		kinds []string
		err   error
	}{
		{"nothing said", false, 0, []string{"text"}, nil},
		{"one turn said", false, 1, []string{"tool_call"}, nil},
		{"two turns said", false, 2, []string{"failure"}, nil},
		{"past the script", false, 3, nil, scripted.ErrScriptExhausted},
		{"past the script, cycling", true, 4, []string{"tool_call"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for process := range 2 {
				m := scripted.NewChatModel(scripted.ChatScript{Turns: turns, Cycle: tt.cycle, FromConversation: true})
				for ask := range 2 { // asked again: the same turn
					var kinds []string
					var err error
					for e, e2 := range m.Turn(context.Background(), said(tt.said), nil) {
						if e2 != nil {
							err = e2
							break
						}
						kinds = append(kinds, string(e.Kind))
					}
					if diff := cmp.Diff(tt.kinds, kinds); diff != "" {
						t.Errorf("process %d, ask %d: events (-want +got):\n%s", process, ask, diff)
					}
					if !errors.Is(err, tt.err) {
						t.Errorf("process %d, ask %d: error %v, want %v", process, ask, err, tt.err)
					}
				}
				if m.Calls() != 2 {
					t.Errorf("Calls() = %d, want 2", m.Calls())
				}
			}
		})
	}
}
