package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
)

// ReplaySizes are the event-log lengths BenchEventReplay measures: each
// ten times the last, so a linear reader's cost per event stays flat.
var ReplaySizes = []int{1_000, 10_000, 100_000}

// ReplayPage is the page size BenchEventReplay reads with, the one the
// kernel's and fleet's followers use.
const ReplayPage = 500

// BenchEventReplay measures reading one run's event log from a cursor,
// page by page, as every follower does (kernel.StreamRun, runs events
// --follow, fleet, a chat turn re-attached by Last-Event-ID). For each of
// ReplaySizes it appends n events once, then per iteration:
//
//   - all: pages through all n events from the start;
//   - tail: reads the last ReplayPage events from the cursor before them.
//
// A store whose page costs the page (not the log after the cursor) shows
// ns/event flat across sizes for all, and ns/op flat for tail; the
// ns/event metric makes the ratio readable directly.
func BenchEventReplay(b *testing.B, open OpenBench) {
	body := doc(`{"type":"message.delta","delta":"Hello from the scripted worker.","messageId":"m1"}`)
	for _, n := range ReplaySizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := open(b)
			r, err := s.CreateRun(ctx, newRun("replay"))
			if err != nil {
				b.Fatal(err)
			}
			at := time.Unix(1_700_000_000, 0)
			for start := 0; start < n; start += 1000 {
				batch := make([]store.NewEvent, 0, 1000)
				for i := start; i < min(start+1000, n); i++ {
					batch = append(batch, store.NewEvent{ID: fmt.Sprint("e", i), Type: "message.delta", Time: at, Body: body})
				}
				if _, err := s.AppendEvents(ctx, r.Fence(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.Run("all", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if got := readAll(ctx, b, s, r.ID, ""); got != n {
						b.Fatalf("read %d events, want %d", got, n)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/event")
			})
			b.Run("tail", func(b *testing.B) {
				b.ReportAllocs()
				from := store.CursorFor(int64(n - ReplayPage))
				for b.Loop() {
					if got := readAll(ctx, b, s, r.ID, from); got != ReplayPage {
						b.Fatalf("read %d events, want %d", got, ReplayPage)
					}
				}
			})
		})
	}
}

// readAll pages through a run's events after cursor and counts them.
func readAll(ctx context.Context, b *testing.B, s store.Store, runID, cursor string) int {
	got := 0
	for {
		page, err := s.Events(ctx, runID, cursor, ReplayPage)
		if err != nil {
			b.Fatal(err)
		}
		got += len(page)
		if len(page) < ReplayPage {
			return got
		}
		cursor = page[len(page)-1].Cursor
	}
}
