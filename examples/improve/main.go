package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve/search"
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
	runDir, err := os.MkdirTemp("", "agentrt-improve-")
	if err != nil {
		fail(err)
	}
	if _, err := run(ctx, os.Stdout, st, runDir); err != nil {
		fail(err)
	}
	fmt.Println("journal:", runDir)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "improve:", err)
	os.Exit(1)
}

// The base agent triages support tickets, but answers in a sentence
// where the help desk wants the bare category.
const basePrompt = "Triage the support ticket into billing, account or bug."

// tickets are the cases: the train and selection ones are the search's,
// the test ones only Improve's own final comparison ever runs.
var tickets = []search.Scenario{
	{ID: "train-1", Input: "I want a refund for last month", Expected: "billing", Partition: search.Train},
	{ID: "train-2", Input: "I forgot my password", Expected: "account", Partition: search.Train},
	{ID: "select-1", Input: "The app crashes on start", Expected: "bug", Partition: search.Selection},
	{ID: "select-2", Input: "Refund my duplicate charge", Expected: "billing", Partition: search.Selection},
	{ID: "test-1", Input: "Password reset mail never arrives", Expected: "account", Partition: search.Test},
	{ID: "test-2", Input: "Crash when I upload a photo", Expected: "bug", Partition: search.Test},
	{ID: "test-3", Input: "Please refund the annual plan", Expected: "billing", Partition: search.Test},
	{ID: "test-4", Input: "My password no longer works", Expected: "account", Partition: search.Test},
}

// agentModel is the scripted agent: it finds the category by keyword and
// says it in a sentence, or as the bare word when its system prompt asks
// for one word. Each turn reports its tokens and a cost.
func agentModel() contract.ChatModel {
	return scripted.NewReplyModel(func(messages []contract.ChatMessage, _ []contract.Tool) []contract.ChatEvent {
		system, user := text(messages, contract.ChatSystem), strings.ToLower(text(messages, contract.ChatUser))
		category := "bug"
		switch {
		case strings.Contains(user, "refund"):
			category = "billing"
		case strings.Contains(user, "password"):
			category = "account"
		}
		answer := "This ticket is about " + category + "."
		if strings.Contains(system, "one word") {
			answer = category
		}
		return []contract.ChatEvent{scripted.Text(answer), scripted.UsageCost(40, 8, 0.0001)}
	})
}

// proposerModel is the scripted proposer of the greedy method: a variant
// that changes nothing useful, then the one that helps.
func proposerModel() contract.ChatModel {
	turn := func(prompt string) scripted.ChatTurn {
		return scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text(prompt), scripted.UsageCost(120, 30, 0.0005)}}
	}
	return scripted.NewChatModel(scripted.ChatScript{Cycle: true, Turns: []scripted.ChatTurn{
		turn(basePrompt + " Be polite."),
		turn(basePrompt + " Reply with one word: the category."),
	}})
}

func text(messages []contract.ChatMessage, role contract.ChatRole) string {
	for _, m := range messages {
		if m.Role == role && m.Content != nil {
			return *m.Content
		}
	}
	return ""
}

func run(ctx context.Context, out io.Writer, st store.Store, runDir string) (search.Result, error) {
	base := &profile.Profile{Name: profile.Ptr("triage"), Prompt: &profile.Prompt{SystemPrompt: profile.Ptr(basePrompt)}}
	res, err := search.Improve(ctx, base, search.Options{
		Surface:      search.SurfacePrompt,
		ExecutionRef: "scripted:triage",
		Method:       search.Greedy{Model: proposerModel(), Store: st, Rounds: 2, Variants: 2},
		Scenarios:    tickets,
		Judges:       []search.Judge{search.Exact{}},
		Agent:        search.KernelAgent{Model: agentModel(), Store: st},
		Store:        st,
		RunDir:       runDir,
		CostCeiling:  ptr(0.05),
		MinimumLift:  0.25,
		Seed:         1,
	})
	if err != nil {
		return search.Result{}, err
	}
	fmt.Fprintf(out, "decision: %s\n", res.Decision)
	fmt.Fprintf(out, "candidate: %q\n", *res.Candidate.Profile.Prompt.SystemPrompt)
	fmt.Fprintf(out, "test: baseline %.2f, candidate %.2f over %d cases; lift %+.2f, 95%% interval [%+.2f, %+.2f]\n",
		res.BaselineScore, res.CandidateScore, len(res.Test), res.Lift, res.LiftInterval.Lower, res.LiftInterval.Upper)
	fmt.Fprintf(out, "searched %d candidates; spent $%.4f (known %t)\n", len(res.Population), res.Spend.Total.Value, res.Spend.Total.Known())
	fmt.Fprintf(out, "base prompt unchanged: %t; nothing activated\n", *base.Prompt.SystemPrompt == basePrompt)
	return res, nil
}

func ptr[T any](v T) *T { return &v }
