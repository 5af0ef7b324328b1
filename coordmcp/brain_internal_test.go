package coordmcp

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
)

// The profile the harness runs: the coordination verbs are no longer
// tools of its own but the MCP server "agentrt", the relay started with
// the run dir; claude-code (dontAsk) gets that server allowed, codex and
// opencode need no rule. The rest of the profile is unchanged.
func TestMountedProfile(t *testing.T) {
	for _, tc := range []struct {
		harness   string
		wantTools map[string]bool
	}{
		{"claude-code", map[string]bool{"Read": true, "mcp__agentrt": true}},
		{"codex", nil},
		{"opencode", nil},
	} {
		t.Run(tc.harness, func(t *testing.T) {
			doc := `{"name": "m", "harness": "` + tc.harness + `", "tools": {"agent_runtime_coordination_spawn_worker": true,
				"agent_runtime_coordination_stop": false}}`
			if tc.harness == "claude-code" {
				doc = `{"name": "m", "harness": "claude-code", "tools": {"agent_runtime_coordination_spawn_worker": true, "Read": true}}`
			}
			manager, err := profile.Parse([]byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewHarnessBrain(manager, scripted.New(nil, scripted.Options{}), HarnessOptions{Relay: []string{"/opt/agentrt", "mcp", "coordination"}})
			if err != nil {
				t.Fatal(err)
			}
			p, err := b.mounted("/runs/r1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantTools, p.Tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			srv, ok := p.MCP[MCPServerName]
			if !ok || srv.Command == nil || *srv.Command != "/opt/agentrt" {
				t.Fatalf("mcp %+v", p.MCP)
			}
			var args []string
			for _, a := range srv.Args {
				args = append(args, *a.Value)
			}
			if diff := cmp.Diff([]string{"mcp", "coordination", "/runs/r1"}, args); diff != "" {
				t.Errorf("relay args (-want +got):\n%s", diff)
			}
			if data, err := profile.Canonical(p); err != nil {
				t.Errorf("the mounted profile: %v", err)
			} else if _, err := profile.Parse(data); err != nil {
				t.Errorf("the mounted profile does not validate: %v", err)
			}
			if b.manager.MCP != nil {
				t.Error("mounting changed the manager's own profile")
			}
		})
	}
}
