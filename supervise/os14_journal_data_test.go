package supervise_test

import (
	"context"
	"encoding/json"
	"strings"
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

// §9 read_journal "clamped, paged": a page's rows are at most maxBytes
// of JSON counting each row's data — three analyst-defined rows of some
// 15 KB each do not fit one 20,000-byte page, and a row larger than the
// page on its own is named oversize, not returned. Checklist: §9
// read_journal.
func TestReadJournalPageBytesCountARowsData(t *testing.T) {
	o := baseOptions(t, &gateExecutor{release: make(chan struct{})}, nil)
	o.RunDir = t.TempDir()
	var pages []map[string]any
	var small map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, id := range []string{"lens-a", "lens-b", "lens-c"} {
			l := validLens()
			l["id"], l["instructions"] = id, strings.Repeat("i", 15_000)
			if d := tool(t, ctx, c, supervise.VerbDefineAnalyst, l); d["defined"] != true {
				t.Fatalf("define_analyst: %v", d)
			}
		}
		since := 0.0
		for range 10 {
			p := tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{"kinds": []string{"analyst-defined"}, "sinceRow": since, "maxBytes": 20_000})
			pages = append(pages, p)
			since = p["nextRow"].(float64)
			if p["more"] != true {
				break
			}
		}
		small = tool(t, ctx, c, supervise.VerbReadJournal, map[string]any{"kinds": []string{"analyst-defined"}, "maxBytes": 10_000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for i, p := range pages {
		raw, _ := json.Marshal(p["rows"])
		if len(raw) > 20_000 {
			t.Errorf("page %d: its rows are %d bytes of JSON, past maxBytes 20000", i, len(raw))
		}
		rows, _ := p["rows"].([]any)
		seen += len(rows)
	}
	if seen != 3 {
		t.Errorf("the pages returned %d analyst-defined rows, want 3: %v", seen, len(pages))
	}
	if rows, _ := small["rows"].([]any); len(rows) != 0 || small["oversize"] == nil {
		t.Errorf("a 10,000-byte page of 15 KB rows: %d rows, oversize %v; want none and the first row named", len(rows), small["oversize"])
	}
}
