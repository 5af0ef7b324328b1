package search

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// KernelAgent runs a candidate profile on a scenario as one kernel tool
// loop (kernel.RunToolLoop): the profile's system prompt and model, the
// scenario's input as the user message, Tools offered as the profile
// declares them. With Store set every run is recorded there, so its
// spend is in the run's ledger.
type KernelAgent struct {
	Model contract.ChatModel
	Tools []contract.Tool
	Store store.Store
	// Timeout bounds one run (default 2 minutes).
	Timeout time.Duration
}

// Run implements Agent. A loop that did not complete is an error: a
// failure is never scored as an answer.
func (a KernelAgent) Run(ctx context.Context, p *profile.Profile, sc Scenario) (Output, error) {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{
		Model: a.Model, Profile: p, User: sc.Input, Tools: a.Tools, Store: a.Store, Kind: "improve-measure",
	})
	if err != nil {
		return Output{}, err
	}
	if res.StopReason != kernel.StopCompleted {
		return Output{}, fmt.Errorf("the run %s stopped %s before it completed", res.RunID, res.StopReason)
	}
	turns := int64(res.Turns)
	return Output{Text: res.FinalText, RunID: res.RunID, Usage: res.Usage, ModelCalls: &turns}, nil
}
