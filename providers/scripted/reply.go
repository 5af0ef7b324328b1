package scripted

import (
	"context"
	"iter"
	"sync"

	"github.com/agentrt/agentrt/contract"
)

// ReplyFunc computes a scripted turn's events from the transcript it is
// given. It must be deterministic for the model to be.
type ReplyFunc func(messages []contract.ChatMessage, tools []contract.Tool) []contract.ChatEvent

// ReplyModel is a contract.ChatModel whose every turn is computed by a
// ReplyFunc: offline and deterministic like ChatModel, but answering what
// it is asked (a scripted agent whose answer depends on its prompt). It
// is safe for concurrent use when its function is.
type ReplyModel struct {
	reply ReplyFunc
	mu    sync.Mutex
	calls int
}

var _ contract.ChatModel = (*ReplyModel)(nil)

// NewReplyModel returns a chat model answering with reply.
func NewReplyModel(reply ReplyFunc) *ReplyModel { return &ReplyModel{reply: reply} }

// Calls returns how many turns were asked for.
func (m *ReplyModel) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Turn implements contract.ChatModel.
func (m *ReplyModel) Turn(ctx context.Context, messages []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.mu.Lock()
	m.calls++
	m.mu.Unlock()
	return func(yield func(contract.ChatEvent, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(contract.ChatEvent{}, err)
			return
		}
		for _, e := range m.reply(messages, tools) {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// UsageCost is a usage report of input and output tokens with a cost in
// US dollars, aggregating as deltas.
func UsageCost(input, output int64, costUSD float64) contract.ChatEvent {
	return contract.ChatEvent{Kind: contract.ChatUsage, Usage: &contract.TokenUsage{InputTokens: input, OutputTokens: output, Cost: &costUSD}, UsageMode: contract.UsageDelta}
}
