package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/store"
)

// OpenBench returns a fresh, empty store for one benchmark; the adapter
// closes it when the benchmark ends (b.Cleanup).
type OpenBench func(b *testing.B) store.Store

// ConcurrentRuns are the numbers of concurrently appending runs
// BenchConcurrentAppends measures.
var ConcurrentRuns = []int{1, 8, 32}

// BenchConcurrentAppends measures durable event throughput when many runs
// append at once: for each of ConcurrentRuns it creates that many runs,
// and one goroutine per run appends single-event batches through
// AppendEvents, each waiting for its append before the next, as a run's
// lease holder does. It reports events/s across all runs.
func BenchConcurrentAppends(b *testing.B, open OpenBench) {
	body := doc(`{"type":"message.delta","delta":"Hello from the scripted worker.","messageId":"m1"}`)
	for _, runs := range ConcurrentRuns {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			ctx := context.Background()
			s := open(b)
			fences := make([]store.Fence, runs)
			for i := range fences {
				r, err := s.CreateRun(ctx, newRun(fmt.Sprint("run-", i)))
				if err != nil {
					b.Fatal(err)
				}
				fences[i] = r.Fence()
			}
			var left atomic.Int64
			left.Store(int64(b.N))
			var failed atomic.Pointer[error]
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for _, f := range fences {
				wg.Go(func() {
					for i := 0; left.Add(-1) >= 0; i++ {
						e := []store.NewEvent{{ID: fmt.Sprint("e", i), Type: "message.delta", Time: time.Now(), Body: body}}
						if _, err := s.AppendEvents(ctx, f, e); err != nil {
							failed.CompareAndSwap(nil, &err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if err := failed.Load(); err != nil {
				b.Fatal(*err)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
		})
	}
}
