package supervise_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// §9 run_analyst, §3.6 "a nested manager sees its own subtree": a lead
// (a nested manager) may analyse only the workers it reaches — a root
// worker outside its subtree is unknown-worker to it, as it is to
// observe_agent and steer_agent — and the analyst it starts is its own
// child ("<lead>:s<n>", reserved from the pool carved for it), whose
// finding its own await_event returns. Checklist: §9 run_analyst,
// behaviour 36 (ids route at any depth).
func TestNestedManagerRunAnalystStaysInItsSubtree(t *testing.T) {
	exec := analystExecutor(t)
	o := baseOptions(t, exec, nil)
	o.Budget.Iterations = i64(20)
	o.Budget.Tokens = i64(20_000)
	o.Profiles["lead"] = leadProfile(t, leadVerbs...)
	lead := map[string]map[string]any{}
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			w := tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}})
			lead["outside"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s1"})
			lead["own"] = tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": w["workerId"]})
			lead["finding"] = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"finding"}})
			return supervise.BrainReport{Text: "lead: alpha DONE"}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}})
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead alpha", "label": "lead",
			"budget": map[string]any{"maxTokens": 4000, "maxIterations": 6, "maxUsd": 0.5}})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if lead["outside"]["error"] != "unknown-worker" {
		t.Errorf("lead's run_analyst over the root's worker run1:s1: %v, want unknown-worker", lead["outside"])
	}
	if id, _ := lead["own"]["analystWorkerId"].(string); !strings.HasPrefix(id, "run1:s2:") {
		t.Errorf("lead's run_analyst over its own worker: %v, want an analyst under the lead run1:s2", lead["own"])
	}
	if ev, _ := lead["finding"]["event"].(map[string]any); ev["kind"] != "finding" {
		t.Errorf("lead's await_event for its finding: %v", lead["finding"])
	}
}

// cutAtRequest is a spawn log that lands nothing after the first
// analysis-requested record: the process dies between a run_analyst's
// request and its analyst's spawn.
type cutAtRequest struct {
	supervise.SpawnLog
	cut *atomic.Bool
}

func (l cutAtRequest) Append(ctx context.Context, recs ...supervise.Record) error {
	if l.cut.Load() {
		return errCrashed
	}
	if err := l.SpawnLog.Append(ctx, recs...); err != nil {
		return err
	}
	for _, r := range recs {
		if r.Kind == supervise.KindAnalysisRequested {
			l.cut.Store(true)
		}
	}
	return nil
}

// A nested manager's analysis requested by a process that died before
// its analyst's spawn is started by the resumed run under that manager
// (its child, once), not under the root. Checklist: §9 run_analyst,
// behaviour 36.
func TestResumedRunStartsANestedManagersRequestedAnalysisUnderIt(t *testing.T) {
	dir := t.TempDir()
	run := func(ctx context.Context, resume bool) (supervise.SupervisedResult, *countingExecutor, error) {
		exec := analystExecutor(t)
		o := baseOptions(t, exec, nil)
		o.RunDir, o.Resume = dir, resume
		o.Budget.Iterations, o.Budget.Tokens = i64(20), i64(20_000)
		o.Profiles["lead"] = leadProfile(t, leadVerbs...)
		o.ManagerBrain = func(*profile.Profile) supervise.Brain {
			return supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				w, err := tryTool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("alpha"))
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if _, err := tryTool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}}); err != nil {
					return supervise.BrainReport{}, err
				}
				if _, err := tryTool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": w["workerId"]}); err != nil {
					return supervise.BrainReport{}, err
				}
				if _, err := tryTool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"finding"}}); err != nil {
					return supervise.BrainReport{}, err
				}
				return supervise.BrainReport{Text: "lead: alpha DONE"}, nil
			})
		}
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			if _, err := tryTool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead alpha", "label": "lead",
				"budget": map[string]any{"maxTokens": 4000, "maxIterations": 6, "maxUsd": 0.5}}); err != nil {
				return supervise.BrainReport{}, err
			}
			_, err := tryTool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000, "kinds": []string{"settled"}})
			return supervise.BrainReport{}, err
		})
		res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o)
		return res, exec, err
	}
	var cut atomic.Bool
	_, _, _ = run(supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
		return cutAtRequest{SpawnLog: sl, cut: &cut}
	}), false)
	if !cut.Load() {
		t.Fatal("the first process never requested the analysis")
	}
	res, exec, err := run(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	var analysts []supervise.NodeID
	for _, n := range res.Tree {
		if strings.HasPrefix(n.Profile, "analyst-") {
			analysts = append(analysts, n.ID)
		}
	}
	if len(analysts) != 1 || !strings.HasPrefix(string(analysts[0]), "run1:s1:") || exec.count("ANALYST LENS") != 1 {
		t.Errorf("analysts %v (runs %d); want one, a child of the lead run1:s1", analysts, exec.count("ANALYST LENS"))
	}
}
