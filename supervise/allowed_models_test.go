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

// ModelsOf lists every model a profile names, once each, in the order
// AllowedModels checks them, so a caller that builds AllowedModels from
// its workers' profiles (agentrt delegate --authored) never refuses its
// own registered worker for a model it hides in model.small, a seat, a
// subagent or a mode.
func TestModelsOfNamesEveryModelOnce(t *testing.T) {
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"none", `{"name": "w"}`, nil},
		{"default only", `{"name": "w", "model": {"default": "a"}}`, []string{"a"}},
		{"default and small", `{"name": "w", "model": {"default": "a", "small": "b"}}`, []string{"a", "b"}},
		{"repeats collapse", `{"name": "w", "model": {"default": "a", "small": "a"}, "modes": {"m": {"model": "a"}}}`, []string{"a"}},
		{"subagents and modes in key order", `{"name": "w", "model": {"default": "a"}, "subagents": {"z": {"description": "d", "model": "z1"}, "y": {"description": "d", "model": "y1"}}, "modes": {"m": {"model": "m1"}}}`,
			[]string{"a", "y1", "z1", "m1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := supervise.ModelsOf(mustProfile(t, tc.doc))
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("ModelsOf = %q, want %q", got, tc.want)
			}
		})
	}
	if got := supervise.ModelsOf(nil); got != nil {
		t.Errorf("ModelsOf(nil) = %q, want nil", got)
	}
}
