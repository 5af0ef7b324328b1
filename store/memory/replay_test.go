package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/store/storetest"
)

// BenchmarkEventReplay: paging through a run's events from a cursor
// costs the pages read, not the log after the cursor each time.
func BenchmarkEventReplay(b *testing.B) {
	storetest.BenchEventReplay(b, func(b *testing.B) store.Store {
		s := memory.New(nil)
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// TestEventsPageCostsThePage: reading one small page from the start of a
// long log allocates the page, not a copy of the log after the cursor
// (which made a follower's paging quadratic). Measured in bytes, so it
// holds however loaded the machine is.
func TestEventsPageCostsThePage(t *testing.T) {
	ctx := context.Background()
	s := memory.New(nil)
	defer s.Close()
	r, err := s.CreateRun(ctx, store.Run{ID: "r", Kind: "execute", Status: store.StatusRunning})
	if err != nil {
		t.Fatal(err)
	}
	body, err := canonjson.Decode([]byte(`{"type":"message.delta","delta":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	const n, page = 50_000, 10
	batch := make([]store.NewEvent, n)
	for i := range batch {
		batch[i] = store.NewEvent{ID: fmt.Sprint("e", i), Type: "message.delta", Time: time.Unix(1, 0), Body: body}
	}
	if _, err := s.AppendEvents(ctx, r.Fence(), batch); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cursor := ""
	for range 10 {
		got, err := s.Events(ctx, "r", cursor, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != page {
			t.Fatalf("page of %d events, want %d", len(got), page)
		}
		cursor = got[page-1].Cursor
	}
	runtime.ReadMemStats(&after)
	// Ten pages of ten events are a few KiB; one copy of the log is MiBs.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<10 {
		t.Errorf("ten %d-event pages of a %d-event log allocated %d bytes, want < 256 KiB", page, n, alloc)
	}
	if want := store.CursorFor(10 * page); cursor != want {
		t.Errorf("cursor after ten pages = %s, want %s", cursor, want)
	}
}
