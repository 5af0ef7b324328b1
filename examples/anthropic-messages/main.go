package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

func main() {
	model := os.Getenv("ANTHROPIC_MODEL")
	if model == "" {
		model = "anthropic/claude-sonnet-4-5-20250929"
	}
	opts := anthropic.Options{BaseURL: os.Getenv("ANTHROPIC_BASE_URL"), APIKey: os.Getenv("ANTHROPIC_API_KEY")}
	if err := greet(context.Background(), os.Stdout, opts, model, memory.New(nil)); err != nil {
		fmt.Fprintln(os.Stderr, "anthropic-messages:", err)
		os.Exit(1)
	}
}

// greeterProfile is a cli-base profile for model: a system prompt and an
// output ceiling (the request's max_tokens), nothing the API cannot
// honour.
func greeterProfile(model string) (*profile.Profile, error) {
	return profile.Parse([]byte(`{"name":"greeter","harness":"cli-base","model":{"provider":"anthropic","default":` +
		strconv.Quote(model) + `,"maxTotalOutputTokens":1024},"prompt":{"systemPrompt":"You are terse."}}`))
}

func nonEmpty(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
	return kernel.Verdict{Passed: out.Text != "", Reason: "the answer is not empty"}, nil
}

// greet runs "Say hello." with the greeter profile for model on the API
// opts describe, records it in st, and prints the run's status, answer,
// usage and models. It returns the run's error.
func greet(ctx context.Context, out io.Writer, opts anthropic.Options, model string, st store.Store) error {
	res, err := execute(ctx, opts, model, st)
	if res != nil {
		fmt.Fprintf(out, "status: %s (delivered %v)", res.Status, res.Delivered)
		if res.Reason != "" {
			fmt.Fprintf(out, ", %s", res.Reason)
		}
		fmt.Fprintf(out, "\nanswer: %s\n", res.Text)
		fmt.Fprintf(out, "tokens in %s, out %s\n", res.Usage.InputTokens, res.Usage.OutputTokens)
		served := res.Served.Model
		if served == "" {
			served = "unknown"
		}
		fmt.Fprintf(out, "requested %s, served %s\n", res.RequestedModel, served)
	}
	return err
}

// execute is greet's run: kernel.Execute through anthropic.NewProvider.
// The provider sends a profile's "anthropic/…" model as the bare id.
func execute(ctx context.Context, opts anthropic.Options, model string, st store.Store) (*kernel.Result, error) {
	p, err := anthropic.NewProvider(anthropic.ProviderOptions{Options: opts, StripModelPrefix: "anthropic/"})
	if err != nil {
		return nil, err
	}
	prof, err := greeterProfile(model)
	if err != nil {
		return nil, err
	}
	return kernel.Execute(ctx, kernel.Request{Profile: prof, Task: "Say hello.", Provider: p, Store: st, Check: nonEmpty})
}
