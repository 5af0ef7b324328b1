// Command consumer is an external module's first program against agentrt:
// it imports the module as any user would, from a proxy, and runs a tool
// loop with the scripted chat model, recorded in the in-memory run store.
// The external-consumer test (package consumertest) builds and runs it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	schema, err := canonjson.Decode([]byte(`{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}`))
	if err != nil {
		return err
	}
	stock := contract.Tool{
		Name:        "stock",
		Description: "How many units of a product are in stock.",
		InputSchema: schema,
		Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
			sku, _ := args.Get("sku")
			units := map[string]float64{"A-1": 12, "B-2": 0}[sku.Str()]
			return canonjson.ObjectValue([]canonjson.Member{
				{Name: "sku", Value: sku},
				{Name: "units", Value: canonjson.NumberValue(units)},
			}), nil
		},
	}
	model := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Call("c1", "stock", `{"sku":"A-1"}`), scripted.Usage(50, 9, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Call("c2", "stock", `{"sku":"B-2"}`), scripted.Usage(71, 9, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Text("A-1: 12 in stock. B-2: sold out."), scripted.Usage(93, 11, contract.UsageDelta)}},
	}})
	st := memory.New(nil)
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{
		Model:  model,
		System: "You answer stock questions with the stock tool.",
		User:   "Are A-1 and B-2 in stock?",
		Tools:  []contract.Tool{stock},
		Store:  st,
	})
	if err != nil {
		return err
	}
	for _, r := range res.ToolResults {
		fmt.Printf("tool %s(%s) -> %s\n", r.Call.Name, canonjson.Marshal(r.Call.Args), canonjson.Marshal(r.Outcome.Result))
	}
	fmt.Printf("answer: %s\n", res.FinalText)
	fmt.Printf("stop: %s after %d model turns; tokens in %s, out %s\n", res.StopReason, res.Turns, res.Usage.InputTokens, res.Usage.OutputTokens)
	runs, err := st.ListRuns(ctx, store.ListOptions{})
	if err != nil {
		return err
	}
	for _, r := range runs {
		fmt.Printf("stored run: kind %s, status %s\n", r.Kind, r.Status)
	}
	return nil
}
