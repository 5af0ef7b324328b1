package scripted_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

// TestReplyModel: each turn is computed from the transcript it is given,
// calls are counted, and a done context yields its error.
func TestReplyModel(t *testing.T) {
	m := scripted.NewReplyModel(func(messages []contract.ChatMessage, _ []contract.Tool) []contract.ChatEvent {
		return []contract.ChatEvent{scripted.Text("echo: " + *messages[len(messages)-1].Content), scripted.UsageCost(1, 2, 0.5)}
	})
	hi := "hi"
	var text string
	var cost float64
	for e, err := range m.Turn(context.Background(), []contract.ChatMessage{{Role: contract.ChatUser, Content: &hi}}, nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case contract.ChatText:
			text += e.Text
		case contract.ChatUsage:
			cost = *e.Usage.Cost
		}
	}
	if text != "echo: hi" || cost != 0.5 || m.Calls() != 1 {
		t.Errorf("text %q cost %v calls %d", text, cost, m.Calls())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, err := range m.Turn(ctx, nil, nil) {
		if err == nil {
			t.Error("a cancelled turn yielded an event")
		}
	}
}
