package supervise_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// §3.6 allowedModels holds every model a worker's profile names, not
// only model.default: the reference refuses a model hidden in
// model.small, a subagent or a mode ("allowedModels rejects a hidden
// …"). A registered worker or an authored one hiding a model outside the
// set is refused invalid-identity (model-not-allowed) naming where, and
// nothing runs; the same worker without it runs.
func TestAllowedModelsHoldsTheModelsAProfileHides(t *testing.T) {
	cases := []struct {
		name    string
		worker  string // the registered writer's profile document
		spawn   any    // the spawn's profile: "writer" or an authored document
		pointer string // "" when the spawn runs
	}{
		{name: "registered, default only", worker: `{"name": "writer", "model": {"default": "safe"}}`, spawn: "writer"},
		{name: "registered, small model", worker: `{"name": "writer", "model": {"default": "safe", "small": "unsafe-small"}}`, spawn: "writer",
			pointer: "/profile/model/small"},
		{name: "registered, subagent model", worker: `{"name": "writer", "model": {"default": "safe"}, "subagents": {"critic": {"description": "d", "model": "unsafe-subagent"}}}`,
			spawn: "writer", pointer: "/profile/subagents/critic/model"},
		{name: "authored, mode model", worker: `{"name": "writer", "model": {"default": "safe"}}`,
			spawn:   map[string]any{"name": "reviewer", "model": map[string]any{"default": "safe"}, "modes": map[string]any{"review": map[string]any{"model": "unsafe-mode"}}},
			pointer: "/profile/modes/review/model"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exec := &profileExecutor{}
			o := baseOptions(t, exec, nil)
			o.AllowedModels, o.AuthoredProfiles = []string{"safe"}, true
			o.Profiles = map[string]*profile.Profile{"writer": mustProfile(t, tc.worker)}
			var got map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				got = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": tc.spawn, "task": "go"})
				if got["error"] == nil {
					tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
				}
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if tc.pointer == "" {
				if got["error"] != nil || len(exec.seen()) != 1 {
					t.Errorf("spawn %v, %d runs; want it run", got, len(exec.seen()))
				}
				return
			}
			reason, _ := got["reason"].(string)
			if got["error"] != "invalid-identity" || got["cause"] != "model-not-allowed" || !strings.HasPrefix(reason, tc.pointer+":") || len(exec.seen()) != 0 {
				t.Errorf("spawn %v, %d runs; want invalid-identity (model-not-allowed) at %s, nothing run", got, len(exec.seen()), tc.pointer)
			}
		})
	}
}
