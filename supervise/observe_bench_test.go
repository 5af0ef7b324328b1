package supervise_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkObservePage reads a settled worker's whole structured output
// (about 1 MB of JSON) through observe_agent, page after page: one op is
// the whole read, so a cost per page that follows the output's size
// shows as quadratic here.
func BenchmarkObservePage(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"rows": [`)
	for i := range 20000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id": %d, "text": "row %d of the report, ünïcode ✓"}`, i, i)
	}
	sb.WriteString(`]}`)
	output, err := canonjson.Decode([]byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	parse := func(doc string) *profile.Profile {
		p, err := profile.Parse([]byte(doc))
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "DONE", Output: output, Spent: fullSpend(3)}, nil
	})
	o := supervise.Options{
		Budget:      ledger.Budget{Tokens: i64(10_000), Iterations: i64(10), MicroUSD: i64(1_000_000)},
		PerWorker:   ledger.Budget{Tokens: i64(1_000), Iterations: i64(1), MicroUSD: i64(100_000)},
		Profiles:    map[string]*profile.Profile{"writer": parse(writerProfile)},
		Deliverable: doneCheck, Executor: exec, RunID: "run1",
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil {
			return supervise.BrainReport{}, err
		}
		pages := 0
		for b.Loop() {
			var off int64
			for {
				ob, err := c.ObservePage(ctx, supervise.ObserveArgs{WorkerID: sp.WorkerID, OutputPath: "/output", Offset: off})
				if err != nil {
					b.Fatal(err)
				}
				pages++
				if ob.NextOffset == nil {
					break
				}
				off = *ob.NextOffset
			}
		}
		b.ReportMetric(float64(pages)/float64(b.N), "pages/op")
		return supervise.BrainReport{}, nil
	})
	man := parse(`{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"}, "tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	if _, err := supervise.Supervise(context.Background(), man, "t", o); err != nil {
		b.Fatal(err)
	}
}
