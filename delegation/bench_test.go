package delegation_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkCheck measures admitting one request: validation, the
// effective budget and the canonical request digest.
func BenchmarkCheck(b *testing.B) {
	usd := 1.0
	caps := delegation.Budget{Tokens: 100_000, Iterations: 8, USD: &usd}
	req := delegation.Request{Intent: strings.Repeat("Write the release notes. ", 40), IdempotencyKey: "bench-key-1",
		Budget: &delegation.BudgetRequest{Tokens: ptr[int64](5000), USD: ptr(0.5)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := delegation.Check(req, caps); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHistory measures one history page of 20 among 1,000
// delegations in a SQLite store (the kind filter and the limit are the
// database's).
func BenchmarkHistory(b *testing.B) {
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cfg := newFixture(b, s).config(b)
	cfg.MaxPending = 2000
	// The one runner's manager thinks until the queue closes: the rest
	// stay pending and the runners idle while the page is measured.
	cfg.Brain = func(string) (supervise.Brain, error) {
		return supervise.BrainFunc(func(ctx context.Context, _ *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			<-ctx.Done()
			return supervise.BrainReport{}, ctx.Err()
		}), nil
	}
	q := open(b, cfg)
	ctx := context.Background()
	for i := range 1000 {
		if _, err := q.Submit(ctx, delegation.Request{Intent: fmt.Sprint("task ", i)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if ds, err := q.History(ctx, delegation.HistoryOptions{Limit: 20}); err != nil || len(ds) != 20 {
			b.Fatal(len(ds), err)
		}
	}
}

// BenchmarkDelegateSQLite measures one whole delegation on a SQLite
// store: submit, claim, a supervised run of one scripted worker with its
// journal fsynced, and the recorded end.
func BenchmarkDelegateSQLite(b *testing.B) { benchDelegate(b, 0) }

// BenchmarkDelegateSQLiteRetained is BenchmarkDelegateSQLite with
// MaxTerminalRecords 10: every end also evicts the oldest ended
// delegation (its row, events and run dir), so the store stays at ten.
func BenchmarkDelegateSQLiteRetained(b *testing.B) { benchDelegate(b, 10) }

func benchDelegate(b *testing.B, keep int) {
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	cfg := newFixture(b, s).config(b)
	cfg.MaxTerminalRecords = keep
	q := open(b, cfg)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sub, err := q.Submit(ctx, delegation.Request{Intent: "write alpha"})
		if err != nil {
			b.Fatal(err)
		}
		d, err := q.Wait(ctx, sub.TaskID, time.Minute)
		if err != nil || d.State != delegation.StateCompleted {
			b.Fatal(d.State, d.Failure, err)
		}
	}
}
