package supervise_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// §9 stop: "nothing more is admitted" once stop answered — with spawns
// racing it and no AuthorizeSpawn hook (TestAuthorizeSpawnStopWhileThe
// HookDecides has the hook's path). Sixteen goroutines spawn workers
// that run until the run ends; the brain stops after a few were
// admitted. The pool's open reservations read right after Stop returned
// are every worker the run ever admits: before, a spawn past its first
// stop check when the stop landed was admitted after it (Stop did not
// take spawnMu, under which a spawn admits).
func TestNoSpawnIsAdmittedAfterStopReturned(t *testing.T) {
	for round := range 20 {
		o := baseOptions(t, supervise.ExecutorFunc(func(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
			<-ctx.Done()
			return supervise.WorkResult{}, ctx.Err()
		}), nil)
		o.Budget = ledger.Budget{Tokens: i64(1_000_000), Iterations: i64(1_000)}
		o.PerWorker = ledger.Budget{Tokens: i64(10), Iterations: i64(1)}
		var atStop int
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			var wg sync.WaitGroup
			admitted := make(chan struct{}, 1_000)
			for range 16 {
				wg.Go(func() {
					for range 50 { // 800 in all: the budget holds 1,000
						if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "work"}); err != nil {
							var r *supervise.Refusal
							if !errors.As(err, &r) || r.Code != supervise.CodeScopeSettled {
								t.Errorf("spawn: %v; want admitted or refused scope-settled", err)
							}
							return
						}
						admitted <- struct{}{}
					}
				})
			}
			for range 5 {
				<-admitted
			}
			if _, err := c.Stop(supervise.StopArgs{Reason: "enough"}); err != nil {
				return supervise.BrainReport{}, err
			}
			atStop = c.Readout().OpenTickets
			wg.Wait()
			return supervise.BrainReport{}, nil
		})
		res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbStop), "ship", o)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tree) != atStop {
			t.Fatalf("round %d: %d workers admitted when Stop returned, %d in the run's tree: a spawn was admitted after the stop", round, atStop, len(res.Tree))
		}
	}
}
