package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// QSK-01, QSK-09, FD-05: the quickstart runs offline and prints the
// seed's line; its rounds are recorded, completed, in SQLite.
func TestQuickstart(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out bytes.Buffer
	if err := quickstart(ctx, &out, st); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "decision: done — 1 iteration(s)\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	runs, err := st.ListRuns(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]store.Status{}
	for _, r := range runs {
		kinds[r.Kind] = r.Status
	}
	if kinds["rounds"] != store.StatusCompleted || kinds["iteration"] != store.StatusCompleted {
		t.Errorf("recorded runs %v", kinds)
	}
}
