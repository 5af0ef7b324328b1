package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/internal/scaletest"
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
// worker; "nosync" the same file without the fsyncs) or in SQLite (two
// fenced event appends per worker). One run of b.N workers: a tree of
// that many workers completes. live=N spawns N workers before awaiting
// them, so their settlements meet in the journal's group commit;
// spawners=N has N goroutines of the brain spawning and awaiting at
// once, so spawns share fsyncs too. Issue 13's Done-when figures; the
// numbers are recorded in docs/DESIGN.md ("Performance"). cpu-ns/op is
// the process's CPU time per worker, which other processes' load on a
// shared machine does not inflate the way it inflates wall time.
func BenchmarkSuperviseSpawnSettle(b *testing.B) {
	for _, tc := range []struct {
		name     string
		dir      bool
		noSync   bool
		sqlite   bool
		live     int
		spawners int
	}{
		{name: "memory", live: 1},
		{name: "file-journal", dir: true, live: 1},
		{name: "file-journal-nosync", dir: true, noSync: true, live: 1},
		{name: "sqlite-journal", sqlite: true, live: 1},
		{name: "memory/live=16", live: 16},
		{name: "file-journal/live=16", dir: true, live: 16},
		{name: "file-journal-nosync/live=16", dir: true, noSync: true, live: 16},
		{name: "sqlite-journal/live=16", sqlite: true, live: 16},
		{name: "file-journal/live=64", dir: true, live: 64},
		{name: "file-journal/spawners=16", dir: true, live: 1, spawners: 16},
		{name: "file-journal-nosync/spawners=16", dir: true, noSync: true, live: 1, spawners: 16},
	} {
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
			ctx := context.Background()
			if tc.dir {
				o.RunDir = b.TempDir()
			}
			if tc.noSync {
				ctx = supervise.WithUnsyncedJournal(ctx)
			}
			if tc.sqlite {
				st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "runs.db"), sqlite.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				o.SpawnStore = st
			}
			var n atomic.Int64 // workers settled and awaited
			// round spawns k workers, then awaits k settlements.
			round := func(ctx context.Context, c *supervise.Coordinator, k int) error {
				for range k {
					if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"}); err != nil {
						return err
					}
				}
				for range k {
					if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
						return fmt.Errorf("await: %+v %v", r, err)
					}
					n.Add(1)
				}
				return nil
			}
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				if tc.spawners == 0 {
					for done := 0; done < b.N; {
						k := min(tc.live, b.N-done)
						if err := round(ctx, c, k); err != nil {
							return supervise.BrainReport{}, err
						}
						done += k
					}
					return supervise.BrainReport{}, nil
				}
				var claimed atomic.Int64
				var wg sync.WaitGroup
				errs := make([]error, tc.spawners)
				for i := range tc.spawners {
					wg.Go(func() {
						for errs[i] == nil && claimed.Add(1) <= int64(b.N) {
							errs[i] = round(ctx, c, 1)
						}
					})
				}
				wg.Wait()
				return supervise.BrainReport{}, errors.Join(errs...)
			})
			b.ReportAllocs()
			b.ResetTimer()
			stop := scaletest.CPU(b)
			res, err := supervise.Supervise(ctx, manager, "t", o)
			stop()
			if err != nil || res.Error != nil || len(res.Tree) != b.N || n.Load() != int64(b.N) {
				b.Fatalf("%v %+v: %d nodes and %d settlements for %d spawns", err, res.Error, len(res.Tree), n.Load(), b.N)
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
