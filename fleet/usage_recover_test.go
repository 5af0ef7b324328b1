package fleet_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// Issue 14 (Done-when: "ledger totals equal the sum of run usage"): a
// turn in doubt (its stream cut after its first event, before any usage
// it reported reached its attempt, whose usage is unknown) is settled by
// Recover, which re-attaches to the same turn in the same environment;
// the provider replays it from its start, and the recovery's attempt
// records the whole turn's usage, exact. What the fleet run reports it
// spent (fleet.Executor, as a resumed supervisor reads it) is that one
// turn's usage, exact — not the sum of both attempts' observations of
// it, which made it a floor (>= 3) and would count usage the cut attempt
// had seen twice.
func TestRecoveredTurnsUsageCountedOnce(t *testing.T) {
	srv := newBlipServer(t, `{"turns":[{"repeat":true,"steps":[{"usage":{"inputTokens":3,"outputTokens":2},"mode":"cumulative"},{"text":"note "},{"delayMs":500},{"text":"written"}]}]}`)
	f, r := inDoubtRun(t, srv, "a note whose usage came first")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rc, err := f.Recover(ctx, r.ID, fleet.RecoverOptions{Provider: srv})
	if err != nil || rc.State != fleet.RecoverySettled {
		t.Fatalf("Recover: %+v, %v; want settled", rc, err)
	}
	got, err := f.Get(ctx, r.ID)
	if err != nil || got.Status != store.StatusCompleted || len(got.Attempts) != 2 {
		t.Fatalf("run %+v, %v; want completed after two attempts (the cut one and the recovery)", got, err)
	}
	rec, err := (&fleet.Executor{Fleet: f}).Recover(ctx, supervise.RecoverWork{RunID: "sv", Node: "n", Execution: r.ID})
	if err != nil {
		t.Fatal(err)
	}
	u := rec.Result.Usage
	if u == nil || u.InputTokens != ledger.ExactAmount[int64](3) || u.OutputTokens != ledger.ExactAmount[int64](2) {
		t.Fatalf("reported usage %+v; want the one turn's 3 in / 2 out, exact", u)
	}
	if s := rec.Result.Spent.Tokens; s == nil || *s != 5 {
		t.Errorf("spent tokens %v; want 5", s)
	}
}
