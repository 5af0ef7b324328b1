package fleet

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/agentrt/agentrt/store"
)

// Instrument names a worker records through its WorkerOptions.Meter.
const (
	// MetricRuns counts attempts started and fleet runs ended, by
	// "event" (started, completed, failed, cancelled, timed_out,
	// released, adopted) and "queue".
	MetricRuns = "agentrt.fleet.runs"
	// MetricQueueDepth is the number of jobs waiting to run (available,
	// scheduled or retryable), by "queue", read when collected.
	MetricQueueDepth = "agentrt.fleet.queue.depth"
	// MetricAppendLatency is how long the run store took to make an
	// attempt's events durable, in seconds.
	MetricAppendLatency = "agentrt.fleet.event_append.duration"
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
	runs, err := m.Int64Counter(MetricRuns, metric.WithDescription("Fleet attempts started and runs ended, by event and queue."), metric.WithUnit("{run}"))
	if err != nil {
		return nil, err
	}
	hist, err := m.Float64Histogram(MetricAppendLatency, metric.WithDescription("Time for the run store to make an attempt's events durable."), metric.WithUnit("s"))
	if err != nil {
		return nil, err
	}
	depth, err := m.Int64ObservableGauge(MetricQueueDepth, metric.WithDescription("Fleet jobs waiting to run, by queue."), metric.WithUnit("{job}"))
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
			o.ObserveInt64(depth, n, metric.WithAttributes(attribute.String("queue", q)))
		}
		return nil
	}, depth)
	if err != nil {
		return nil, err
	}
	return &metrics{runs: runs, append: hist, depth: reg}, nil
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
