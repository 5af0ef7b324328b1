package fleet

import "testing"

// BenchmarkParseTraceParent is the price of restoring a run's recorded
// trace context before each attempt.
func BenchmarkParseTraceParent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); err != nil {
			b.Fatal(err)
		}
	}
}
