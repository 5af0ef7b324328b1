package coordmcp_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// NewHarnessBrain refuses what an external-harness manager cannot run:
// a harness without an external brain, no coordination verb granted, a
// verb supervise does not serve (§3.6 Brain from profile.harness).
func TestNewHarnessBrainRefuses(t *testing.T) {
	prov := scripted.New(writerScript(t), scripted.Options{})
	tests := []struct{ name, doc, want string }{
		{"cli-base", `{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`, "no external brain"},
		{"no verb", `{"name": "m", "harness": "claude-code", "tools": {"Read": true}}`, "grants no coordination verb"},
		{"verb off", `{"name": "m", "harness": "codex", "tools": {"agent_runtime_coordination_spawn_worker": false}}`, "grants no coordination verb"},
		{"unknown verb", `{"name": "m", "harness": "opencode", "tools": {"agent_runtime_coordination_spawn_worker": true,
			"agent_runtime_coordination_fork_universe": true}}`, "agent_runtime_coordination_fork_universe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := coordmcp.NewHarnessBrain(parseProfile(t, tc.doc), prov, coordmcp.HarnessOptions{Relay: []string{"/bin/agentrt"}})
			if !errors.Is(err, supervise.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewHarnessBrain: %v, want ErrInvalidOptions naming %q", err, tc.want)
			}
		})
	}
	if _, err := coordmcp.NewHarnessBrain(nil, prov, coordmcp.HarnessOptions{}); !errors.Is(err, supervise.ErrInvalidOptions) {
		t.Errorf("a nil manager: %v", err)
	}
}

// A harness whose turn fails (here: the provider refuses the manager's
// profile before dispatch) ends the run driver-failed, with no endpoint
// left behind.
func TestHarnessBrainFailedTurnIsDriverFailed(t *testing.T) {
	runDir := t.TempDir()
	manager := parseProfile(t, `{"name": "manager", "harness": "claude-code", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	// The scripted provider is not a claude-code harness: it refuses the
	// profile before anything runs.
	brain, err := coordmcp.NewHarnessBrain(manager, scripted.New(writerScript(t), scripted.Options{}),
		coordmcp.HarnessOptions{Relay: []string{"/nonexistent/agentrt", "mcp", "coordination"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := supervise.Supervise(deadline(t), manager, "write alpha", runOptions(t, runDir, brain))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != supervise.StatusNoWinner || res.Reason != supervise.ReasonDriverFailed || res.Error == nil {
		t.Errorf("status %s reason %s error %+v, want no-winner driver-failed", res.Status, res.Reason, res.Error)
	}
	if _, err := coordmcp.ReadEndpoint(runDir); !errors.Is(err, coordmcp.ErrNotLive) {
		t.Errorf("after the run: %v, want the endpoint gone", err)
	}
}

// A HarnessBrain asked to drive a nested manager (supervise's
// ManagerBrain) refuses with ErrNestedHarness instead of serving its
// verbs at the run dir's one endpoint, the root's: the nested manager
// settles failed naming it, and the root's run goes on.
func TestHarnessBrainRefusesNestedManager(t *testing.T) {
	lead := parseProfile(t, `{"name": "lead", "harness": "claude-code", "model": {"default": "scripted/lead"},
		"tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	brain, err := coordmcp.NewHarnessBrain(lead, scripted.New(writerScript(t), scripted.Options{}),
		coordmcp.HarnessOptions{Relay: []string{"/nonexistent/agentrt", "mcp", "coordination"}})
	if err != nil {
		t.Fatal(err)
	}
	var reason string
	root := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		sp, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "lead", Task: "lead"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000})
		if err != nil || ev.Event == nil || ev.Event.WorkerID != sp.WorkerID {
			return supervise.BrainReport{}, errors.Join(err, errors.New("no settlement of the lead"))
		}
		reason = ev.Event.Reason
		return supervise.BrainReport{}, nil
	})
	o := runOptions(t, t.TempDir(), root)
	o.Profiles["lead"] = lead
	o.ManagerBrain = func(*profile.Profile) supervise.Brain { return brain }
	res, err := supervise.Supervise(deadline(t), cliBase(t), "t", o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || len(res.Tree) != 1 || res.Tree[0].State != supervise.StateFailed {
		t.Fatalf("result %+v, want the lead failed and the root's run ended", res)
	}
	if !strings.Contains(reason, coordmcp.ErrNestedHarness.Error()) {
		t.Errorf("the lead's reason %q, want ErrNestedHarness", reason)
	}
}
