package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// FD-06, RTP-02: the manager spawns two workers under one budget; the
// export note fails the check (settled, charged, not delivered), the
// restore note wins; the spend is exact and known; both worker runs are
// recorded and the run dir holds the journal. The manager's model
// reported no cost, so the dollars stay unknown: $0.003 is the workers'.
func TestSupervise(t *testing.T) {
	st := memory.New(nil)
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), &out, st, dir); err != nil {
		t.Fatal(err)
	}
	want := `worker notes:s1 restore done, delivered
worker notes:s2 export  done, not delivered (no full stop)
winner: notes:s1 "Shipped one-click restore."
spent: 390 tokens (known true), 2 worker iterations, $0.003000 (known false); manager 210 tokens, workers 180
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	runs, err := st.ListRuns(context.Background(), store.ListOptions{})
	if err != nil || len(runs) != 2 {
		t.Errorf("recorded %d runs, %v", len(runs), err)
	}
	if _, err := os.Stat(filepath.Join(dir, supervise.SpawnJournalFile)); err != nil {
		t.Error(err)
	}
}
