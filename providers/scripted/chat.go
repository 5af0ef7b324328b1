package scripted

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// ChatScript is what a scripted chat model plays: Turns in order, one per
// call of Turn, or, with FromConversation, the turn the conversation it
// is given has reached.
type ChatScript struct {
	// Turns play in order, one per call of Turn.
	Turns []ChatTurn
	// Cycle starts the script over after its last turn; without it, a
	// turn asked for beyond the script fails with ErrScriptExhausted.
	Cycle bool
	// FromConversation makes the model stateless, as a real model is:
	// each call plays the turn whose index is the number of assistant
	// messages in the messages it is given (Turns[0] for a conversation
	// the model has not spoken in yet), whatever was asked before. A
	// conversation resumed from a record — by a new ChatModel in
	// another process — goes on from where it was instead of from the
	// script's first turn, and concurrent conversations each play the
	// script on their own. Without it the model keeps one position in
	// the script, shared by every caller.
	FromConversation bool
}

// ChatTurn is one scripted model turn: its events, played in order with
// no latency, and how the turn ends.
type ChatTurn struct {
	// Events are yielded in order.
	Events []contract.ChatEvent
	// Expect, when set, sees what the turn was given before it plays; an
	// error it returns is the turn's stream error (a test's assertion
	// about the transcript).
	Expect func(messages []contract.ChatMessage, tools []contract.Tool) error
	// Break ends the turn after its events with ErrTransport, as a
	// connection that dies mid-turn.
	Break bool
	// Hang, after the events, waits for the caller's context to end and
	// then yields its error, as a model that never finishes.
	Hang bool
}

// ErrScriptExhausted is the stream error of a turn the script does not
// have.
var ErrScriptExhausted = errors.New("scripted: the chat script has no turn left")

// ChatModel is a scripted contract.ChatModel: deterministic, offline, with
// zero latency. It is safe for concurrent use; concurrent callers share
// one position in the script unless the script is FromConversation.
type ChatModel struct {
	script ChatScript
	mu     sync.Mutex
	next   int
	calls  int
}

var _ contract.ChatModel = (*ChatModel)(nil)

// NewChatModel returns a chat model playing script.
func NewChatModel(script ChatScript) *ChatModel { return &ChatModel{script: script} }

// Calls returns how many turns were asked for.
func (m *ChatModel) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Turn implements contract.ChatModel: it plays the script's next turn.
func (m *ChatModel) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.mu.Lock()
	m.calls++
	var i int
	var ok bool
	if m.script.FromConversation {
		i = assistantTurns(messages)
		if m.script.Cycle && len(m.script.Turns) > 0 {
			i %= len(m.script.Turns)
		}
		ok = i < len(m.script.Turns)
	} else {
		i, ok = m.next, m.next < len(m.script.Turns)
		if ok {
			m.next++
			if m.script.Cycle && m.next == len(m.script.Turns) {
				m.next = 0
			}
		}
	}
	m.mu.Unlock()
	return func(yield func(contract.ChatEvent, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(contract.ChatEvent{}, err)
			return
		}
		if !ok {
			yield(contract.ChatEvent{}, ErrScriptExhausted)
			return
		}
		t := &m.script.Turns[i]
		if t.Expect != nil {
			if err := t.Expect(messages, tools); err != nil {
				yield(contract.ChatEvent{}, err)
				return
			}
		}
		for _, e := range t.Events {
			if !yield(e, nil) {
				return
			}
		}
		switch {
		case t.Break:
			yield(contract.ChatEvent{}, ErrTransport)
		case t.Hang:
			<-ctx.Done()
			yield(contract.ChatEvent{}, ctx.Err())
		}
	}
}

// assistantTurns is how many assistant messages messages holds: the
// turns a model already took in that conversation.
func assistantTurns(messages []contract.ChatMessage) int {
	n := 0
	for _, msg := range messages {
		if msg.Role == contract.ChatAssistant {
			n++
		}
	}
	return n
}

// Text is a text event.
func Text(s string) contract.ChatEvent {
	return contract.ChatEvent{Kind: contract.ChatText, Text: s}
}

// Call is a tool-call event whose arguments are decoded from argsJSON as a
// provider decodes a model's: "" is an empty object, and text that is not
// JSON is the absent Value.
func Call(id, name, argsJSON string) contract.ChatEvent {
	args := canonjson.ObjectValue(nil)
	if argsJSON != "" {
		args, _ = canonjson.Decode([]byte(argsJSON))
	}
	return contract.ChatEvent{Kind: contract.ChatToolCall, ToolCall: contract.ToolCall{ID: id, Name: name, Args: args}}
}

// Usage is a usage report of input and output tokens aggregating by mode
// ("" is an absent mode: unknown aggregation).
func Usage(input, output int64, mode contract.UsageMode) contract.ChatEvent {
	return contract.ChatEvent{Kind: contract.ChatUsage, Usage: &contract.TokenUsage{InputTokens: input, OutputTokens: output}, UsageMode: mode}
}

// Served is the provider's report of the model that served the turn.
func Served(model string) contract.ChatEvent {
	return contract.ChatEvent{Kind: contract.ChatServed, Model: model}
}

// Failure is an in-band failure event: the model says the turn failed.
func Failure(message string) contract.ChatEvent {
	return contract.ChatEvent{Kind: contract.ChatFailure, Failure: message}
}
