package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
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
	if err := summarize(ctx, os.Stdout, st, ""); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "runtime-run:", err)
	os.Exit(1)
}

var chapters = []string{
	"Restores used to take a ticket and a day.",
	"Now a restore is one click and takes a minute.",
	"Old snapshots stay until the retention window ends.",
}

// callModel stands in for the caller's own model client: it returns a
// summary and what the call spent as the API reported it. The third call
// reports no cost, as some APIs do not.
func callModel(i int, text string) (string, ledger.Usage) {
	u := ledger.Usage{
		InputTokens:  ledger.ExactAmount(int64(len(strings.Fields(text)) * 4)),
		OutputTokens: ledger.ExactAmount[int64](6),
	}
	if i < 2 {
		u.CostUSD = ledger.ExactAmount(0.0004)
	}
	return strings.SplitN(text, " ", 4)[0] + "…", u
}

// summarize drives the work itself and records it as a runtime run.
func summarize(ctx context.Context, w io.Writer, st store.Store, runID string) error {
	run, err := kernel.StartRuntimeRun(ctx, kernel.RuntimeRunOptions{
		WorkspaceID: "acme", TaskID: "summarize-release", RunID: runID, Store: st,
	})
	if err != nil {
		return err
	}
	var parts []string
	for i, c := range chapters {
		if err := run.Context().Err(); err != nil {
			// Another process asked to cancel the run (agentrt runs cancel).
			return run.Complete(kernel.RuntimeCompletion{Status: store.StatusCancelled, Error: err.Error()})
		}
		summary, usage := callModel(i, c)
		parts = append(parts, summary)
		if err := run.Observe(kernel.RuntimeEvent{Type: kernel.RuntimeEventLLMCall, Model: "house-model", Usage: usage}); err != nil {
			return err
		}
	}
	if err := run.Complete(kernel.RuntimeCompletion{Status: store.StatusCompleted, ResultSummary: strings.Join(parts, " ")}); err != nil {
		return err
	}
	rec, err := kernel.ReadRun(ctx, st, run.ID())
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "run %s %s after %d model calls\n", rec.ID, rec.Status, rec.Runtime.Cost.LLMCalls)
	fmt.Fprintf(w, "spent: input %s, output %s, cost %s USD\n", rec.Spend.InputTokens, rec.Spend.OutputTokens, rec.Spend.CostUSD)
	fmt.Fprintf(w, "summary: %s\n", rec.Runtime.ResultSummary)
	return nil
}
