package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

func main() {
	ctx := context.Background()
	path, err := sqlite.DefaultPath()
	if err != nil {
		fail(err)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fail(err)
	}
	defer st.Close()
	if err := toolLoop(ctx, os.Stdout, st); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tool-loop:", err)
	os.Exit(1)
}

// stock is the tool: how many units of a product are in stock.
var stock = contract.Tool{
	Name:        "stock",
	Description: "How many units of a product are in stock.",
	InputSchema: mustJSON(`{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}`),
	Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		sku, _ := args.Get("sku")
		units := map[string]float64{"A-1": 12, "B-2": 0}[sku.Str()]
		return canonjson.ObjectValue([]canonjson.Member{
			{Name: "sku", Value: sku},
			{Name: "units", Value: canonjson.NumberValue(units)},
		}), nil
	},
}

func mustJSON(s string) canonjson.Value {
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

func toolLoop(ctx context.Context, w io.Writer, st store.Store) error {
	// A scripted model stands in for a real one (providers/openai and
	// providers/anthropic implement the same contract.ChatModel).
	model := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Call("c1", "stock", `{"sku":"A-1"}`), scripted.Usage(50, 9, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Call("c2", "stock", `{"sku":"B-2"}`), scripted.Usage(71, 9, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Text("A-1: 12 in stock. B-2: sold out."), scripted.Usage(93, 11, contract.UsageDelta)}},
	}})
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
		fmt.Fprintf(w, "tool %s(%s) → %s\n", r.Call.Name, canonjson.Marshal(r.Call.Args), canonjson.Marshal(r.Outcome.Result))
	}
	fmt.Fprintf(w, "answer: %s\n", res.FinalText)
	fmt.Fprintf(w, "stop: %s after %d model turns; tokens in %s, out %s\n", res.StopReason, res.Turns, res.Usage.InputTokens, res.Usage.OutputTokens)
	return nil
}
