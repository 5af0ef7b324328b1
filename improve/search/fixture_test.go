package search_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
)

// The fixtures: an agent whose scripted model repeats the user's words,
// in uppercase when its system prompt says so; cases expecting the
// uppercase words; a proposer that first suggests a useless variant and
// then the winning one.

const (
	basePrompt    = "Repeat the user's words."
	politePrompt  = "Repeat the user's words, politely."
	winningPrompt = "Repeat the user's words in uppercase."
)

func baseProfile() *profile.Profile {
	return &profile.Profile{
		Name:   profile.Ptr("echo"),
		Prompt: &profile.Prompt{SystemPrompt: profile.Ptr(basePrompt)},
		Tags:   []string{"fixture"},
	}
}

// echoModel answers as the fixture agent; cost nil reports no cost.
func echoModel(cost *float64) *scripted.ReplyModel {
	return scripted.NewReplyModel(func(messages []contract.ChatMessage, _ []contract.Tool) []contract.ChatEvent {
		var system, user string
		for _, m := range messages {
			if m.Content == nil {
				continue
			}
			switch m.Role {
			case contract.ChatSystem:
				system = *m.Content
			case contract.ChatUser:
				user = *m.Content
			}
		}
		answer := user
		if strings.Contains(system, "uppercase") {
			answer = strings.ToUpper(user)
		}
		usage := scripted.Usage(10, 5, contract.UsageDelta)
		if cost != nil {
			usage = scripted.UsageCost(10, 5, *cost)
		}
		return []contract.ChatEvent{scripted.Text(answer), usage}
	})
}

// proposer plays the greedy method's model: a useless variant, then the
// winning one, over and over.
func proposer(cost float64) *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Cycle: true, Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Text(politePrompt), scripted.UsageCost(50, 20, cost)}},
		{Events: []contract.ChatEvent{scripted.Text(winningPrompt), scripted.UsageCost(50, 20, cost)}},
	}})
}

func scenarios() []search.Scenario {
	var out []search.Scenario
	add := func(p search.Partition, ids ...string) {
		for _, id := range ids {
			in := "hello " + id
			out = append(out, search.Scenario{ID: id, Input: in, Expected: strings.ToUpper(in), Partition: p})
		}
	}
	add(search.Train, "t1", "t2")
	add(search.Selection, "s1", "s2")
	add(search.Test, "x1", "x2", "x3", "x4", "x5", "x6")
	return out
}

func ptr[T any](v T) *T { return &v }

// countingAgent counts the agent's runs; failAfter > 0 fails every run
// after that many (a process killed mid-measurement).
type countingAgent struct {
	inner     search.Agent
	calls     atomic.Int64
	failAfter int64
}

func (a *countingAgent) Run(ctx context.Context, p *profile.Profile, sc search.Scenario) (search.Output, error) {
	n := a.calls.Add(1)
	if a.failAfter > 0 && n > a.failAfter {
		return search.Output{}, errKilled
	}
	return a.inner.Run(ctx, p, sc)
}

type killedError struct{}

func (killedError) Error() string { return "killed" }

var errKilled error = killedError{}

// options are the fixture's options with an agent and proposer at the
// given costs (nil: unreported).
func options(t testing.TB, agentCost *float64) (search.Options, *countingAgent) {
	t.Helper()
	agent := &countingAgent{inner: search.KernelAgent{Model: echoModel(agentCost)}}
	return search.Options{
		Surface:      search.SurfacePrompt,
		ExecutionRef: "scripted:echo",
		Method:       search.Greedy{Model: proposer(0.002)},
		Scenarios:    scenarios(),
		Judges:       []search.Judge{search.Exact{}},
		Agent:        agent,
		Resamples:    500,
		Seed:         7,
		MinimumLift:  0.1,
	}, agent
}

func noUsage() ledger.Usage { return ledger.NoUsage() }
