package journal_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// benchRecord is a spawn-journal-sized record (about 150 bytes).
func benchRecord(b *testing.B) canonjson.Value {
	return rec(b, `{"kind":"settled","id":"worker-17","status":"done","outRef":"sha256-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","spent":{"usd":0.0123}}`)
}

func benchJournal(b *testing.B) *journal.Journal {
	j, err := journal.Open(filepath.Join(b.TempDir(), "bench.jsonl"), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

// BenchmarkAppend: one record per Append, one caller; every Append waits
// for its own fsync.
func BenchmarkAppend(b *testing.B) {
	j := benchJournal(b)
	r := benchRecord(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := j.Append(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/float64(j.Commits()), "records/fsync")
}

// BenchmarkAppendParallel: one record per Append from many goroutines;
// group commit lets one fsync cover the batches queued behind another.
func BenchmarkAppendParallel(b *testing.B) {
	j := benchJournal(b)
	r := benchRecord(b)
	ctx := context.Background()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := j.Append(ctx, r); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/float64(j.Commits()), "records/fsync")
}
