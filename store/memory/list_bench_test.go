package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// filledStore is a memory store holding n runs of two kinds, created one
// second apart.
func filledStore(b *testing.B, n int) *memory.Store {
	b.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := memory.New(func() time.Time { return t0.Add(time.Duration(n) * time.Second) })
	for i := range n {
		kind := "a"
		if i%2 == 1 {
			kind = "b"
		}
		r := store.Run{ID: fmt.Sprintf("run-%06d", i), Kind: kind, Status: store.StatusCompleted, CreatedAt: t0.Add(time.Duration(i) * time.Second)}
		if _, err := s.CreateRun(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// ListRuns with a limit reads the newest runs off the ordered index: its
// cost follows the limit, not the 10k runs held.
func BenchmarkListRuns(b *testing.B) {
	s := filledStore(b, 10_000)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		opts store.ListOptions
	}{
		{"limit20", store.ListOptions{Limit: 20}},
		{"kind/limit20", store.ListOptions{Kind: "b", Limit: 20}},
		{"status/limit20", store.ListOptions{Status: store.StatusCompleted, Limit: 20}},
		{"all", store.ListOptions{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				runs, err := s.ListRuns(ctx, bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				if want := bc.opts.Limit; want > 0 && len(runs) != want {
					b.Fatalf("listed %d runs, want %d", len(runs), want)
				}
			}
		})
	}
}
