package supervise_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/supervise"
)

// RES-03, P7, behaviour 46 with the spawn journal in PostgreSQL
// (Options.SpawnStore): the run-started record in the store carries the
// budget; a resume with none adopts it and one with a larger budget is
// refused, typed, before it takes anything.
func TestStoreJournalResumeKeepsTheJournaledBudgetPostgres(t *testing.T) {
	st, err := postgres.Open(context.Background(), pgtest.Schema(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.SpawnStore, o.RunID, o.Brain = st, "pg-resume", (&taskRecorder{}).brain("first")
	if res, err := supervise.Supervise(ctx, managerProfile(t, verbs2...), "ship", o); err != nil || res.Status != supervise.StatusWinner {
		t.Fatalf("first run: %v %+v", err, res)
	}
	start, err := supervise.ReadRunStarted(ctx, supervise.Options{SpawnStore: st, RunID: "pg-resume"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o.Budget, start.Budget.Ledger()); diff != "" {
		t.Errorf("journaled budget (-given +journaled):\n%s", diff)
	}

	larger := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	larger.SpawnStore, larger.RunID, larger.Resume = st, "pg-resume", true
	larger.Budget.Tokens = i64(1_000_000)
	larger.Brain = (&taskRecorder{}).brain("second")
	var mismatch *supervise.ResumeMismatchError
	if _, err := supervise.Supervise(ctx, managerProfile(t, verbs2...), "", larger); !errors.As(err, &mismatch) || mismatch.Field != "Budget.Tokens" {
		t.Fatalf("resume with a larger budget: %v, want a *ResumeMismatchError on Budget.Tokens", err)
	}

	rec := &taskRecorder{}
	adopt := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	adopt.SpawnStore, adopt.RunID, adopt.Resume = st, "pg-resume", true
	adopt.Budget, adopt.PerWorker, adopt.Brain = ledger.Budget{}, ledger.Budget{}, rec.brain("second")
	if _, err := supervise.Supervise(ctx, managerProfile(t, verbs2...), "", adopt); err != nil {
		t.Fatal(err)
	}
	if len(rec.tasks) != 1 || rec.tasks[0] != "ship" {
		t.Errorf("the resumed brain's tasks %q, want the journaled ship", rec.tasks)
	}
	if b := rec.readout.Channels[ledger.ChannelTokens]; b.Total != 10_000 || b.Free+b.Reserved+b.Committed != b.Total {
		t.Errorf("resumed pool tokens %+v: want the journaled total 10000, conserved", b)
	}
}
