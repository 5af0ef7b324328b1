package fleet

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry/instruments"
)

// Instrument names a worker records through its WorkerOptions.Meter;
// package telemetry/instruments defines them, with the run metrics.
const (
	// MetricRuns counts attempts started and fleet runs ended, by
	// "event" (started, completed, failed, cancelled, timed_out,
	// released, adopted) and "queue".
	MetricRuns = instruments.FleetRuns
	// MetricQueueDepth is the number of jobs waiting to run (available,
	// scheduled or retryable), by "queue", read when collected.
	MetricQueueDepth = instruments.FleetQueueDepth
	// MetricAppendLatency is how long the run store took to make an
	// attempt's events durable, in seconds.
	MetricAppendLatency = instruments.FleetAppendDuration
)

// metrics are a worker's instruments; their zero value is not usable,
// newMetrics always returns working (possibly no-op) instruments.
type metrics struct {
	runs   metric.Int64Counter
	append metric.Float64Histogram
	depth  metric.Registration
}

func newMetrics(m metric.Meter, f *Fleet, queues []string) (*metrics, error) {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	in, err := instruments.NewFleet(m)
	if err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := f.Status(ctx)
		if err != nil {
			// Unknown depth is not reported, never reported as 0.
			return err
		}
		waiting := map[string]int64{}
		for _, q := range queues {
			waiting[q] = 0
		}
		for _, c := range st.Jobs {
			if c.State == "available" || c.State == "scheduled" || c.State == "retryable" {
				waiting[c.Queue] += c.Count
			}
		}
		for q, n := range waiting {
			o.ObserveInt64(in.QueueDepth, n, metric.WithAttributes(attribute.String("queue", q)))
		}
		return nil
	}, in.QueueDepth)
	if err != nil {
		return nil, err
	}
	return &metrics{runs: in.Runs, append: in.AppendDuration, depth: reg}, nil
}

func (m *metrics) count(event, queue string) {
	m.runs.Add(context.Background(), 1, metric.WithAttributes(attribute.String("event", event), attribute.String("queue", queue)))
}

// timedStore is the run store as an attempt sees it: appends are timed.
type timedStore struct {
	store.Store
	hist metric.Float64Histogram
}

// AppendEvents implements store.Store, recording its latency.
func (s timedStore) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	start := time.Now()
	out, err := s.Store.AppendEvents(ctx, f, events)
	if err == nil {
		s.hist.Record(ctx, time.Since(start).Seconds())
	}
	return out, err
}
