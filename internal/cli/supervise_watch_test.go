package cli_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// agentrt supervise --watch-workers (§3.6 watchWorkers): a worker whose
// turn calls grep with the same arguments three times raises one online
// repeated-action finding, which the manager's await_event takes before
// the worker's settlement and the coordination log keeps; without the
// flag no worker is watched.
func TestSuperviseWatchWorkers(t *testing.T) {
	worker := writeFile(t, "worker-script.json", `{"turns": [{"repeat": true, "steps": [
	  {"toolCall": {"id": "c1", "name": "grep", "arguments": {"q": "x"}}},
	  {"toolCall": {"id": "c2", "name": "grep", "arguments": {"q": "x"}}},
	  {"toolCall": {"id": "c3", "name": "grep", "arguments": {"q": "x"}}},
	  {"text": "Done: looped"}]}]}`)
	awaitFinding := `{"calls": [{"verb": "await_event", "args": {"kinds": ["finding"], "timeoutMs": 3000}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string // the lenses of the log's online findings
	}{
		{"watched", []string{"--watch-workers"}, []string{"online:repeated-action"}},
		{"off", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitFinding+`, `+awaitOne+`, `+answerDone+`]}`)
			out, errOut, code := run(t, "", superviseArgs(t, script, dir, append([]string{"--script", worker}, tc.flags...)...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			recs, _, err := supervise.ReadCoordinationLog(context.Background(), dir)
			if err != nil && tc.want != nil {
				t.Fatal(err)
			}
			var lenses []string
			for _, r := range recs {
				if r.Finding != nil && r.Finding.Outcome == supervise.FindingDetected {
					lenses = append(lenses, r.Finding.Lens)
					if r.Finding.Source != "rel:s1" {
						t.Errorf("finding about %q, want rel:s1", r.Finding.Source)
					}
				}
			}
			if len(lenses) != len(tc.want) || (len(lenses) == 1 && lenses[0] != tc.want[0]) {
				t.Errorf("online findings %q, want %q", lenses, tc.want)
			}
		})
	}
}
