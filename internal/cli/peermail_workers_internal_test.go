package cli

import (
	"strings"
	"testing"
)

// §9 peer mail: --peer-mail refuses workers whose provider cannot mount
// an MCP server, and only those. --provider names the manager's provider
// and, when no --worker-provider covers them, the workers'; a worker
// named by its own WORKER=PROVIDER does not run on it. Before, the
// --provider of an in-process manager (scripted, openai) was held to the
// harness rule even when every worker was keyed to a harness:
// "--peer-mail ...: workers on scripted cannot mount one".
func TestPeerMailWorkersChecksOnlyProvidersWorkersRunOn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		primary string
		names   []string
		wp      workerProviders
		refused string // "" when admitted
	}{
		{name: "every worker keyed to a harness", primary: "scripted", names: []string{"a", "b"},
			wp: workerProviders{byNode: map[string]string{"a": "claude-code", "b": "codex"}}},
		{name: "one worker left on --provider", primary: "scripted", names: []string{"a", "b"},
			wp: workerProviders{byNode: map[string]string{"a": "claude-code"}}, refused: "workers on scripted cannot mount"},
		{name: "--worker-provider for all", primary: "openai", names: []string{"a"},
			wp: workerProviders{all: "claude-code", byNode: map[string]string{}}},
		{name: "--worker-provider for all, one keyed off a harness", primary: "openai", names: []string{"a", "b"},
			wp: workerProviders{all: "claude-code", byNode: map[string]string{"b": "openai"}}, refused: "workers on openai cannot mount"},
		{name: "workers on --provider", primary: "scripted", names: []string{"a"},
			wp: workerProviders{byNode: map[string]string{}}, refused: "workers on scripted cannot mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &providers{primary: tc.primary}
			err := p.peerMailWorkers(tc.wp, tc.names, false)
			switch {
			case tc.refused == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
				t.Fatalf("err = %v, want one saying %q", err, tc.refused)
			}
		})
	}
}
