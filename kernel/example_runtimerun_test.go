package kernel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// A runtime run records work its caller drives itself: every model call
// it observes is in the cost ledger, and the record says how it ended.
func ExampleStartRuntimeRun() {
	ctx := context.Background()
	st := memory.New(nil)
	run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{
		WorkspaceID: "acme", TaskID: "summarize", RunID: "summarize-1", Store: st,
	})
	if err != nil {
		log.Fatal(err)
	}
	// The caller calls its model and reports what the call spent; an
	// unreported channel (here the cost) stays unknown, never zero.
	run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Model: "gpt-4.1-mini", Usage: ledger.Usage{
		InputTokens: ledger.ExactAmount[int64](1200), OutputTokens: ledger.ExactAmount[int64](300),
	}})
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted, ResultSummary: "3 bullet points"}); err != nil {
		log.Fatal(err)
	}
	rec, _ := kernel.ReadRun(ctx, st, "summarize-1")
	fmt.Println(rec.Status, rec.Runtime.Cost.LLMCalls, rec.Spend.InputTokens, rec.Spend.CostUSD)
	// Output: completed 1 1200 unknown
}
