package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/store"
)

func main() {
	model := os.Getenv("OPENAI_MODEL")
	if model == "" {
		model = "gpt-5.2"
	}
	// OPENAI_API=responses speaks the Responses API instead of Chat
	// Completions.
	opts := openai.Options{BaseURL: os.Getenv("OPENAI_BASE_URL"), APIKey: os.Getenv("OPENAI_API_KEY"), Model: model,
		API: openai.API(os.Getenv("OPENAI_API"))}
	if err := weatherLoop(context.Background(), os.Stdout, opts, nil); err != nil {
		fmt.Fprintln(os.Stderr, "openai-compatible:", err)
		os.Exit(1)
	}
}

// weatherTool is the tool: the current weather of a city (a fixed
// answer).
func weatherTool() contract.Tool {
	schema, _ := canonjson.Decode([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	answer, _ := canonjson.Decode([]byte(`{"celsius":4,"sky":"rain"}`))
	return contract.Tool{Name: "get_weather", Description: "Current weather for a city.", InputSchema: schema,
		Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) { return answer, nil }}
}

// weatherLoop asks the model about Oslo's weather, lets it call the tool,
// and prints the calls, the answer, the stop, the usage and the served
// models; the loop is recorded in st when it is not nil.
func weatherLoop(ctx context.Context, out io.Writer, opts openai.Options, st store.Store) error {
	m, err := openai.New(opts)
	if err != nil {
		return err
	}
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{
		Model: m, System: "Use the tools.", User: "What is the weather in Oslo?",
		Tools: []contract.Tool{weatherTool()}, Store: st,
		// A turn the endpoint reports serving another model fails the
		// loop (served-model-mismatch).
		RequestedModel: opts.Model,
	})
	if res != nil {
		for _, r := range res.ToolResults {
			fmt.Fprintf(out, "tool %s(%s) → %s\n", r.Call.Name, canonjson.Marshal(r.Call.Args), canonjson.Marshal(r.Outcome.Result))
		}
		fmt.Fprintf(out, "answer: %s\n", res.FinalText)
		fmt.Fprintf(out, "stop: %s after %d model turns; tokens in %s, out %s\n", res.StopReason, res.Turns,
			res.Usage.InputTokens, res.Usage.OutputTokens)
		fmt.Fprintf(out, "requested %s, served %v\n", opts.Model, res.ServedModels)
	}
	return err
}
