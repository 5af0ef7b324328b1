package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// Spawns and settlements that run at once share the file journal's
// fsyncs (the spawn lock is no longer held across them) without losing
// the journal's order: with eight goroutines of the brain spawning
// against MaxLiveWorkers 4 on a real run dir, Await delivers the
// settlements in the journal's settled order (§3.6 "scope.next()
// delivers settlements strictly in recorded seq order"), every worker's
// spawned record precedes its settled one, and a resume replays the
// journal through the scope without a refusal — so no spawn was
// journaled before the settlement that freed its slot (§15 behaviour
// 46; issue 13 "fsync batched").
func TestConcurrentSpawnsKeepTheJournalsOrder(t *testing.T) {
	const total, spawners, maxLive = 48, 8, 4
	dir := t.TempDir()
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
	})
	o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 30), Iterations: i64(1 << 20), MicroUSD: i64(1 << 30)},
		PerWorker: worker, MaxLiveWorkers: maxLive, Profiles: map[string]*profile.Profile{"writer": mustProfile(t, writerProfile)},
		Deliverable: doneCheck, Executor: exec, RunDir: dir, RunID: "gc1"}
	manager := mustProfile(t, `{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	var awaited []supervise.NodeID
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		var claimed atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, spawners)
		deadline := time.Now().Add(60 * time.Second)
		for i := range spawners {
			wg.Go(func() {
				for claimed.Add(1) <= total {
					for {
						_, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: fmt.Sprintf("t%d", i)})
						var r *supervise.Refusal
						if errors.As(err, &r) && r.Code == supervise.CodeMaxLiveWorkers && time.Now().Before(deadline) {
							time.Sleep(time.Millisecond)
							continue
						}
						if err != nil {
							errs[i] = err
							return
						}
						break
					}
				}
			})
		}
		for len(awaited) < total {
			r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
			switch {
			case err == nil && r.Event != nil:
				awaited = append(awaited, r.Event.WorkerID)
			case err == nil && r.Idle && time.Now().Before(deadline):
				time.Sleep(time.Millisecond) // nothing live between two spawns
			default:
				return supervise.BrainReport{}, fmt.Errorf("await: %+v %v", r, err)
			}
		}
		wg.Wait()
		return supervise.BrainReport{}, errors.Join(errs...)
	})
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || res.Error != nil {
		t.Fatalf("Supervise: %v %+v", err, res.Error)
	}
	if len(res.Tree) != total {
		t.Fatalf("%d nodes, want %d", len(res.Tree), total)
	}
	recs, bad, err := supervise.ReadRunDir(context.Background(), dir)
	if err != nil || bad != 0 {
		t.Fatalf("ReadRunDir: %d bad lines, %v", bad, err)
	}
	var settled []supervise.NodeID
	spawned := map[supervise.NodeID]bool{}
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindSpawned:
			spawned[r.Node] = true
		case supervise.KindSettled:
			if !spawned[r.Node] {
				t.Errorf("%s settled before its spawn was journaled", r.Node)
			}
			settled = append(settled, r.Node)
		}
	}
	if diff := cmp.Diff(settled, awaited); diff != "" {
		t.Errorf("Await order differs from the journal's settled order (-journal +awaited):\n%s", diff)
	}
	// The resumed run replays every spawn and settlement through a scope
	// with the same MaxLiveWorkers: a spawn journaled ahead of the
	// settlement that made room for it would be refused here.
	o.Resume = true
	o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), manager, "t", o); err != nil {
		t.Fatalf("resuming the journal: %v", err)
	}
}
