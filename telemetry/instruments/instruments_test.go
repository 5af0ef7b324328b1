package instruments_test

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentrt/agentrt/telemetry/instruments"
)

// Issue 14 (worker metrics: event append latency): a histogram in
// seconds tells its typical values apart. The SDK's default boundaries
// (0, 5, 10, 25, … 10000) are milliseconds': in seconds, every append —
// a millisecond or a slow 2s one alike — fell in the first bucket, so
// the scraped histogram said nothing of the latency.
func TestSecondsHistogramsSeparateTypicalValues(t *testing.T) {
	tests := []struct {
		name   string
		record func(t *testing.T, p *sdkmetric.MeterProvider, v float64)
		values []float64 // each must land in a bucket of its own
	}{
		{instruments.FleetAppendDuration, func(t *testing.T, p *sdkmetric.MeterProvider, v float64) {
			in, err := instruments.NewFleet(p.Meter("test"))
			if err != nil {
				t.Fatal(err)
			}
			in.AppendDuration.Record(t.Context(), v)
		}, []float64{0.0008, 0.004, 0.03, 0.2, 2}},
		{instruments.TurnDuration, func(t *testing.T, p *sdkmetric.MeterProvider, v float64) {
			in, err := instruments.NewRun(p.Meter("test"))
			if err != nil {
				t.Fatal(err)
			}
			in.Duration.Record(t.Context(), v)
		}, []float64{0.05, 0.5, 3, 30}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			p := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
			for _, v := range tt.values {
				tt.record(t, p, v)
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(t.Context(), &rm); err != nil {
				t.Fatal(err)
			}
			var counts []uint64
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == tt.name {
						counts = h.DataPoints[0].BucketCounts
					}
				}
			}
			if counts == nil {
				t.Fatalf("no histogram %s collected", tt.name)
			}
			used := 0
			for _, c := range counts {
				if c > 1 {
					t.Errorf("%d of the values %v fell in one bucket (counts %v)", c, tt.values, counts)
				}
				if c > 0 {
					used++
				}
			}
			if used != len(tt.values) {
				t.Errorf("the values %v used %d buckets, want %d (counts %v)", tt.values, used, len(tt.values), counts)
			}
		})
	}
}
