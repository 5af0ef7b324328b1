package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/store"
)

// TestEventsPagesAcrossAGap: a page is read as the range of sequences
// it covers, which holds exactly the page while a run's sequences are
// dense; were they ever not (rows removed behind the store's back), a
// short range is completed from after it, so paging still returns every
// event, in order, and ends only at the end of the log.
func TestEventsPagesAcrossAGap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := pgtest.Schema(t)
	s := open(t, conn, nil)
	r, err := s.CreateRun(ctx, store.Run{ID: "gappy", Kind: "execute", Status: store.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	body, err := canonjson.Decode([]byte(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var batch []store.NewEvent
	for i := 1; i <= 10; i++ {
		batch = append(batch, store.NewEvent{ID: fmt.Sprint("e", i), Type: "t", Time: time.Unix(1, 0), Body: body})
	}
	if _, err := s.AppendEvents(ctx, r.Fence(), batch); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DELETE FROM events WHERE run_id = 'gappy' AND seq BETWEEN 3 AND 5`); err != nil {
		t.Fatal(err)
	}
	var pages [][]int64
	cursor := ""
	for range 10 {
		page, err := s.Events(ctx, "gappy", cursor, 4)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, e := range page {
			seqs = append(seqs, e.Sequence)
		}
		pages = append(pages, seqs)
		if len(page) < 4 {
			break
		}
		cursor = page[len(page)-1].Cursor
	}
	want := [][]int64{{1, 2, 6, 7}, {8, 9, 10}}
	if diff := cmp.Diff(want, pages); diff != "" {
		t.Errorf("pages of 4 (-want +got):\n%s", diff)
	}
}
