package supervise_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/internal/scaletest"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// backlogRun runs brain in a supervised run after backlog workers
// settled and their settlements wait unreturned in Await's queue.
func backlogRun(tb testing.TB, backlog int, brain func(ctx context.Context, c *supervise.Coordinator) error) {
	tb.Helper()
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
	})
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		tb.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		tb.Fatal(err)
	}
	o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
		PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for range backlog {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		// Idle for questions: every worker settled, none returned.
		for {
			r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventQuestion}})
			if err != nil {
				return supervise.BrainReport{}, err
			}
			if r.Idle {
				break
			}
			if r.Event != nil {
				return supervise.BrainReport{}, fmt.Errorf("an unexpected event %+v", r.Event)
			}
		}
		return supervise.BrainReport{}, brain(ctx, c)
	})
	if _, err := supervise.Supervise(context.Background(), manager, "t", o); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkAwaitKindsScaling: one question asked and awaited by kind
// while n settlements wait unreturned in the queue. Await takes each
// kind's queue from its head, so the cost per call does not grow with n
// (before, every filtered call scanned the n settlements: linear in n
// per call, quadratic over a run).
func BenchmarkAwaitKindsScaling(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(fmt.Sprintf("backlog=%d", n), func(b *testing.B) {
			backlogRun(b, n, func(ctx context.Context, c *supervise.Coordinator) error {
				ask := supervise.AskArgs{Level: "driver", Question: "which?", Reason: "bench", Urgency: supervise.UrgencyContinueWithout}
				b.ReportAllocs()
				b.ResetTimer()
				stop := scaletest.CPU(b)
				for range b.N {
					if _, err := c.AskParent(ctx, ask); err != nil {
						return err
					}
					r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventQuestion}})
					if err != nil || r.Event == nil || r.Event.Kind != supervise.EventQuestion {
						return fmt.Errorf("await: %+v %v", r, err)
					}
				}
				stop()
				b.StopTimer()
				return nil
			})
		})
	}
}
