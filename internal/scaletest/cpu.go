package scaletest

import "testing"

// CPU starts measuring this process's CPU time; the function it returns
// reports it as the cpu-ns/op metric of b (over b.N operations). Call it
// just before the benchmark loop and the returned function just after:
//
//	stop := scaletest.CPU(b)
//	for b.Loop() { ... }
//	stop()
//
// CPU time counts every goroutine of the process, the garbage collector
// included, so it is meaningful only for a benchmark that runs alone
// (not b.RunParallel beside other work). Where the process's CPU time
// cannot be read, nothing is reported.
func CPU(b *testing.B) (stop func()) {
	start, ok := cpuTime()
	return func() {
		end, ok2 := cpuTime()
		if !ok || !ok2 || b.N == 0 {
			return
		}
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}
