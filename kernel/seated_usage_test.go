package kernel_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
)

// A seated run's spend is every stage's, not its last stage's: a first
// stage whose account ran out mid-turn after spending (1000 in, 500 out)
// and a second that completed (5 in, 3 out) spent 1005 in and 503 out —
// and since the cut stage's own count may be partial, the total is a
// floor, never reported as exact. Before, only the last stage's usage
// was reported and the seated record had none.
func TestSeatedUsageIsEveryStages(t *testing.T) {
	cut := `{"servedModel":"scripted/first","turns":[{"steps":[{"text":"half a note"},{"usage":{"inputTokens":1000,"outputTokens":500},"mode":"delta"}],"end":"quota"}]}`
	first := &seatProvider{Provider: scripted.New(mustScript(t, cut), scripted.Options{})}
	second := newSeatProvider(t, "scripted/second", false)
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[k], nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := memory.New(nil)
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "spend-1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 2 || res.Stages[0].Outcome != kernel.StageQuotaRefused {
		t.Fatalf("stages %+v; want a quota refusal, then the second stage", res.Stages)
	}
	if got := res.Final.Usage.InputTokens; got.Value != 5 {
		t.Fatalf("the last stage's usage %s; want its own 5", got)
	}
	u := res.Usage
	if u.InputTokens.Value != 1005 || u.OutputTokens.Value != 503 || !u.InputTokens.Reported {
		t.Errorf("the run's usage: input %s, output %s; want 1005 and 503 (every stage's)", u.InputTokens, u.OutputTokens)
	}
	if u.InputTokens.Known() || u.OutputTokens.Known() {
		t.Errorf("the run's usage %s / %s is exact; the cut stage's count makes it a floor", u.InputTokens, u.OutputTokens)
	}
	again, err := kernel.SeatedUsage(ctx, st, res.Stages)
	if err != nil || again != u {
		t.Errorf("SeatedUsage from the records: %+v, %v; want the result's %+v", again, err, u)
	}
	if none, err := kernel.SeatedUsage(ctx, st, nil); err != nil || none != ledger.NoUsage() {
		t.Errorf("SeatedUsage of no stages: %+v, %v; want nothing spent", none, err)
	}
}

// One run says one thing about a stage refused at create (issue 15): a
// quota refusal before anything was admitted (QuotaRefusalError.Run
// nil) dispatched nothing under the stage, so its spend is known to be
// zero — in the stage's own run record as in the seated run's usage,
// which is the sum of its stages' records. Before, the summary counted
// the stage as zero while its record said unknown.
func TestSeatedUsageOfAStageRefusedAtCreate(t *testing.T) {
	first := newSeatProvider(t, "scripted/first", true)
	second := newSeatProvider(t, "scripted/second", false)
	accounts := kernel.AccountManagerFunc(func(_ context.Context, k int, _ profile.Seat) (contract.Provider, error) {
		return []contract.Provider{first, second}[k], nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := memory.New(nil)
	res, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: mustProfile(t, seatWriter), Task: "write a note", Store: st, Check: nonEmpty, RunID: "spend-create",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) != 2 || res.Stages[0].Outcome != kernel.StageQuotaRefused || res.Stages[0].Continuity != "" {
		t.Fatalf("stages %+v; want a refusal at create, then the second stage", res.Stages)
	}
	refused, err := kernel.ReadRun(ctx, st, res.Stages[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ledger.NoUsage(), refused.Spend); diff != "" {
		t.Errorf("the refused stage's recorded spend (-want +got):\n%s", diff)
	}
	if refused.Exact == nil || refused.Exact.Usage == nil {
		t.Fatalf("the refused stage's record has no usage: %+v", refused.Exact)
	}
	if diff := cmp.Diff(ledger.NoUsage(), refused.Exact.Usage.Usage); diff != "" {
		t.Errorf("the refused stage's record's usage (-want +got):\n%s", diff)
	}
	ran, err := kernel.ReadRun(ctx, st, res.Stages[1].RunID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refused.Spend.Plus(ran.Spend), res.Usage); diff != "" {
		t.Errorf("the seated run's usage is not its stages' records' sum (-want +got):\n%s", diff)
	}
	if !res.Usage.InputTokens.Known() || res.Usage.InputTokens.Value != 5 {
		t.Errorf("the seated run's input %s; want exactly the second stage's 5", res.Usage.InputTokens)
	}
}
