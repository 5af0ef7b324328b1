package supervise_test

import (
	"context"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §9 read_journal "own journal incl. prior process": a row is returned
// as journaled, its data too — an analyst-defined row carries the lens
// the manager defined, not an empty object (the tool's JSON encoding
// must not drop a canonjson payload). Checklist: §9 read_journal.
func TestReadJournalReturnsARowsData(t *testing.T) {
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir = t.TempDir()
	var page map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		if d := tool(t, ctx, c, supervise.VerbDefineAnalyst, validLens()); d["defined"] != true {
			t.Fatalf("define_analyst: %v", d)
		}
		page = tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{"kinds": []string{"analyst-defined"}})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	rows, _ := page["rows"].([]any)
	if len(rows) != 1 {
		t.Fatalf("read_journal kinds analyst-defined: %v, want one row", page)
	}
	data, _ := rows[0].(map[string]any)["data"].(map[string]any)
	if data["id"] != "source-check" || data["question"] != "Which statements lack a source?" {
		t.Errorf("the analyst-defined row's data is %v, want the defined lens", rows[0])
	}
}
