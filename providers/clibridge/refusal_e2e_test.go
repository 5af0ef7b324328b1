package clibridge

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// With the real binaries and a fake model server, every profile feature
// codex and opencode still cannot honour exactly is refused — at create
// and, carried by a turn's profile, at the turn — before anything is
// spawned: the model server sees no request at all.
func TestRefusalsReachNoServer(t *testing.T) {
	secret := profile.ConfigValue{Kind: profile.ConfigSecretRef, Key: profile.Ptr("k")}
	common := map[string]*profile.Profile{
		"mcp-sse":    {MCP: map[string]profile.MCPServer{"s": {URL: profile.Ptr("https://mcp.example.com/sse"), Transport: profile.Ptr("sse")}}},
		"mcp-secret": {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("x"), Env: map[string]profile.ConfigValue{"T": secret}}}},
		"mcp-cwd":    {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("x"), Cwd: profile.Ptr("sub")}}},
		"mcp-name":   {MCP: map[string]profile.MCPServer{"a-b": {Command: profile.Ptr("x")}}},
		"ask":        {Permissions: map[string]profile.Permission{"bash": {Value: profile.Ask}}},
	}
	for _, c := range []struct {
		name    string
		api     fakeAPI
		newP    func(testing.TB, *fakeServer) *Provider
		refused map[string]*profile.Profile
	}{
		{"codex", openAIAPI{}, newCodexProvider, map[string]*profile.Profile{
			"own-tool":    {Tools: map[string]bool{"exec_command": false}},
			"permissions": {Permissions: map[string]profile.Permission{"bash": {Value: profile.Deny}}},
		}},
		{"opencode", chatCompletionsAPI{}, newOpencodeProvider, map[string]*profile.Profile{
			"unknown-tool":       {Tools: map[string]bool{"probe_probe_echo": false}},
			"unknown-permission": {Permissions: map[string]profile.Permission{"write": {Value: profile.Deny}}},
			"empty-system":       {Prompt: &profile.Prompt{SystemPrompt: profile.Ptr("")}},
			"substituted-mcp": {MCP: map[string]profile.MCPServer{"s": {Command: profile.Ptr("x"), Env: map[string]profile.ConfigValue{
				"T": {Kind: profile.ConfigPublic, Value: profile.Ptr("{env:" + opencodeAPIKeyEnv + "}")}}}}},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeServer(t, c.api, opencodeScript)
			p := c.newP(t, f)
			for name, pr := range common {
				c.refused[name] = pr
			}
			for name, pr := range c.refused {
				if _, err := p.Create(context.Background(), &contract.CreateInput{Profile: profile.Ref{Inline: pr}}); !errors.Is(err, contract.ErrUnsupported) {
					t.Errorf("%s: create error %v, want ErrUnsupported", name, err)
				}
				env, err := p.Create(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				checkTurnUnsupported(t, name, env, &contract.TurnInput{Prompt: profile.Ptr("hi"), Profile: pr})
			}
			if reqs := f.Requests(); len(reqs) != 0 {
				t.Errorf("the model server saw %d requests; a refused profile reached the harness", len(reqs))
			}
		})
	}
}
