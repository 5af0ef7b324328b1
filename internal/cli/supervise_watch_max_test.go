package cli_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// agentrt supervise --watch-max-findings (§3.6 watchWorkers): a worker
// repeating one call six times trips the stuck-loop detector on its
// 3rd, 4th, 5th and 6th calls; the flag caps the findings raised per
// worker — 1 keeps one, 0 the default three, a negative value all four —
// and implies --watch-workers. Each raised finding is journaled once.
func TestSuperviseWatchMaxFindings(t *testing.T) {
	worker := writeFile(t, "worker-script.json", `{"turns": [{"repeat": true, "steps": [
	  {"toolCall": {"id": "c1", "name": "grep", "arguments": {"q": "x"}}},
	  {"toolCall": {"id": "c2", "name": "grep", "arguments": {"q": "x"}}},
	  {"toolCall": {"id": "c3", "name": "grep", "arguments": {"q": "x"}}},
	  {"toolCall": {"id": "c4", "name": "grep", "arguments": {"q": "x"}}},
	  {"toolCall": {"id": "c5", "name": "grep", "arguments": {"q": "x"}}},
	  {"toolCall": {"id": "c6", "name": "grep", "arguments": {"q": "x"}}},
	  {"text": "Done: looped"}]}]}`)
	awaitSettled := `{"calls": [{"verb": "await_event", "args": {"kinds": ["settled"], "timeoutMs": 60000}}], "usage": {"inputTokens": 20, "outputTokens": 5}}`
	for _, tc := range []struct {
		name  string
		flags []string
		want  int
	}{
		{"cap 1", []string{"--watch-max-findings", "1"}, 1},
		{"cap 0 is the default", []string{"--watch-workers", "--watch-max-findings", "0"}, supervise.DefaultMaxFindingsPerWorker},
		{"negative is unlimited", []string{"--watch-max-findings=-1"}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			script := managerScript(t, `{"turns": [`+spawnNote+`, `+awaitSettled+`, `+answerDone+`]}`)
			out, errOut, code := run(t, "", superviseArgs(t, script, dir, append([]string{"--script", worker}, tc.flags...)...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			recs, _, err := supervise.ReadCoordinationLog(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			var streaks []string
			for _, r := range recs {
				if r.Finding != nil && r.Finding.Outcome == supervise.FindingDetected {
					streaks = append(streaks, r.Finding.Lens+" "+r.Finding.Findings)
				}
			}
			if len(streaks) != tc.want {
				t.Errorf("%d online findings, want %d: %q", len(streaks), tc.want, streaks)
			}
		})
	}
}
