package supervise_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 continuityByProfile, labels per manager: a nested lead's
// spawn_worker with the same label ("writer") as a settled root worker
// finds nothing of its own to resume — its defaulted resume degrades to
// fresh, it does not re-attach to the root's writer — and the lead's
// second writer resumes the lead's first, not the root's.
func TestContinuityByProfileNestedLabelEqualToARootLabel(t *testing.T) {
	exec := &resumingWorkers{resumeOf: map[supervise.NodeID]supervise.NodeID{}}
	o := nestedOptions(t, exec, nil, nil)
	o.ContinuityByProfile = map[string]supervise.Continuity{"writer": supervise.ContinuityResume}
	var leadReplies []map[string]any
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			leadReplies = append(leadReplies, spawnReply(tool(t, ctx, c, supervise.VerbSpawnWorker, writer("lead one"))))
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
			leadReplies = append(leadReplies, spawnReply(tool(t, ctx, c, supervise.VerbSpawnWorker, writer("lead two"))))
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
	}
	var rootReply map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		rootReply = spawnReply(tool(t, ctx, c, supervise.VerbSpawnWorker, writer("root one")))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead", "label": "lead",
			"budget": map[string]any{"maxTokens": 3000, "maxIterations": 5, "maxUsd": 0.5}})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"workerId": "run1:s1", "continuity": "fresh"}, rootReply); diff != "" {
		t.Errorf("the root's writer (-want +got):\n%s", diff)
	}
	want := []map[string]any{{"workerId": "run1:s2:s3", "continuity": "fresh"}, {"workerId": "run1:s2:s4", "continuity": "resume"}}
	if diff := cmp.Diff(want, leadReplies); diff != "" {
		t.Errorf("the lead's spawn_worker replies (-want +got):\n%s", diff)
	}
	exec.mu.Lock()
	defer exec.mu.Unlock()
	if got := exec.resumeOf["run1:s2:s3"]; got != "" {
		t.Errorf("the lead's first writer resumes %q, want nothing (the root's writer is not the lead's)", got)
	}
	if got := exec.resumeOf["run1:s2:s4"]; got != "run1:s2:s3" {
		t.Errorf("the lead's second writer resumes %q, want run1:s2:s3", got)
	}
}
