package kernel_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
)

// A model calls one tool, reads its result, and answers (checklist FD-03).
func ExampleRunToolLoop() {
	weather := contract.Tool{
		Name:        "weather",
		Description: "The current weather in a city.",
		Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
			city, _ := args.Get("city")
			return canonjson.ObjectValue([]canonjson.Member{
				{Name: "city", Value: city},
				{Name: "sky", Value: canonjson.StringValue("clear")},
			}), nil
		},
	}
	model := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{
			scripted.Call("call_1", "weather", `{"city":"Lisbon"}`),
			scripted.Usage(40, 8, contract.UsageDelta),
		}},
		{Events: []contract.ChatEvent{
			scripted.Text("It is clear in Lisbon."),
			scripted.Usage(61, 7, contract.UsageDelta),
		}},
	}})

	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model:  model,
		System: "You answer questions about the weather.",
		User:   "How is the weather in Lisbon?",
		Tools:  []contract.Tool{weather},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stop:", res.StopReason, "after", res.Turns, "turns")
	for _, m := range res.Messages[1:] {
		content := "null"
		if m.Content != nil {
			content = *m.Content
		}
		fmt.Printf("%s %s %d tool call(s): %s\n", m.Role, m.ToolCallID, len(m.ToolCalls), content)
	}
	fmt.Println("answer:", res.FinalText)
	fmt.Println("tokens in/out:", res.Usage.InputTokens, res.Usage.OutputTokens)
	// Output:
	// stop: completed after 2 turns
	// user  0 tool call(s): How is the weather in Lisbon?
	// assistant  1 tool call(s): null
	// tool call_1 0 tool call(s): - weather → ok: {"city":"Lisbon","sky":"clear"}
	// assistant  0 tool call(s): It is clear in Lisbon.
	// answer: It is clear in Lisbon.
	// tokens in/out: 101 15
}
