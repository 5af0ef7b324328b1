package supervise_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkDecodeLens decodes and validates one full lens definition
// (the strict define_analyst decoder).
func BenchmarkDecodeLens(b *testing.B) {
	doc, err := json.Marshal(validLens())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := supervise.DecodeLens(doc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunAnalyst is one worker spawned and settled, then a lens
// run over it and its finding awaited, per op: the cost of an analysis
// on top of a worker (in memory, no run dir).
func BenchmarkRunAnalyst(b *testing.B) {
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
	o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
		PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck, Executor: exec}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for range b.N {
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
	b.ReportAllocs()
	b.ResetTimer()
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || res.Error != nil || len(res.Tree) != 2*b.N {
		b.Fatalf("%v %+v: %d nodes for %d analyses", err, res.Error, len(res.Tree), b.N)
	}
}
