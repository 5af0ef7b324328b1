package instruments

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/metric"
)

// Names of the run metrics. The gen_ai.client.* histograms are the
// GenAI semantic conventions' own; the agentrt.* counters are ours.
const (
	// Runs counts ended runs by kind, status, delivery and whether their
	// tokens and cost were known.
	Runs = "agentrt.runs"
	// TokenUsage records the tokens of each turn whose usage is known
	// exactly, by gen_ai.token.type (input, output). A turn whose usage
	// is unknown records nothing: never a 0.
	TokenUsage = "gen_ai.client.token.usage"
	// Cost adds the cost in US dollars of each run whose cost is known
	// exactly.
	Cost = "agentrt.cost.usd"
	// TurnDuration records each turn's latency in seconds.
	TurnDuration = "gen_ai.client.operation.duration"
)

// Names of the fleet metrics.
const (
	// FleetRuns counts attempts started and fleet runs ended, by "event"
	// (started, completed, failed, cancelled, timed_out, released,
	// adopted) and "queue".
	FleetRuns = "agentrt.fleet.runs"
	// FleetQueueDepth is the number of jobs waiting to run (available,
	// scheduled or retryable), by "queue", read when collected; a depth
	// that could not be read is not reported (never reported as 0).
	FleetQueueDepth = "agentrt.fleet.queue.depth"
	// FleetAppendDuration is how long the run store took to make an
	// attempt's events durable, in seconds.
	FleetAppendDuration = "agentrt.fleet.event_append.duration"
)

// Run are the run metrics' instruments.
type Run struct {
	// Runs is Runs' counter.
	Runs metric.Int64Counter
	// Tokens is TokenUsage's histogram.
	Tokens metric.Int64Histogram
	// Cost is Cost's counter.
	Cost metric.Float64Counter
	// Duration is TurnDuration's histogram.
	Duration metric.Float64Histogram
}

// NewRun defines the run metrics on m.
func NewRun(m metric.Meter) (*Run, error) {
	var in Run
	var err, e error
	in.Runs, e = m.Int64Counter(Runs, metric.WithUnit("{run}"), metric.WithDescription("Runs that ended."))
	err = errors.Join(err, e)
	in.Tokens, e = m.Int64Histogram(TokenUsage, metric.WithUnit("{token}"), metric.WithDescription("Tokens a turn used, when known exactly."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	err = errors.Join(err, e)
	in.Cost, e = m.Float64Counter(Cost, metric.WithUnit("USD"), metric.WithDescription("Cost of runs, when known exactly."))
	err = errors.Join(err, e)
	in.Duration, e = m.Float64Histogram(TurnDuration, metric.WithUnit("s"), metric.WithDescription("Latency of a turn."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("instruments: creating the run metrics: %w", err)
	}
	return &in, nil
}

// Fleet are the fleet metrics' instruments. QueueDepth is observable:
// its recorder registers the callback that reads it (Meter.RegisterCallback).
type Fleet struct {
	// Runs is FleetRuns' counter.
	Runs metric.Int64Counter
	// AppendDuration is FleetAppendDuration's histogram.
	AppendDuration metric.Float64Histogram
	// QueueDepth is FleetQueueDepth's gauge.
	QueueDepth metric.Int64ObservableGauge
}

// NewFleet defines the fleet metrics on m.
func NewFleet(m metric.Meter) (*Fleet, error) {
	var in Fleet
	var err, e error
	in.Runs, e = m.Int64Counter(FleetRuns, metric.WithUnit("{run}"), metric.WithDescription("Fleet attempts started and runs ended, by event and queue."))
	err = errors.Join(err, e)
	in.AppendDuration, e = m.Float64Histogram(FleetAppendDuration, metric.WithUnit("s"), metric.WithDescription("Time for the run store to make an attempt's events durable."),
		// Seconds: the SDK's default boundaries are milliseconds'.
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	err = errors.Join(err, e)
	in.QueueDepth, e = m.Int64ObservableGauge(FleetQueueDepth, metric.WithUnit("{job}"), metric.WithDescription("Fleet jobs waiting to run, by queue."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("instruments: creating the fleet metrics: %w", err)
	}
	return &in, nil
}
