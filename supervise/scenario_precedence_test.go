package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// failingExecutor ends every worker failed, having spent one iteration.
type failingExecutor struct{}

func (failingExecutor) Execute(context.Context, supervise.Work) (supervise.WorkResult, error) {
	return supervise.WorkResult{Spent: ledger.Spend{Tokens: i64(5), Iterations: i64(1), MicroUSD: i64(5)}},
		errors.New("worker crashed")
}

// §3.6 "Lifecycle causes outrank driver-failed", behaviour 42 ("no-winner
// with ZERO down children and a throwing driver returns driver-failed"):
// a real down child outranks the driver's rejection, so a run whose only
// child went down before its driver threw is all-children-down, and
// carries no error (the lifecycle arms declare none).
func TestDownChildOutranksDriverFailedBehaviour42(t *testing.T) {
	o := baseOptions(t, failingExecutor{}, nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if r := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("x")); r["error"] != nil {
			t.Fatalf("spawn refused: %v", r)
		}
		ev := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		if e, _ := ev["event"].(map[string]any); e["state"] != "failed" {
			t.Fatalf("await_event: %v, want the settlement", ev)
		}
		return supervise.BrainReport{}, errors.New("boom")
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonAllChildrenDown || res.Error != nil {
		t.Errorf("status %s reason %s error %+v, want no-winner all-children-down without an error", res.Status, res.Reason, res.Error)
	}
	if res.DownCount != 1 {
		t.Errorf("downCount %d, want 1", res.DownCount)
	}
}

// The other side of behaviour 42: a child the run's end cancelled (it
// was still live when the driver threw) did not go down on its own, so
// the driver's rejection is what ended the run: driver-failed, with the
// error's name and message.
func TestChildCancelledAtRunEndLeavesDriverFailedBehaviour42(t *testing.T) {
	gate := &gateExecutor{release: make(chan struct{})}
	o := baseOptions(t, gate, nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if r := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("x")); r["error"] != nil {
			t.Fatalf("spawn refused: %v", r)
		}
		return supervise.BrainReport{}, errors.New("boom")
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonDriverFailed || res.Error == nil || res.Error.Message != "boom" {
		t.Errorf("status %s reason %s error %+v, want no-winner driver-failed boom", res.Status, res.Reason, res.Error)
	}
}

// §3.6 "Every spawn reply carries live and freeSlots (null = uncapped)",
// behaviour 45 ("every reply carries freeSlots"): an admitted spawn and a
// keyed spawn that replays its completed key (resumed: completed) carry
// both too, not only refusals.
func TestEverySpawnReplyCarriesLiveAndFreeSlotsBehaviour45(t *testing.T) {
	for _, capped := range []bool{false, true} {
		gate := &gateExecutor{release: make(chan struct{})}
		o := baseOptions(t, gate, nil)
		want := any(nil)
		if capped {
			o.MaxLiveWorkers = 3
			want = 2.0
		}
		var admitted, replayed map[string]any
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			keyed := map[string]any{"profile": "writer", "task": "x", "key": "k1"}
			admitted = tool(t, ctx, c, supervise.VerbSpawnWorker, keyed)
			close(gate.release)
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
			replayed = tool(t, ctx, c, supervise.VerbSpawnWorker, keyed)
			return supervise.BrainReport{}, nil
		})
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
			t.Fatal(err)
		}
		for name, r := range map[string]map[string]any{"admitted": admitted, "replayed": replayed} {
			live, hasLive := r["live"]
			free, hasFree := r["freeSlots"]
			if !hasLive || !hasFree {
				t.Errorf("capped=%v %s reply %v lacks live or freeSlots", capped, name, r)
				continue
			}
			wantLive, wantFree := 1.0, want
			if name == "replayed" {
				wantLive = 0.0
				if capped {
					wantFree = 3.0
				}
			}
			if live != wantLive || free != wantFree {
				t.Errorf("capped=%v %s reply live %v freeSlots %v, want %v and %v: %v", capped, name, live, free, wantLive, wantFree, r)
			}
		}
		if replayed["resumed"] != "completed" {
			t.Errorf("capped=%v the second keyed spawn: %v, want resumed completed", capped, replayed)
		}
	}
}

// Behaviour 55 under concurrency (§3.6 "submit_result retains the FIRST
// passing result; concurrent passing submits get earlier-passing-result"):
// eight passing results submitted at once: exactly one is accepted, every
// other is refused earlier-passing-result, and the accepted one is the
// run's winner.
func TestConcurrentPassingSubmitsKeepOneBehaviour55(t *testing.T) {
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	const n = 8
	replies := make([]map[string]any, n)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				replies[i] = tool(t, ctx, c, supervise.VerbSubmitResult, map[string]any{"result": fmt.Sprintf("result %d DONE", i)})
			})
		}
		wg.Wait()
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSubmitResult), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	accepted := -1
	for i, r := range replies {
		switch {
		case r["accepted"] == true && accepted < 0:
			accepted = i
		case r["accepted"] == true:
			t.Errorf("submissions %d and %d were both accepted", accepted, i)
		case r["error"] != "earlier-passing-result":
			t.Errorf("submission %d: %v, want accepted or earlier-passing-result", i, r)
		}
	}
	if accepted < 0 {
		t.Fatalf("no submission accepted: %v", replies)
	}
	if want := fmt.Sprintf("result %d DONE", accepted); res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Text != want || !res.Winner.Submitted {
		t.Errorf("winner %+v, want the accepted %q", res.Winner, want)
	}
}
