package supervise_test

import (
	"context"
	"strings"
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
