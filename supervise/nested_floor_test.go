package supervise_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/internal/journaltest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// Spec §6 (a charge is never below what is known to have been spent),
// behaviours 41 and 42 for a nested manager: a lead whose own turn was
// cut after reporting usage (an incomplete receipt: its tokens unknown,
// at least the floor) settles with that floor, and the run's pool and
// its result agree on it: the lead's subtree is charged the larger of
// its grant and its floor plus its children's spend, tokens unknown.
// Before, the lead's carved settlement (subtreeSpendLocked) dropped the
// floor: the pool charged its grant while the result's tree counted the
// floor (no child), or both charged the grant (a child: the floor lost).
func TestNestedManagerCutTurnFloorPoolAndResultAgree(t *testing.T) {
	for _, tc := range []struct {
		name         string
		grant, floor int64
		child        bool
		want         int64
	}{
		{name: "floor past the grant", grant: 100, floor: 150, want: 150},
		{name: "floor within the grant", grant: 200, floor: 150, want: 200},
		// The child spends 1 token of its 100 (fullSpend(1)).
		{name: "floor and a child past the grant", grant: 300, floor: 350, child: true, want: 351},
		{name: "floor and a child within the grant", grant: 300, floor: 250, child: true, want: 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := nestedOptions(t, supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
			}), nil, nil)
			o.ManagerBrain = cutLead(tc.floor, tc.child, nil)
			var committed int64
			var brainErr error
			o.Brain = leadBrain(t, tc.grant, &committed, &brainErr)
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if err != nil || brainErr != nil {
				t.Fatal(err, brainErr)
			}
			if len(res.Tree) == 0 || res.Tree[0].State != supervise.StateDone {
				t.Fatalf("tree = %+v, want the lead done", res.Tree)
			}
			if committed != tc.want {
				t.Errorf("the run's pool committed %d tokens for the lead's subtree, want %d", committed, tc.want)
			}
			if res.Spent.TokensKnown || res.Spent.Tokens != tc.want {
				t.Errorf("the result's spend is %d tokens (known %v), want %d, unknown, as the pool's", res.Spent.Tokens, res.Spent.TokensKnown, tc.want)
			}
		})
	}
}

// The same one level down: a sub-lead (a nested manager under the lead)
// granted 100 tokens whose own turn was cut after reporting 150 is
// charged 150 in the lead's carved pool, so the lead's subtree, settled
// known, is charged 150 in the run's pool, as the result counts it.
// Before, the lead's carved pool noted the sub-lead's charge at its
// 100-token ceiling (chargedLocked), and the run's pool charged 100.
func TestNestedSubLeadCutTurnFloorReachesTheRunPool(t *testing.T) {
	o := nestedOptions(t, supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
	}), nil, nil)
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if c.Self() != "run1:s1" { // the sub-lead
				cut := ledger.Usage{InputTokens: ledger.Amount[int64]{Value: 150, Reported: true}, CostUSD: ledger.ExactAmount(0.0)}
				return supervise.BrainReport{Text: "sub-lead cut"}, c.Meter(ctx, cut)
			}
			tokens, iterations, usd := int64(100), int64(1), 0.01
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "sub", Label: "sub",
				Budget: &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations, USD: &usd}}); err != nil {
				return supervise.BrainReport{}, err
			}
			if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
				return supervise.BrainReport{}, fmt.Errorf("the sub-lead's settlement: %+v, %v", ev, err)
			}
			return supervise.BrainReport{Text: "lead"}, c.Meter(ctx, ledger.Usage{InputTokens: ledger.ExactAmount[int64](0),
				OutputTokens: ledger.ExactAmount[int64](0), CostUSD: ledger.ExactAmount(0.0)})
		})
	}
	var committed int64
	var brainErr error
	o.Brain = leadBrain(t, 300, &committed, &brainErr)
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil || brainErr != nil {
		t.Fatal(err, brainErr)
	}
	if len(res.Tree) != 2 || res.Tree[0].State != supervise.StateDone || res.Tree[1].State != supervise.StateDone {
		t.Fatalf("tree = %+v, want the lead and its sub-lead done", res.Tree)
	}
	if committed != 150 {
		t.Errorf("the run's pool committed %d tokens for the lead's subtree, want the sub-lead's 150-token floor", committed)
	}
	if res.Spent.TokensKnown || res.Spent.Tokens != 150 {
		t.Errorf("the result's spend is %d tokens (known %v), want 150, unknown, as the pool's", res.Spent.Tokens, res.Spent.TokensKnown)
	}
}

// cutLead is the lead's brain: with child it spawns a writer granted 100
// tokens and awaits it; then its own turn is cut after reporting floor
// input tokens (metered unknown, at least floor). ran, when set, counts
// its drives.
func cutLead(floor int64, child bool, ran *atomic.Int32) func(*profile.Profile) supervise.Brain {
	return func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if ran != nil {
				ran.Add(1)
			}
			if child {
				tokens, iterations, usd := int64(100), int64(1), 0.01
				if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "w",
					Budget: &supervise.SpawnBudget{Tokens: &tokens, Iterations: &iterations, USD: &usd}}); err != nil {
					return supervise.BrainReport{}, err
				}
				if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
					return supervise.BrainReport{}, fmt.Errorf("the writer's settlement: %+v, %v", ev, err)
				}
			}
			cut := ledger.Usage{InputTokens: ledger.Amount[int64]{Value: floor, Reported: true}, CostUSD: ledger.ExactAmount(0.0)}
			return supervise.BrainReport{Text: "lead cut"}, c.Meter(ctx, cut)
		})
	}
}

// leadBrain spawns one nested manager "lead" granted grant tokens (2
// iterations, $0.05), awaits its settlement, checks the pool conserved and
// keeps its committed tokens in committed; what failed, in brainErr.
func leadBrain(t *testing.T, grant int64, committed *int64, brainErr *error) supervise.BrainFunc {
	return func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		grantT, grantI, grantUSD := grant, int64(2), 0.05
		if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Label: "lead",
			Budget: &supervise.SpawnBudget{Tokens: &grantT, Iterations: &grantI, USD: &grantUSD}}); err != nil {
			*brainErr = err
			return supervise.BrainReport{}, err
		}
		if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
			*brainErr = fmt.Errorf("the lead's settlement: %+v, %v", ev, err)
			return supervise.BrainReport{}, *brainErr
		}
		r := c.Readout()
		checkConservedReadout(t, r)
		*committed = r.Channels[ledger.ChannelTokens].Committed
		return supervise.BrainReport{}, nil
	}
}

// Behaviour 46 over the floor above: a run cut after its lead (whose
// own turn was cut at a 350-token floor, with a child) settled, resumed
// on the same run dir, replays the lead without running it again and
// charges its subtree exactly as the run that executed it did — the
// floor comes back from the journal (a settled record's tokensFloor),
// tokens still unknown.
func TestNestedManagerCutTurnFloorSurvivesAResume(t *testing.T) {
	var ran atomic.Int32
	lead := cutLead(350, true, &ran)
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
	})
	dir := t.TempDir()
	run := func(resume bool) (supervise.SupervisedResult, int64) {
		t.Helper()
		o := nestedOptions(t, exec, nil, nil)
		o.ManagerBrain, o.RunDir, o.Resume = lead, dir, resume
		var committed int64
		var brainErr error
		o.Brain = leadBrain(t, 300, &committed, &brainErr)
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		if err != nil || brainErr != nil {
			t.Fatal(err, brainErr)
		}
		return res, committed
	}
	first, firstCommitted := run(false)
	if firstCommitted != 351 || first.Spent.TokensKnown || first.Spent.Tokens != 351 {
		t.Fatalf("the first run committed %d and spent %+v; want 351 tokens, unknown", firstCommitted, first.Spent)
	}
	// Through the lead's settlement (the writer's is the first).
	journaltest.KeepThrough(t, dir, supervise.KindSettled, 2)
	ran.Store(0)
	again, againCommitted := run(true)
	if n := ran.Load(); n != 0 {
		t.Errorf("the resumed run drove the settled lead %d times; want 0 (replayed)", n)
	}
	if !again.Resumed || len(again.Tree) != 2 || !again.Tree[0].Replayed {
		t.Fatalf("resumed tree %+v (resumed %v); want the lead and its writer replayed", again.Tree, again.Resumed)
	}
	if againCommitted != firstCommitted || again.Spent.TokensKnown != first.Spent.TokensKnown || again.Spent.Tokens != first.Spent.Tokens {
		t.Errorf("resumed: committed %d, spent %d tokens (known %v); the run that executed it: %d, %d (known %v)",
			againCommitted, again.Spent.Tokens, again.Spent.TokensKnown, firstCommitted, first.Spent.Tokens, first.Spent.TokensKnown)
	}
}
