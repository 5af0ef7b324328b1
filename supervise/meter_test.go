package supervise_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// The router brain's every model turn is charged to the run's pool as
// the turn ends, not when the brain returns: a manager whose first turn
// spent 9,500 of the run's 10,000 tokens cannot then spawn a worker
// needing 1,000 (§3.6 "metered … twin of pool.observe"; behaviour 39's
// conservation holds mid-run). Each turn's spend is journaled once —
// on the transcript record of what it said, or a metered record of its
// own — and the run's driver spend is their sum.
func TestRouterBrainMetersEachTurnAsItHappens(t *testing.T) {
	dir := t.TempDir()
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"}), managerUsage(9_000, 500, 0.001)),
		turn(scripted.Text("no room left"), managerUsage(10, 0, 0.000001)),
	}})
	o := baseOptions(t, newCounting(t, workerProvider(t)), router)
	o.RunDir = dir
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tree) != 0 {
		t.Errorf("%d workers ran; the spawn after a 9,500-token turn must be refused", len(res.Tree))
	}
	// Two model turns: their tokens and dollars, no iteration (a
	// manager's turn counts none; TestManagerTurnsChargeNoIterations).
	wantDriver := supervise.SpentTotal{Tokens: 9_510, MicroUSD: 1_001, Resources: map[string]int64{}, TokensKnown: true, IterationsKnown: true, USDKnown: true}
	if diff := cmp.Diff(wantDriver, res.Breakdown.DriverInference); diff != "" {
		t.Errorf("driver spend (-want +got):\n%s", diff)
	}
	rows, _, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var metered []int64
	for _, r := range rows {
		if chargesTurn(r, "run1") && r.Spent.Tokens != nil {
			metered = append(metered, *r.Spent.Tokens)
		}
	}
	if !cmp.Equal(metered, []int64{9_500, 10}) {
		t.Errorf("metered records %v, want one per turn: [9500 10]", metered)
	}
}

// A turn whose usage is unknown charges nothing it does not know and
// leaves the manager's gap on those channels: unknown, never 0.
func TestRouterBrainUnknownTurnUsageIsAGap(t *testing.T) {
	router := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(scripted.Text("nothing to do")), // reports no usage
	}})
	o := uncappedUSD(baseOptions(t, newCounting(t, workerProvider(t)), router))
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
	if err != nil {
		t.Fatal(err)
	}
	want := []supervise.SpendGap{{ID: "run1", Label: "manager", Kind: supervise.GapUnreported, Channels: []string{ledger.ChannelTokens, ledger.ChannelUSD}}}
	if diff := cmp.Diff(want, res.SpendGaps); diff != "" {
		t.Errorf("gaps (-want +got):\n%s", diff)
	}
	if res.Breakdown.DriverInference.TokensKnown || res.Spent.TokensKnown {
		t.Errorf("driver spend %+v claims known tokens", res.Breakdown.DriverInference)
	}
}
