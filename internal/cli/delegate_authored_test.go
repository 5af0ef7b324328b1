package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// authoredSpawn is a manager turn spawning a worker profile it wrote,
// whose model is model.
func authoredSpawn(model string) string {
	return `{"calls": [{"verb": "spawn_worker", "args": {"label": "critic", "task": "Critique the draft.", "profile": {"name": "critic", "harness": "cli-base",
		"model": {"provider": "scripted", "default": "` + model + `"}, "prompt": {"systemPrompt": "You critique drafts."}}}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
}

// TestMCPDelegateAuthoredProfileFlags runs the real agentrt binary as the
// delegation server with a manager that authors worker profiles (§9's
// authoring supervisor): --allowed-model holds what an authored worker
// may run (one on another model is refused and never spawned, one on an
// allowed model runs that exact profile and wins), and
// without the flag, the --worker profiles' models are the allowed ones;
// --authored-profiles=false refuses every authored profile, so the same
// manager ends without a winner and without a worker.
func TestMCPDelegateAuthoredProfileFlags(t *testing.T) {
	t.Parallel()
	bin := buildAgentrt(t)
	script := managerScript(t, `{"turns": [`+authoredSpawn("scripted/other")+`, `+authoredSpawn("scripted/note-writer")+`, `+awaitOne+`, `+answerDone+`]}`)
	tests := []struct {
		name       string
		flags      []string
		wantStatus string
		wantModels []string // the models of the spawned workers, in order
	}{
		{"default: the worker profiles' models", nil, "winner", []string{"scripted/note-writer"}},
		{"allowed model held", []string{"--allowed-model", "scripted/other"}, "winner", []string{"scripted/other"}},
		{"authoring off", []string{"--authored-profiles=false"}, "no-winner", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := mcpDeadline(t)
			dir := t.TempDir()
			runDir := filepath.Join(dir, "delegations")
			args := append([]string{"--manager", supManager, "--worker", noteWriter, "--expect", "Done",
				"--manager-script", script, "--run-dir", runDir, "--db", filepath.Join(dir, "agentrt.db")}, tc.flags...)
			cs, _, stderr := startDelegate(t, ctx, bin, dir, args...)
			defer cs.Close()
			got := toolResult(t, ctx, cs, "delegate", `{"intent": "Review the release draft.", "waitSeconds": 120}`)
			if got["status"] != tc.wantStatus {
				t.Fatalf("delegate: status %v, want %s: %v\n%s", got["status"], tc.wantStatus, got, stderr.String())
			}
			recs, _, err := supervise.ReadRunDir(ctx, filepath.Join(runDir, got["taskId"].(string)))
			if err != nil {
				t.Fatal(err)
			}
			var models []string
			for _, r := range recs {
				if r.Kind != supervise.KindSpawned {
					continue
				}
				models = append(models, r.Model)
				if r.ProfileDigest == "" || r.Profile != "critic" {
					t.Errorf("spawned %s as profile %q digest %q, want the authored critic journaled by digest", r.Node, r.Profile, r.ProfileDigest)
				}
			}
			if len(models) != len(tc.wantModels) || (len(models) > 0 && models[0] != tc.wantModels[0]) {
				t.Errorf("spawned workers' models %v, want %v", models, tc.wantModels)
			}
		})
	}
}
