package journal_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
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

// BenchmarkAppendNoSync: BenchmarkAppend for a journal opened with
// NoSync (a projection): the write without the flush.
func BenchmarkAppendNoSync(b *testing.B) {
	j, err := journal.Open(filepath.Join(b.TempDir(), "bench.jsonl"), journal.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	r := benchRecord(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Append(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendConcurrent: one record per Append from exactly 1 or 16
// goroutines (b.N appends in all, shared out). Group commit lets one
// fsync cover the batches queued while another runs, so with 16
// appenders the cost per record falls well below one fsync.
func BenchmarkAppendConcurrent(b *testing.B) {
	for _, appenders := range []int{1, 16} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			j := benchJournal(b)
			r := benchRecord(b)
			ctx := context.Background()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for range appenders {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := j.Append(ctx, r); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(b.N)/float64(j.Commits()), "records/fsync")
		})
	}
}
