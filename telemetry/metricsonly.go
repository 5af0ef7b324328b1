package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
)

// Metrics records the run metrics (MetricRuns, MetricTokenUsage,
// MetricCost, MetricTurnDuration) on a meter provider with no tracing:
// the path a process takes that exports metrics (agentrt worker's
// Prometheus endpoint) but no spans. It is safe for concurrent use; the
// caller owns the meter provider.
type Metrics struct {
	in *runInstruments
}

// NewMetrics returns the run metrics recorded on mp.
func NewMetrics(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, errors.New("telemetry: a meter provider is required")
	}
	in, err := newInstruments(mp)
	if err != nil {
		return nil, err
	}
	return &Metrics{in: in}, nil
}

// Observer returns a kernel.Observer that records one run's metrics as
// a Tracing's Observer does, with no span; give each run its own. A nil
// Metrics returns nil.
func (m *Metrics) Observer() kernel.Observer {
	if m == nil {
		return nil
	}
	return &metricsObserver{in: m.in}
}

// AttemptObserver is Observer for an attempt of run runID (a fleet
// run's attempt): the metrics of an attempt are its own, so runID only
// fits the signature fleet.WorkerOptions.Observe takes.
func (m *Metrics) AttemptObserver(runID string) kernel.Observer { return m.Observer() }

// metricsObserver records one run's metrics. The kernel calls it on the
// run's goroutine, one hook at a time.
type metricsObserver struct {
	in        *runInstruments
	kind      string
	turnStart time.Time
	requested string
}

var _ kernel.Observer = (*metricsObserver)(nil)

func (o *metricsObserver) RunStarted(ctx context.Context, s kernel.RunStart) (context.Context, error) {
	o.kind = s.Kind
	return ctx, nil
}

func (o *metricsObserver) TurnStarted(ctx context.Context, s kernel.TurnStart) (context.Context, error) {
	o.turnStart, o.requested = time.Now(), s.RequestedModel
	return ctx, nil
}

func (o *metricsObserver) Event(context.Context, contract.EnvironmentEvent) error { return nil }

func (o *metricsObserver) TurnEnded(ctx context.Context, t kernel.TurnEnd) error {
	if o.turnStart.IsZero() {
		return nil
	}
	o.in.turn(ctx, time.Since(o.turnStart), o.requested, t.Served.Model, turnFailure(t), t.Usage)
	o.turnStart = time.Time{}
	return nil
}

func (o *metricsObserver) RunEnded(ctx context.Context, r kernel.Result) error {
	o.in.run(ctx, o.kind, r)
	return nil
}
