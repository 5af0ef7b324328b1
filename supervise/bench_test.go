package supervise_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkScopeSpawnSettle: one admitted spawn and its settlement, the
// Scope's share of issue 13's spawn+settle budget (no executor, no
// journal).
func BenchmarkScopeSpawnSettle(b *testing.B) {
	f := newFixture(b, ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
		supervise.ScopeOptions{PerWorker: worker, MaxLiveWorkers: 64, MaxDepth: 4})
	req := supervise.SpawnRequest{Profile: "coder", Label: "w", Task: "t"}
	spent := supervise.Result{State: supervise.StateDone, Spent: fullSpend(40)}
	b.ReportAllocs()
	for b.Loop() {
		r, err := f.scope.Spawn(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.scope.Settle(r.Node, spent); err != nil {
			b.Fatal(err)
		}
	}
	if live, _ := f.scope.Live(); live != 0 {
		b.Fatalf("live %d", live)
	}
}

// BenchmarkSuperviseSpawnSettle: one worker spawned, executed by a
// zero-latency executor, checked, settled and awaited through Supervise,
// with the journal in memory, in a run dir (two fsynced appends per
// worker) or in SQLite (two fenced event appends per worker). One run of b.N workers: a tree of that many workers
// completes. The live=16 cases spawn 16 workers before awaiting them,
// so their journal appends meet in the journal's group commit.
func BenchmarkSuperviseSpawnSettle(b *testing.B) {
	for _, tc := range []struct {
		name   string
		dir    bool
		sqlite bool
		live   int
	}{{"memory", false, false, 1}, {"file-journal", true, false, 1}, {"sqlite-journal", false, true, 1},
		{"memory/live=16", false, false, 16}, {"file-journal/live=16", true, false, 16}, {"sqlite-journal/live=16", false, true, 16}} {
		b.Run(tc.name, func(b *testing.B) {
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
			if tc.dir {
				o.RunDir = b.TempDir()
			}
			if tc.sqlite {
				st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.db"), sqlite.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				o.SpawnStore = st
			}
			n := 0
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				for n < b.N {
					k := min(tc.live, b.N-n)
					for range k {
						if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"}); err != nil {
							return supervise.BrainReport{}, err
						}
					}
					for range k {
						if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
							return supervise.BrainReport{}, fmt.Errorf("await: %+v %v", r, err)
						}
						n++
					}
				}
				return supervise.BrainReport{}, nil
			})
			b.ReportAllocs()
			b.ResetTimer()
			res, err := supervise.Supervise(context.Background(), manager, "t", o)
			if err != nil || res.Error != nil || len(res.Tree) != n {
				b.Fatalf("%v %+v: %d nodes for %d spawns", err, res.Error, len(res.Tree), n)
			}
		})
	}
}

// BenchmarkIdleLiveWorker reports the heap held per live worker that is
// waiting on its executor (b.N workers live at once; goroutine stacks
// excluded).
func BenchmarkIdleLiveWorker(b *testing.B) {
	release := make(chan struct{})
	exec := supervise.ExecutorFunc(func(ctx context.Context, _ supervise.Work) (supervise.WorkResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
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
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range b.N {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "heap-B/live-worker")
		b.ReportMetric(float64(int64(after.StackInuse)-int64(before.StackInuse))/float64(b.N), "stack-B/live-worker")
		close(release)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), manager, "t", o); err != nil {
		b.Fatal(err)
	}
}
