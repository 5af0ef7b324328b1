package supervise_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkRunAnalystModel is BenchmarkRunAnalyst with the analyst's
// own tool loop (Options.AnalystModel, answering at once): per op one
// worker and one analysis over it, in a run of n of each. The cost per
// op should not grow with n, though each analysis snapshots the run's
// settled workers as its dataset.
func BenchmarkRunAnalystModel(b *testing.B) {
	for _, n := range []int{500, 5000} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
				return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
			})
			writer, err := profile.Parse([]byte(writerProfile))
			if err != nil {
				b.Fatal(err)
			}
			manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
			if err != nil {
				b.Fatal(err)
			}
			model := &analystModel{reply: func(int, []contract.ChatMessage) []contract.ChatEvent {
				return []contract.ChatEvent{scripted.Text("nothing to report"), managerUsage(1, 1, 0.000001)}
			}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
					PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec,
					AnalystModel: model}
				o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					for range n {
						s, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"})
						if err != nil {
							return supervise.BrainReport{}, err
						}
						if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 10_000}); err != nil || r.Event == nil {
							return supervise.BrainReport{}, fmt.Errorf("await: %+v %v", r, err)
						}
						if _, err := c.RunAnalyst(ctx, supervise.RunAnalystArgs{Kind: "failure-triage", WorkerID: s.WorkerID}); err != nil {
							return supervise.BrainReport{}, err
						}
						if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 10_000}); err != nil || r.Event == nil || r.Event.Kind != supervise.EventFinding {
							return supervise.BrainReport{}, fmt.Errorf("await finding: %+v %v", r, err)
						}
					}
					return supervise.BrainReport{}, nil
				})
				res, err := supervise.Supervise(context.Background(), manager, "t", o)
				if err != nil || res.Error != nil || len(res.Tree) != 2*n {
					b.Fatalf("%v %+v: %d nodes for %d analyses", err, res.Error, len(res.Tree), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*n), "µs/analysis")
		})
	}
}
