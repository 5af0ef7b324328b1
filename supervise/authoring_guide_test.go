package supervise_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 spawning fences for an authored profile under AllowedModels: one
// that names no model would run whatever its executor defaults to, so
// it is refused model-not-allowed with the pointer to fill in; and
// spawn_worker's description, which is the manager's instructions for
// authoring, names the registered profiles, the allowed models and the
// surfaces that are refused (§9 delegate's authoring supervisor).
func TestAuthoredProfileFencesInTheSpawnTool(t *testing.T) {
	noModel := authoredDoc("scripted/critic")
	delete(noModel, "model")
	o := baseOptions(t, &profileExecutor{}, nil)
	o.AuthoredProfiles, o.AllowedModels = true, []string{"scripted/critic", "scripted/writer"}
	var refused map[string]any
	var desc string
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tools, err := c.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, tl := range tools {
			if tl.Name == supervise.ToolPrefix+supervise.VerbSpawnWorker {
				desc = tl.Description
			}
		}
		refused = tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": noModel, "task": "critique alpha"})
		return supervise.BrainReport{}, nil
	})
	manager, err := processManager()
	if err != nil {
		t.Fatal(err)
	}
	res, err := supervise.Supervise(context.Background(), manager, "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if refused["error"] != "invalid-identity" || refused["cause"] != "model-not-allowed" || !strings.Contains(refused["reason"].(string), "/profile/model/default") {
		t.Errorf("an authored profile without a model: %v", refused)
	}
	if len(res.Tree) != 0 {
		t.Errorf("a refused spawn left nodes: %+v", res.Tree)
	}
	for _, want := range []string{"writer", "scripted/critic, scripted/writer", `"model": {"default"`, "hooks", "command (local) MCP servers", "connections", "JSON pointer"} {
		if !strings.Contains(desc, want) {
			t.Errorf("spawn_worker's description does not say %q:\n%s", want, desc)
		}
	}
}
