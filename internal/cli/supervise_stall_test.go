package cli_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 stallAfterMs through the real binary: agentrt supervise
// --stall-after D is the idle time past which the manager's
// observe_agent reads a running worker stalled. The scripted manager
// spawns a worker that pauses two seconds mid-turn, waits 700ms on
// await_event (nothing settles), then observes it: idle past
// --stall-after 200ms it reads stalled, under the default two minutes it
// does not; the reading, kept in the manager's journaled transcript,
// names the threshold it was judged by.
func TestSuperviseStallAfterFlagBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt in a child process")
	}
	dir := t.TempDir()
	manager := writeFile(t, "manager.json", `{"name": "watcher", "harness": "cli-base", "model": {"default": "scripted/manager"},
  "prompt": {"systemPrompt": "Spawn, wait, observe."},
  "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true,
    "agent_runtime_coordination_observe_agent": true}}`)
	slow := writeFile(t, "slow.json", `{"turns": [{"match": "note", "repeat": true, "steps": [{"text": "drafting"}, {"delayMs": 2000}, {"text": "Done: the note."}]}]}`)
	script := managerScript(t, `{"turns": [
  {"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "task": "Write a note."}}]},
  {"calls": [{"verb": "await_event", "args": {"timeoutMs": 700}}]},
  {"calls": [{"verb": "observe_agent", "args": {"workerId": "stall:s1"}}]},
  {"calls": [{"verb": "await_event", "args": {"timeoutMs": 60000}}]},
  {"text": "done"}]}`)
	for _, tc := range []struct {
		name        string
		flags       []string
		wantStalled bool
		wantMS      float64
	}{
		{"--stall-after 200ms", []string{"--stall-after", "200ms"}, true, 200},
		{"default", nil, false, float64(supervise.StallAfter.Milliseconds())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runDir := filepath.Join(dir, strings.NewReplacer("-", "", " ", "").Replace(tc.name))
			args := append([]string{"supervise", manager, "--task", "Write a note.", "--worker", noteWriter, "--manager-script", script,
				"--script", slow, "--run-id", "stall", "--run-dir", runDir, "--db", runDir + ".db", "--expect", "Done"}, tc.flags...)
			out, errOut, code := agentrtBinary(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
			}
			progress := observedProgress(t, runDir)
			got := map[string]any{"stalled": progress["stalled"], "stallAfterMs": progress["stallAfterMs"]}
			want := map[string]any{"stalled": tc.wantStalled, "stallAfterMs": tc.wantMS}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("observe_agent's progress (-want +got):\n%s\nwhole block: %v", diff, progress)
			}
			// The worker's last activity (its streamed text) came just
			// after the manager began its 700ms wait.
			if idle, _ := progress["idleMs"].(float64); idle < 500 {
				t.Errorf("idleMs %v, want most of the 700ms the manager waited", progress["idleMs"])
			}
		})
	}
	_, errOut, code := agentrtBinary(t, nil, "supervise", manager, "--task", "x", "--worker", noteWriter, "--stall-after", "-1s",
		"--db", filepath.Join(dir, "neg.db"))
	if code != 2 || !strings.Contains(errOut, "--stall-after cannot be negative") {
		t.Errorf("--stall-after -1s: exit %d, stderr %q; want a usage error (2)", code, errOut)
	}
}

// observedProgress is the progress block of the observe_agent result the
// run in runDir's manager read, from its journaled transcript.
func observedProgress(t *testing.T, runDir string) map[string]any {
	t.Helper()
	recs, _, err := supervise.ReadRunDir(context.Background(), runDir)
	if err != nil {
		t.Fatal(err)
	}
	observeCall := ""
	for _, r := range recs {
		if r.Kind != supervise.KindTranscript {
			continue
		}
		for _, m := range r.Messages {
			for _, c := range m.ToolCalls {
				if strings.HasSuffix(c.Name, supervise.VerbObserveAgent) {
					observeCall = c.ID
				}
			}
			if m.ToolCallID != "" && m.ToolCallID == observeCall && m.Content != nil {
				var res struct {
					Progress map[string]any `json:"progress"`
				}
				// The scripted manager's tool message reads
				// "- VERB → ok: RESULT".
				_, body, _ := strings.Cut(*m.Content, "→ ok: ")
				if err := json.Unmarshal([]byte(body), &res); err != nil {
					t.Fatalf("observe_agent's result %q: %v", *m.Content, err)
				}
				return res.Progress
			}
		}
	}
	t.Fatalf("the journal of %s holds no observe_agent result", runDir)
	return nil
}
