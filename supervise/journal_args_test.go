package supervise_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// read_journal refuses, as await_event does a kind it has not, what its
// caller cannot have meant (§9 read_journal{sinceRow?, kinds?}): a
// misspelt kind ("spawn" for spawned) answered an empty page — as if no
// worker had been spawned — and a sinceRow past the journal's end an
// empty page whose nextRow skipped every row journaled until the
// journal reached it. Each refusal names the argument's JSON pointer;
// the journal's end itself (sinceRow = the row count) is a cursor and
// answers an empty page.
func TestReadJournalRefusesWhatNoRecordHas(t *testing.T) {
	open := make(chan struct{})
	close(open)
	o := baseOptions(t, &gateExecutor{release: open}, nil)
	o.RunDir = t.TempDir()
	got := map[string]map[string]any{}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("one"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		all := tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{})
		got["all"] = all
		for name, args := range map[string]map[string]any{
			"misspelt":   {"kinds": []string{"settled", "spawn"}},
			"empty":      {"kinds": []string{""}},
			"negative":   {"sinceRow": -1},
			"past end":   {"sinceRow": int(all["nextRow"].(float64)) + 1},
			"at end":     {"sinceRow": int(all["nextRow"].(float64))},
			"transcript": {"kinds": []string{supervise.KindTranscript}},
		} {
			got[name] = tool(t, ctx, c, supervise.VerbReadJournal, args)
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, code, at string }{
		{"misspelt", "invalid-kind", "/kinds/1: \"spawn\" is not a journal record kind"},
		{"empty", "invalid-kind", "/kinds/0"},
		{"negative", "invalid-row", "/sinceRow: -1"},
		{"past end", "invalid-row", "/sinceRow:"},
	} {
		if r := got[tc.name]; r["error"] != tc.code || !strings.Contains(r["reason"].(string), tc.at) {
			t.Errorf("%s: %v, want %s naming %q", tc.name, r, tc.code, tc.at)
		}
	}
	if r := got["misspelt"]["reason"].(string); !strings.Contains(r, supervise.KindSpawned) {
		t.Errorf("the refusal %q does not list the kinds to give", r)
	}
	for _, name := range []string{"at end", "transcript"} {
		if r := got[name]; r["error"] != nil || r["rows"] == nil {
			t.Errorf("%s: %v, want a page", name, r)
		}
	}
	if rows := got["all"]["rows"].([]any); len(rows) < 3 {
		t.Errorf("the whole journal: %d rows, want run-started, spawned and settled at least", len(rows))
	}
}
