package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
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
	if err := quickstart(ctx, os.Stdout, st); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "quickstart:", err)
	os.Exit(1)
}

const noteWriter = `{
  "name": "note-writer",
  "harness": "cli-base",
  "model": { "provider": "scripted", "default": "scripted/note-writer" }
}`

// Events is the iteration's output: the worker's events, as they came.
type Events = []contract.EnvironmentEvent

func quickstart(ctx context.Context, w io.Writer, st store.Store) error {
	p, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		return err
	}
	worker := scripted.InProcess(func(context.Context, string, scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		note := canonjson.ObjectValue([]canonjson.Member{{Name: "note", Value: canonjson.StringValue("Shipped one-click restore.")}})
		return []contract.EnvironmentEvent{{Type: "result", Data: map[string]canonjson.Value{"result": note}}}, nil
	})
	result, err := kernel.Rounds(ctx, kernel.RoundsOptions[string, Events]{
		Task: "Write a one-line release note for one-click restore.",
		Driver: kernel.Driver[string, Events]{
			Plan: func(_ context.Context, task string, history []kernel.Iteration[string, Events]) ([]string, error) {
				if len(history) == 0 {
					return []string{task}, nil
				}
				return nil, nil
			},
			Decide: func(context.Context, []kernel.Iteration[string, Events]) (kernel.Decision, error) {
				return kernel.DecisionDone, nil
			},
		},
		Agents:   []kernel.Agent[string]{{Profile: p, Prompt: func(task string) string { return task }}},
		Parse:    func(out kernel.Outcome) (Events, error) { return out.Events, nil },
		Provider: worker,
		Store:    st,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "decision: %s — %d iteration(s)\n", result.Decision, len(result.Iterations))
	return nil
}
