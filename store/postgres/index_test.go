package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
)

// ListRuns with a Kind filter is served by the runs_by_kind index
// (migration 0003), built on (kind, created_at DESC, id DESC) in the
// store's schema: the planner, told to use neither a table scan nor a
// bitmap, reads it in order for the query ListRuns sends, with no
// separate sort. Reopening migrates nothing twice.
func TestListRunsByKindUsesIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := pgtest.Schema(t)
	s := open(t, conn, nil)
	for i := range 50 {
		kind := "execute"
		if i%5 == 0 {
			kind = "delegation"
		}
		if _, err := s.CreateRun(ctx, store.Run{ID: fmt.Sprintf("r%02d", i), Kind: kind, Status: store.StatusCompleted}); err != nil {
			t.Fatal(err)
		}
	}
	if runs, err := s.ListRuns(ctx, store.ListOptions{Kind: "delegation", Limit: 3}); err != nil || len(runs) != 3 {
		t.Fatalf("ListRuns: %d runs, %v", len(runs), err)
	}
	open(t, conn, nil) // a second open finds the migration applied

	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var def string
	if err := c.QueryRow(ctx, `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'runs_by_kind'`).Scan(&def); err != nil {
		t.Fatalf("no runs_by_kind index in the store's schema: %v", err)
	}
	if !strings.Contains(def, "(kind, created_at DESC, id DESC)") {
		t.Errorf("index %q, want it on (kind, created_at DESC, id DESC)", def)
	}
	if _, err := c.Exec(ctx, `SET enable_seqscan = off; SET enable_bitmapscan = off`); err != nil {
		t.Fatal(err)
	}
	var plan []string
	rows, err := c.Query(ctx, `EXPLAIN SELECT id FROM runs WHERE kind = $1 ORDER BY created_at DESC, id DESC LIMIT 3`, "delegation")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan, "\n")
	if !strings.Contains(joined, "runs_by_kind") || strings.Contains(joined, "Sort") {
		t.Errorf("plan:\n%s\nwant an index scan of runs_by_kind with no sort", joined)
	}
}
