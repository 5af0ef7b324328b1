package chatprovider_test

import (
	"context"
	"fmt"
	"iter"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/chatprovider"
)

// A third-party model API becomes a full provider: implement
// contract.ChatModel for one turn, and let chatprovider do the rest —
// environments, profile checks, stream events with a terminal, usage and
// the served model.
func ExampleNew() {
	echo := contract.ChatModelFunc(func(ctx context.Context, msgs []contract.ChatMessage, _ []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
		return func(yield func(contract.ChatEvent, error) bool) {
			last := msgs[len(msgs)-1]
			_ = yield(contract.ChatEvent{Kind: contract.ChatServed, Model: "echo-1"}, nil) &&
				yield(contract.ChatEvent{Kind: contract.ChatText, Text: "you said: " + *last.Content}, nil) &&
				yield(contract.ChatEvent{Kind: contract.ChatUsage, Usage: &contract.TokenUsage{InputTokens: 3, OutputTokens: 4}, UsageMode: contract.UsageCumulative}, nil)
		}
	})
	p, err := chatprovider.New(chatprovider.Config{
		Name: "echo", Vendor: "echo", Usage: true, DefaultModel: "echo-1",
		Dispatch: func(chatprovider.Settings) (chatprovider.Turn, error) { return chatprovider.Turn{Model: echo}, nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	name := "greeter"
	env, err := p.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: &name, Harness: "cli-base"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Destroy(ctx)
	prompt := "hello"
	for e, err := range env.Stream(ctx, &contract.TurnInput{Prompt: &prompt}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if kind, ok := contract.EnvironmentEventTerminal(e); ok {
			fmt.Println("terminal:", kind)
			continue
		}
		if n := e.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
			fmt.Println("text:", *n.MessagePartUpdated.Delta)
		}
		if u, _, ok := e.UsageReport(); ok {
			fmt.Println("usage:", u.InputTokens, "in,", u.OutputTokens, "out")
		}
	}
	// Output:
	// text: you said: hello
	// usage: 3 in, 4 out
	// terminal: completed
}
