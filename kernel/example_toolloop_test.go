package kernel_test

import (
	"context"
	"fmt"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/tools"
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

// A profile runs with typed Go tools: the profile gives the system prompt
// and the model, and declares the tools; the Go functions given must
// match its declarations exactly. A call whose arguments do not match a
// tool's inferred schema is refused before the tool runs, and the model
// reads why.
func ExampleRunToolLoop_profile() {
	agent, err := profile.Parse([]byte(`{"name":"stock-clerk","harness":"cli-base",
		"prompt":{"systemPrompt":"You answer stock questions."},
		"model":{"default":"scripted/clerk"},
		"tools":{"stock":true}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	type stockIn struct {
		SKU string `json:"sku" jsonschema:"the product's stock-keeping unit"`
	}
	stock, err := tools.NewTool("stock", "Units in stock of a product.", func(ctx context.Context, in stockIn) (int, error) {
		return map[string]int{"A-1": 12}[in.SKU], nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	model := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Call("c1", "stock", `{"item":"A-1"}`)}},
		{Events: []contract.ChatEvent{scripted.Call("c2", "stock", `{"sku":"A-1"}`)}},
		{Events: []contract.ChatEvent{scripted.Text("12 units of A-1.")}},
	}})
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model, Profile: agent, User: "How many A-1?", Tools: []contract.Tool{stock},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("system:", *res.Messages[0].Content)
	for _, m := range res.Messages {
		if m.Role == contract.ChatTool {
			fmt.Println(*m.Content)
		}
	}
	fmt.Println("answer:", res.FinalText)

	// A Go tool the profile does not declare is refused before the model
	// is called.
	_, err = kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model, Profile: agent, User: "How many A-1?", Tools: []contract.Tool{stock, tools.Must(tools.NewTool("reorder", "",
			func(ctx context.Context, in stockIn) (bool, error) { return true, nil }))},
	})
	fmt.Println(err)
	// Output:
	// system: You answer stock questions.
	// - stock → failed (invalid_arguments): the arguments do not match the input schema: unexpected additional properties ["item"]
	// - stock → ok: 12
	// answer: 12 units of A-1.
	// kernel: invalid options: Tools[1]: the profile does not declare tool reorder (add "reorder": true to its tools)
}
