package telemetry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
)

// Metric names. The gen_ai.client.* histograms are the GenAI semantic
// conventions' own; the agentrt.* counters are ours.
const (
	// MetricRuns counts ended runs by kind, status, delivery and whether
	// their tokens and cost were known.
	MetricRuns = "agentrt.runs"
	// MetricTokenUsage records the tokens of each turn whose usage is
	// known exactly, by gen_ai.token.type (input, output). A turn whose
	// usage is unknown records nothing: never a 0.
	MetricTokenUsage = "gen_ai.client.token.usage"
	// MetricCost adds the cost in US dollars of each run whose cost is
	// known exactly.
	MetricCost = "agentrt.cost.usd"
	// MetricTurnDuration records each turn's latency in seconds.
	MetricTurnDuration = "gen_ai.client.operation.duration"

	// KeyTokenType is the gen_ai.token.type attribute of MetricTokenUsage.
	KeyTokenType = "gen_ai.token.type"
)

// instruments are a Tracing's metric instruments; nil when it has no
// meter provider.
type instruments struct {
	runs     metric.Int64Counter
	tokens   metric.Int64Histogram
	cost     metric.Float64Counter
	duration metric.Float64Histogram
}

func newInstruments(mp metric.MeterProvider) (*instruments, error) {
	m := mp.Meter(ScopeName)
	var in instruments
	var err, e error
	in.runs, e = m.Int64Counter(MetricRuns, metric.WithUnit("{run}"), metric.WithDescription("Runs that ended."))
	err = errors.Join(err, e)
	in.tokens, e = m.Int64Histogram(MetricTokenUsage, metric.WithUnit("{token}"), metric.WithDescription("Tokens a turn used, when known exactly."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	err = errors.Join(err, e)
	in.cost, e = m.Float64Counter(MetricCost, metric.WithUnit("USD"), metric.WithDescription("Cost of runs, when known exactly."))
	err = errors.Join(err, e)
	in.duration, e = m.Float64Histogram(MetricTurnDuration, metric.WithUnit("s"), metric.WithDescription("Latency of a turn."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("telemetry: creating the metric instruments: %w", err)
	}
	return &in, nil
}

// turn records a turn's latency — with error.type, errType, when the
// turn failed (as the GenAI conventions ask of the duration histogram) —
// and, when known exactly, its tokens.
func (in *instruments) turn(ctx context.Context, took time.Duration, requested, served, errType string, u ledger.Usage) {
	if in == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(KeyOperation, OpChat)}
	if requested != "" {
		attrs = append(attrs, attribute.String(KeyRequestModel, requested))
	}
	if served != "" {
		attrs = append(attrs, attribute.String(KeyResponseModel, served))
	}
	timed := attrs
	if errType != "" {
		timed = append(timed[:len(timed):len(timed)], attribute.String(KeyErrorType, errType))
	}
	in.duration.Record(ctx, took.Seconds(), metric.WithAttributes(timed...))
	for _, c := range []struct {
		kind string
		a    ledger.Amount[int64]
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}} {
		if c.a.Known() {
			in.tokens.Record(ctx, c.a.Value, metric.WithAttributes(append(attrs, attribute.String(KeyTokenType, c.kind))...))
		}
	}
}

// run counts an ended run and adds its cost when known exactly.
func (in *instruments) run(ctx context.Context, kind string, r kernel.Result) {
	if in == nil {
		return
	}
	tokens := r.Usage.InputTokens.Known() && r.Usage.OutputTokens.Known()
	in.runs.Add(ctx, 1, metric.WithAttributes(
		attribute.String(KeyRunKind, kind), attribute.String(KeyRunStatus, string(r.Status)),
		attribute.Bool(KeyDelivered, r.Delivered), attribute.Bool(KeyTokensKnown, tokens),
		attribute.Bool(KeyCostKnown, r.Usage.CostUSD.Known())))
	if r.Usage.CostUSD.Known() {
		attrs := []attribute.KeyValue{attribute.String(KeyRunKind, kind)}
		if r.RequestedModel != "" {
			attrs = append(attrs, attribute.String(KeyRequestModel, r.RequestedModel))
		}
		in.cost.Add(ctx, r.Usage.CostUSD.Value, metric.WithAttributes(attrs...))
	}
}
