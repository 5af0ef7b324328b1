package supervise_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// crashAfterSettle is a spawn journal whose process "dies" right after
// its first settlement is durable: every later append fails and lands
// nothing, so the run's end is never journaled and the next process
// resumes it.
type crashAfterSettle struct {
	supervise.SpawnLog
	dead *atomic.Bool
}

var errCrashed = errors.New("simulated crash: nothing lands after the first settlement")

func (c crashAfterSettle) Append(ctx context.Context, recs ...supervise.Record) error {
	if c.dead.Load() {
		return errCrashed
	}
	if err := c.SpawnLog.Append(ctx, recs...); err != nil {
		return err
	}
	for _, r := range recs {
		if r.Kind == "settled" {
			c.dead.Store(true)
		}
	}
	return nil
}

// Behaviour 44 across a restart (§3.6 "Keyed spawns across restarts"):
// a key whose prior attempt went down in the earlier process is spawned
// fresh by the resumed one, which reports resumed: retried with the
// prior worker and its reason, and runs the work again; the same key
// spawned again while that retry is live is refused duplicate-key,
// reserving nothing.
func TestKeyedSpawnRetriedAcrossRestartThenDuplicateBehaviour44(t *testing.T) {
	dir := t.TempDir()
	keyed := map[string]any{"profile": "writer", "task": "write alpha", "key": "alpha-1"}

	o := baseOptions(t, failingExecutor{}, nil)
	o.RunDir = dir
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if r := tool(t, ctx, c, supervise.VerbSpawnWorker, keyed); r["assignment"] != "key:alpha-1" {
			t.Fatalf("first spawn: %v", r)
		}
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	var dead atomic.Bool
	crashing := supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
		return crashAfterSettle{SpawnLog: sl, dead: &dead}
	})
	_, _ = supervise.Supervise(crashing, managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if !dead.Load() {
		t.Fatal("the first process never journaled its settlement")
	}

	gate := &gateExecutor{release: make(chan struct{})}
	var retried, duplicate map[string]any
	var awaited []map[string]any
	o = baseOptions(t, gate, nil)
	o.RunDir, o.Resume = dir, true
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		retried = tool(t, ctx, c, supervise.VerbSpawnWorker, keyed)
		before := c.Readout()
		duplicate = tool(t, ctx, c, supervise.VerbSpawnWorker, keyed)
		if diff := cmp.Diff(before, c.Readout()); diff != "" {
			t.Errorf("the duplicate-key refusal changed the pool (-before +after):\n%s", diff)
		}
		close(gate.release)
		// The first process may have died before it journaled that its
		// brain took run1:s1's settlement (what lands after the settled
		// record depends on the group commit), so the resumed brain can
		// be offered it again: wait for the retry's own settlement.
		for {
			ev := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
			awaited = append(awaited, ev)
			if e, _ := ev["event"].(map[string]any); e == nil || e["workerId"] == retried["workerId"] {
				break
			}
		}
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if retried["resumed"] != "retried" || retried["priorWorkerId"] != "run1:s1" || retried["priorReason"] == nil || retried["workerId"] == "run1:s1" {
		t.Errorf("resumed keyed spawn: %v, want resumed retried from run1:s1 with its reason under a new worker id", retried)
	}
	if duplicate["error"] != string(supervise.CodeDuplicateKey) {
		t.Errorf("same key while its retry is live: %v, want duplicate-key", duplicate)
	}
	if res.Status != supervise.StatusWinner || res.Winner == nil || res.Winner.Node != supervise.NodeID(retried["workerId"].(string)) {
		t.Errorf("result %s winner %+v, want the retry to win; the brain awaited %v", res.Status, res.Winner, awaited)
	}
}
