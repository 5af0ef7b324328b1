package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// FD-09, RTP-04, RTP-12: the example returns a candidate and Improve's
// own final-test comparison, ships with every cost known, records its
// runs, leaves a journal in the run dir and activates nothing.
func TestImprove(t *testing.T) {
	st := memory.New(nil)
	dir := t.TempDir()
	var out bytes.Buffer
	res, err := run(context.Background(), &out, st, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := `decision: ship
candidate: "Triage the support ticket into billing, account or bug. Reply with one word: the category."
test: baseline 0.00, candidate 1.00 over 4 cases; lift +1.00, 95% interval [+1.00, +1.00]
searched 3 candidates; spent $0.0038 (known true)
base prompt unchanged: true; nothing activated
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if res.Decision != search.Ship || len(res.Test) != 4 {
		t.Errorf("result %+v", res)
	}
	runs, err := st.ListRuns(context.Background(), store.ListOptions{})
	if err != nil || len(runs) == 0 {
		t.Errorf("recorded %d runs, %v", len(runs), err)
	}
	if _, err := os.Stat(filepath.Join(dir, search.JournalFile)); err != nil {
		t.Error(err)
	}
}
