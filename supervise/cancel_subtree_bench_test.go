package supervise_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkCancelSubtree cancels, through the run dir, a nested manager
// holding k live workers, and waits until the whole subtree is down and
// the cancellation says so. The cost should grow linearly with k:
// ns/op, B/op and journal-B (the spawn journal's size once the run
// ended) are per cancellation.
func BenchmarkCancelSubtree(b *testing.B) {
	for _, k := range []int{100, 1000} {
		b.Run(fmt.Sprintf("workers=%d", k), func(b *testing.B) {
			writer, err := profile.Parse([]byte(writerProfile))
			if err != nil {
				b.Fatal(err)
			}
			leadP, err := profile.Parse([]byte(`{"name": "lead", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`))
			if err != nil {
				b.Fatal(err)
			}
			manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
			if err != nil {
				b.Fatal(err)
			}
			exec := supervise.ExecutorFunc(func(ctx context.Context, _ supervise.Work) (supervise.WorkResult, error) {
				<-ctx.Done()
				return supervise.WorkResult{}, context.Cause(ctx)
			})
			var journalBytes int64
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				ready := make(chan struct{})
				lead := goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					for range k {
						if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"}); err != nil {
							return supervise.BrainReport{}, err
						}
					}
					close(ready)
					<-ctx.Done()
					return supervise.BrainReport{}, context.Cause(ctx)
				})
				root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"})
					if err != nil {
						return supervise.BrainReport{}, err
					}
					<-ready
					b.StartTimer()
					if _, err := supervise.CancelWorker(ctx, dir, string(sp.WorkerID), "op-1", supervise.CancelOptions{}); err != nil {
						return supervise.BrainReport{}, err
					}
					if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 600_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
						return supervise.BrainReport{}, fmt.Errorf("await: %+v %w", r, err)
					}
					return supervise.BrainReport{}, nil
				})
				o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
					PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer, "lead": leadP}, Deliverable: doneCheck, Executor: exec,
					Brain: root, ManagerBrain: func(*profile.Profile) supervise.Brain { return lead }, MaxDepth: 2, RunDir: dir, RunID: "run1"}
				if _, err := supervise.Supervise(supervise.WithUnsyncedJournal(context.Background()), manager, "t", o); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				rec, err := supervise.ReadWorkerCancellation(context.Background(), dir, "op-1")
				if err != nil || rec.Effect != kernel.EffectCancelled || len(rec.Terminated) != k+1 {
					b.Fatalf("cancellation %s with %d terminated, %v; want cancelled with %d", rec.Effect, len(rec.Terminated), err, k+1)
				}
				st, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile))
				if err != nil {
					b.Fatal(err)
				}
				journalBytes = st.Size()
				b.StartTimer()
			}
			b.ReportMetric(float64(journalBytes), "journal-B")
		})
	}
}
