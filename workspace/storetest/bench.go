package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/workspace"
)

const benchTenant = "bench"

// benchBody is a 1 KiB document, the size of a typical memory.
var benchBody = []byte(fmt.Sprintf("%01024d", 7))

// BenchmarkCASWrites measures compare-and-set writes: one writer
// replacing one document at its current revision, each write durable
// before the next. It reports writes/s.
func BenchmarkCASWrites(b *testing.B, s workspace.Store) {
	ctx := context.Background()
	m, err := s.Put(ctx, benchTenant, "/files/bench/cas", benchBody, workspace.ExpectAbsent(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	rev := m.Revision
	b.SetBytes(int64(len(benchBody)))
	b.ResetTimer()
	for b.Loop() {
		m, err := s.Put(ctx, benchTenant, "/files/bench/cas", benchBody, workspace.ExpectRevision(rev), "bench")
		if err != nil {
			b.Fatal(err)
		}
		rev = m.Revision
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkParallelCASWrites measures compare-and-set writes from
// GOMAXPROCS×parallelism goroutines, each on its own document (no
// conflicts): the store's write throughput under concurrency. It reports
// writes/s.
func BenchmarkParallelCASWrites(b *testing.B, s workspace.Store, parallelism int) {
	ctx := context.Background()
	var next atomic.Int64
	b.SetParallelism(parallelism)
	b.SetBytes(int64(len(benchBody)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		path := fmt.Sprintf("/files/bench/p%d", next.Add(1))
		exp := workspace.ExpectAbsent()
		for pb.Next() {
			m, err := s.Put(ctx, benchTenant, path, benchBody, exp, "bench")
			if err != nil {
				b.Error(err)
				return
			}
			exp = workspace.ExpectRevision(m.Revision)
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
}

// BenchmarkReads measures Get of a 1 KiB document from GOMAXPROCS
// goroutines. It reports reads/s.
func BenchmarkReads(b *testing.B, s workspace.Store) {
	ctx := context.Background()
	if _, err := s.Put(ctx, benchTenant, "/files/bench/read", benchBody, workspace.ExpectAbsent(), "bench"); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(benchBody)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Get(ctx, benchTenant, "/files/bench/read"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
}
