package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §9 run_analyst, §3.6 (a refused spawn changes nothing): an analysis
// the scope refused (here AuthorizeSpawn: preflight-refused) was
// answered {error, reason}; a process that dies after that refusal
// leaves no request for the resumed run to start on its own — the
// manager was told the analysis did not happen, and nothing asked for it
// again — so the resumed process runs no analyst and charges none.
// Checklist: §9 run_analyst, behaviour 38 (refusals are results and
// change nothing).
func TestRefusedRunAnalystIsNotStartedByAResumedRun(t *testing.T) {
	dir := t.TempDir()
	first := analystExecutor(t)
	o := baseOptions(t, first, nil)
	o.RunDir = dir
	o.AuthorizeSpawn = func(r supervise.SpawnRequest) error {
		if strings.HasPrefix(r.Profile, "analyst-") {
			return errors.New("no analysts in this run")
		}
		return nil
	}
	var refused map[string]any
	// The process dies right after the refusal: nothing it appends
	// later (the run's end) lands.
	var cut atomic.Bool
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		refused = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s1"})
		cut.Store(true)
		return supervise.BrainReport{}, nil
	})
	ctx := supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
		return cutAfterRefusal{SpawnLog: sl, cut: &cut}
	})
	_, _ = supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if refused["error"] != "preflight-refused" || first.count("ANALYST LENS") != 0 {
		t.Fatalf("run_analyst refused by AuthorizeSpawn: %v (analyst runs %d), want preflight-refused", refused, first.count("ANALYST LENS"))
	}

	second := analystExecutor(t)
	o = baseOptions(t, second, nil)
	o.RunDir, o.Resume = dir, true
	var ev map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		ev = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"finding"}})
		return supervise.BrainReport{}, nil
	})
	res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if n := second.count("ANALYST LENS"); n != 0 || len(res.Tree) != 1 {
		t.Errorf("the resumed run ran the refused analysis %d times (await %v, tree %+v); want none", n, ev, res.Tree)
	}
}

// cutAfterRefusal is a spawn log that lands nothing once cut is set.
type cutAfterRefusal struct {
	supervise.SpawnLog
	cut *atomic.Bool
}

func (l cutAfterRefusal) Append(ctx context.Context, recs ...supervise.Record) error {
	if l.cut.Load() {
		return errCrashed
	}
	return l.SpawnLog.Append(ctx, recs...)
}
