package conversation_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/journal/conversation/conversationtest"
)

type benchJournal interface {
	conversation.Journal
	Close() error
}

// benchAdapters opens one fresh journal of each kind.
var benchAdapters = []struct {
	name string
	open func(b *testing.B) benchJournal
}{
	{"memory", func(*testing.B) benchJournal { return conversation.NewMemory(conversation.Limits{}) }},
	{"file", func(b *testing.B) benchJournal {
		f, err := conversation.OpenFile(context.Background(), filepath.Join(b.TempDir(), "c.jsonl"), conversation.FileOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return f
	}},
	{"sqlite", func(b *testing.B) benchJournal {
		s, err := conversation.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "c.db"), conversation.SQLOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
	{"postgres", func(b *testing.B) benchJournal {
		s, err := conversation.OpenPostgres(context.Background(), pgtest.Schema(b), conversation.SQLOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

func benchTurn(runID string, i int) conversation.Turn {
	t := conversationtest.MakeTurn(runID, i, fmt.Sprintf("speaker-%d", i%2))
	t.Text = "a committed answer of a typical chat turn, a couple of hundred bytes once the record's other members are counted"
	return t
}

// BenchmarkAppendTurn: one caller appending a run's turns in order; each
// append is durable (fsync or commit) before the next.
func BenchmarkAppendTurn(b *testing.B) {
	for _, a := range benchAdapters {
		b.Run(a.name, func(b *testing.B) {
			j := a.open(b)
			defer j.Close()
			ctx := context.Background()
			if err := j.BeginRun(ctx, "r", conversationtest.T0); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				if err := j.AppendTurn(ctx, "r", benchTurn("r", i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
		})
	}
}

// BenchmarkAppendTurnParallel: 16 callers, each appending to its own run
// (the file journal group-commits them).
func BenchmarkAppendTurnParallel(b *testing.B) {
	for _, a := range benchAdapters {
		b.Run(a.name, func(b *testing.B) {
			j := a.open(b)
			defer j.Close()
			ctx := context.Background()
			var next atomic.Int64
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				runID := fmt.Sprintf("r%d", next.Add(1))
				if err := j.BeginRun(ctx, runID, conversationtest.T0); err != nil {
					b.Error(err)
					return
				}
				for i := 0; pb.Next(); i++ {
					if err := j.AppendTurn(ctx, runID, benchTurn(runID, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
		})
	}
}

// BenchmarkLoadRun: loading a run of 100 turns (what a resumed run reads
// first), in a journal that also holds 9 other runs of 100 turns.
func BenchmarkLoadRun(b *testing.B) {
	for _, a := range benchAdapters {
		b.Run(a.name, func(b *testing.B) {
			j := a.open(b)
			defer j.Close()
			ctx := context.Background()
			for r := range 10 {
				if err := j.BeginRun(ctx, fmt.Sprintf("r%d", r), conversationtest.T0); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 100 {
				for r := range 10 {
					runID := fmt.Sprintf("r%d", r)
					if err := j.AppendTurn(ctx, runID, benchTurn(runID, i)); err != nil {
						b.Fatal(err)
					}
				}
			}
			for b.Loop() {
				e, err := j.LoadRun(ctx, "r4")
				if err != nil || e.NextIndex() != 100 {
					b.Fatal(e, err)
				}
			}
		})
	}
}
