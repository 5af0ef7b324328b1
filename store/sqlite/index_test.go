package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// ListRuns with a Kind filter is served by the runs_by_kind index
// (migration 0003): SQLite's plan searches the index for the kind and
// reads it in the listing's order, with no temporary sort. Reopening the
// store migrates nothing twice.
func TestListRunsByKindUsesIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agentrt.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		kind := "execute"
		if i%5 == 0 {
			kind = "delegation"
		}
		if _, err := s.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%02d", i), Kind: kind, Status: store.StatusCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.ListRuns(ctx, store.ListOptions{Kind: "delegation", Limit: 3})
	if err != nil || len(runs) != 3 {
		t.Fatalf("ListRuns: %d runs, %v", len(runs), err)
	}
	s.Close()
	if s, err = sqlite.Open(ctx, path, sqlite.Options{}); err != nil {
		t.Fatalf("reopening after the index migration: %v", err)
	}
	s.Close()

	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The query shape ListRuns sends for a Kind filter.
	rows, err := db.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT id FROM runs WHERE kind = ? ORDER BY created_at DESC, id DESC LIMIT 3`, "delegation")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan, "; ")
	if !strings.Contains(joined, "runs_by_kind") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("plan %q: want a search of runs_by_kind with no temporary sort", joined)
	}
}
