package supervise

import (
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/contract"
)

// askedConversation is a nested manager's conversation in which it asked
// n questions, each followed by a tool result, with a decision on every
// other one delivered to it.
func askedConversation(n int) ([]contract.ChatMessage, []string) {
	var msgs []contract.ChatMessage
	asked := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("q%d", i+1)
		asked[i] = id
		result := `{"questionId":"` + id + `","status":"queued-for-parent"}`
		msgs = append(msgs, contract.ChatMessage{Role: contract.ChatTool, Content: &result})
		if i%2 == 0 {
			d := decisionText(id, Decision{Kind: "answer", Answer: "yes"})
			msgs = append(msgs, contract.ChatMessage{Role: contract.ChatUser, Content: &d})
		}
	}
	return msgs, asked
}

// TestUndecided: the questions with no decision in the conversation are
// waiting; an id that is a prefix of another's is not confused with it.
func TestUndecided(t *testing.T) {
	msgs, asked := askedConversation(12)
	got := undecided(msgs, asked)
	for i, id := range asked {
		if want := i%2 == 1; got[id] != want {
			t.Errorf("%s waiting = %v, want %v", id, got[id], want)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d waiting, want 6: %v", len(got), got)
	}
}

// BenchmarkUndecided: reofferAsked's scan of a resumed nested manager's
// conversation for the decisions it already holds, at n and 10n
// questions asked: the cost should grow linearly.
func BenchmarkUndecided(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		msgs, asked := askedConversation(n)
		b.Run(fmt.Sprintf("asked=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if w := undecided(msgs, asked); len(w) != n/2 {
					b.Fatalf("%d waiting, want %d", len(w), n/2)
				}
			}
		})
	}
}
