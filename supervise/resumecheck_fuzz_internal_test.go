package supervise

import (
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/agentrt/agentrt/ledger"
)

// FuzzAdoptJournaled feeds adoptJournaled run-started records decoded
// from arbitrary journal lines and arbitrary given budgets: it never
// panics, refuses only with a *ResumeMismatchError or ErrInvalidOptions,
// and what it adopts from a journal that holds a budget is never more
// than the journal holds (P7: a restart never mints capacity).
func FuzzAdoptJournaled(f *testing.F) {
	f.Add([]byte(`{"kind":"run-started","runId":"r","task":"ship","budget":{"tokens":100,"iterations":2},"managerDigest":"sha256:00"}`), int64(100), int64(0), "ship", "sha256:00")
	f.Add([]byte(`{"kind":"run-started","runId":"r","task":"ship"}`), int64(5), int64(5), "", "")
	f.Add([]byte(`{"kind":"run-started","budget":{"tokens":1,"resources":{"g/~":3}},"perWorker":{"microUsd":7}}`), int64(-1), int64(9), "x", "sha256:11")
	f.Fuzz(func(t *testing.T, line []byte, tokens, iterations int64, task, digest string) {
		var first Record
		if json.Unmarshal(line, &first) != nil {
			return
		}
		o := &Options{Budget: ledger.Budget{Iterations: &iterations}, PerWorker: ledger.Budget{Tokens: &tokens}}
		if tokens%2 == 0 {
			o.Budget.Tokens = &tokens
		}
		run, err := adoptJournaled(first, o, task, digest, slog.New(slog.DiscardHandler))
		var mismatch *ResumeMismatchError
		switch {
		case errors.As(err, &mismatch):
			if mismatch.Field == "" || mismatch.Pointer == "" || mismatch.Pointer[0] != '/' {
				t.Fatalf("a mismatch without its field or pointer: %+v", mismatch)
			}
			return
		case errors.Is(err, ErrInvalidOptions):
			return
		case err != nil:
			t.Fatalf("unexpected error %v", err)
		}
		if task != "" && run.task != task || task == "" && run.task != first.Task {
			t.Fatalf("task %q from given %q and journaled %q", run.task, task, first.Task)
		}
		if first.Budget == nil {
			return
		}
		j := first.Budget.budget()
		for _, ch := range [][2]*int64{{j.Tokens, run.budget.Tokens}, {j.Iterations, run.budget.Iterations}, {j.MicroUSD, run.budget.MicroUSD}} {
			if (ch[0] == nil) != (ch[1] == nil) || ch[0] != nil && *ch[0] != *ch[1] {
				t.Fatalf("adopted budget %+v is not the journaled %+v", run.budget, j)
			}
		}
	})
}
