package fleet

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// A turn's usage is counted once in what a fleet run reports it spent,
// whatever its attempts (issue 14, Done-when: "ledger totals equal the
// sum of run usage"). A worker died once its turn had completed, before
// recording its end: its attempt's ledger holds the turn's usage (a
// progress entry, a floor). The worker that takes the run over
// re-attaches to the same environment and turn, which the provider
// replays from its start, usage included: its attempt's record states
// the whole turn's usage. Both are the one turn: the run reports it
// once, exact — not the sum of the two attempts. A turn that died with
// its worker and ran again in a new environment is two turns, and both
// spent: their usage adds up.
func TestTakeoverCountsATurnsUsageOnce(t *testing.T) {
	f, _ := openTestFleet(t)
	pv, err := canonjson.Decode([]byte(reattachProfile))
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.FromValue(pv)
	if err != nil {
		t.Fatal(err)
	}
	const script = `{"turns":[{"repeat":true,"steps":[{"usage":{"inputTokens":9,"outputTokens":2},"mode":"cumulative"},{"text":"working "},{"delayMs":1500},{"text":"done"}]}]}`
	for _, tc := range []struct {
		name string
		// inCheck: the dead worker died once its turn completed;
		// otherwise mid-turn, after its usage was reported.
		inCheck   bool
		wantInput ledger.Amount[int64]
		// wantTokens is the spend's tokens; nil: unknown (a floor).
		wantTokens *int64
		wantTurns  int64
	}{
		{name: "re-attached to the same turn: counted once", inCheck: true, wantInput: ledger.ExactAmount[int64](9), wantTokens: new(int64(11)), wantTurns: 1},
		// The dead worker's turn died mid-way: what it reported is a
		// floor, and so is the sum.
		{name: "the turn ran again in a new environment: both count", wantInput: ledger.Amount[int64]{Value: 18, Reported: true}, wantTurns: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			prov := newEnvLedger(t, script)
			sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "t", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			deadHolder(t, f, sub.RunID)
			st := &stallAfter{Store: f.store}
			check := kernel.ExpectCheck("")
			if tc.inCheck {
				check = func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
					st.stall.Store(true)
					time.Sleep(kernel.MinLeaseTTL + 500*time.Millisecond)
					return kernel.ExpectCheck("")(ctx, out)
				}
			} else {
				st.after = 2 // the usage event and the first text
			}
			dead, err := kernel.Execute(ctx, kernel.Request{Profile: p, Task: "t", Provider: &pinned{Provider: prov, turn: turnID(sub.RunID)},
				Store: st, Check: check, RunID: attemptID(sub.RunID, 1), LeaseTTL: kernel.MinLeaseTTL, CleanupTimeout: 300 * time.Millisecond})
			if dead == nil || dead.Status != store.StatusInterrupted {
				t.Fatalf("the dead worker's attempt: %+v, %v; want interrupted", dead, err)
			}
			deadRec, err := kernel.ReadRun(ctx, f.store, attemptID(sub.RunID, 1))
			if err != nil || deadRec.Spend.InputTokens.Value != 9 {
				t.Fatalf("the dead attempt's ledger states %v input tokens (%v); want its reported 9", deadRec.Spend.InputTokens, err)
			}
			w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": prov}, LeaseTTL: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.execute(ctx, sub.RunID, ""); err != nil {
				t.Fatal(err)
			}
			r, err := f.Get(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != store.StatusCompleted || len(r.Attempts) != 2 || prov.Turns() != tc.wantTurns {
				t.Fatalf("run %s, attempts %+v, %d turns; want completed in two attempts, %d turns", r.Status, r.Attempts, prov.Turns(), tc.wantTurns)
			}
			res, err := (&Executor{Fleet: f}).result(ctx, supervise.Work{RunID: "sv", Node: "n"}, r)
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage == nil || res.Usage.InputTokens != tc.wantInput || !sameCount(res.Spent.Tokens, tc.wantTokens) {
				t.Errorf("reported usage %+v, spent tokens %v; want %v input tokens and spent tokens %v", res.Usage, count(res.Spent.Tokens), tc.wantInput, count(tc.wantTokens))
			}
		})
	}
}

func sameCount(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// count prints a count that may be unknown.
func count(n *int64) string {
	if n == nil {
		return "unknown"
	}
	return strconv.FormatInt(*n, 10)
}
