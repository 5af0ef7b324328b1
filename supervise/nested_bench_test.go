package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// nestedTree runs one tree: the root spawns leads nested managers, each
// spawning per writers on a zero-latency executor, MaxLiveWorkers
// maxLive tree-wide. A lead refused max-live-workers awaits one of its
// own children, or — holding none — waits for the others to free a
// slot. It returns the result, the most live nodes a spawn reply
// reported, and the pool's readout as the root's brain returned.
func nestedTree(tb testing.TB, leads, per, maxLive int, runDir string) (supervise.SupervisedResult, int64, ledger.Readout) {
	tb.Helper()
	var peak atomic.Int64
	notePeak := func(live int) {
		for {
			p := peak.Load()
			if int64(live) <= p || peak.CompareAndSwap(p, int64(live)) {
				return
			}
		}
	}
	lead := goLead(func(ctx context.Context, c *supervise.Coordinator, task string) (supervise.BrainReport, error) {
		pending := 0
		awaitOne := func() error {
			r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}})
			if err != nil || r.Event == nil {
				return fmt.Errorf("lead await: %+v %w", r, err)
			}
			pending--
			return nil
		}
		deadline := time.Now().Add(waitLimit)
		for spawned := 0; spawned < per; {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "t"})
			var r *supervise.Refusal
			switch {
			case errors.As(err, &r) && r.Code == supervise.CodeMaxLiveWorkers:
				if pending > 0 {
					if err := awaitOne(); err != nil {
						return supervise.BrainReport{}, err
					}
					continue
				}
				if time.Now().After(deadline) {
					return supervise.BrainReport{}, errors.New("no slot freed in time")
				}
				time.Sleep(100 * time.Microsecond)
				continue
			case err != nil:
				return supervise.BrainReport{}, err
			}
			notePeak(sp.Live)
			spawned++
			pending++
		}
		for pending > 0 {
			if err := awaitOne(); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{Text: "lead DONE"}, nil
	})
	var readout ledger.Readout
	// Each lead's grant holds its per writers' reservations (worker:
	// 100 tokens, 1 iteration, $0.01 each): its subtree draws on it.
	grantTokens, grantIterations := int64(per)**worker.Tokens, int64(per)**worker.Iterations
	grantUSD := float64(int64(per)**worker.MicroUSD) / 1e6
	grant := &supervise.SpawnBudget{Tokens: &grantTokens, Iterations: &grantIterations, USD: &grantUSD}
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		awaited := 0
		awaitLead := func() error {
			if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 600_000, Kinds: []string{supervise.EventSettled}}); err != nil || r.Event == nil {
				return fmt.Errorf("root await: %+v %w", r, err)
			}
			awaited++
			return nil
		}
		for spawned := 0; spawned < leads; {
			sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead", Budget: grant})
			var r *supervise.Refusal
			switch {
			case errors.As(err, &r) && r.Code == supervise.CodeMaxLiveWorkers && spawned > awaited:
				// The leads' writers hold every slot (a quick executor
				// fills them before the root spawned all its leads): a
				// lead settling frees one.
				if err := awaitLead(); err != nil {
					return supervise.BrainReport{}, err
				}
				continue
			case err != nil:
				return supervise.BrainReport{}, err
			}
			notePeak(sp.Live)
			spawned++
		}
		for awaited < leads {
			if err := awaitLead(); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		readout = c.Readout()
		return supervise.BrainReport{}, nil
	})
	writer, err := profile.Parse([]byte(writerProfile))
	if err != nil {
		tb.Fatal(err)
	}
	leadP, err := profile.Parse([]byte(`{"name": "lead", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`))
	if err != nil {
		tb.Fatal(err)
	}
	manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		tb.Fatal(err)
	}
	exec := supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
		return supervise.WorkResult{Text: "DONE", Spent: fullSpend(1)}, nil
	})
	o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
		PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer, "lead": leadP}, Deliverable: doneCheck, Executor: exec,
		Brain: root, ManagerBrain: func(*profile.Profile) supervise.Brain { return lead }, MaxLiveWorkers: maxLive, MaxDepth: 2,
		RunDir: runDir, RunID: "run1"}
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil || res.Error != nil {
		tb.Fatalf("%v %+v", err, res.Error)
	}
	return res, peak.Load(), readout
}

// §3.6 maxLiveWorkers (tree-wide), behaviours 36, 42 at scale: a tree
// of 10 nested managers × 100 workers (1,010 nodes) with a file journal
// completes under a tree-wide cap of 64 live nodes, which no spawn ever
// exceeds; every node is done, the pool is conserved, and the spend is
// exactly the workers' (one token each; the leads' brains spend none).
func TestNestedThousandWorkerTree(t *testing.T) {
	start := time.Now()
	res, peak, readout := nestedTree(t, 10, 100, 64, t.TempDir())
	t.Logf("1,010-node nested tree in %v", time.Since(start))
	if len(res.Tree) != 1010 || res.Status != supervise.StatusWinner {
		t.Fatalf("%d nodes, status %s; want 1010 and a winner", len(res.Tree), res.Status)
	}
	for _, n := range res.Tree {
		if n.State != supervise.StateDone {
			t.Fatalf("node %s is %s", n.ID, n.State)
		}
		wantDepth := 2
		if n.Parent == "run1" {
			wantDepth = 1
		}
		if n.Depth != wantDepth {
			t.Fatalf("node %s at depth %d under %s, want %d", n.ID, n.Depth, n.Parent, wantDepth)
		}
	}
	if peak > 64 || peak < 11 {
		t.Errorf("peak live %d, want at most the cap 64 (and more than the 10 leads)", peak)
	}
	checkConservedReadout(t, readout)
	if res.Spent.Tokens != 1000 || !res.Spent.TokensKnown {
		t.Errorf("spent %+v, want 1000 tokens known", res.Spent)
	}
}

// BenchmarkNestedTree runs b.N trees of 10 nested managers × 100
// workers (1,010 nodes each), in memory and with a file journal:
// ns/op and B/op are per tree, µs/worker per spawned worker.
func BenchmarkNestedTree(b *testing.B) {
	for _, tc := range []struct {
		name string
		dir  bool
	}{{"memory", false}, {"file-journal", true}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				dir := ""
				if tc.dir {
					dir = b.TempDir()
				}
				if res, _, _ := nestedTree(b, 10, 100, 64, dir); len(res.Tree) != 1010 {
					b.Fatalf("%d nodes", len(res.Tree))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*1010), "µs/worker")
		})
	}
}
