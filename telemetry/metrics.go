package telemetry

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/telemetry/instruments"
)

// Metric names (defined in package instruments, the one owner of every
// agentrt instrument). The gen_ai.client.* histograms are the GenAI
// semantic conventions' own; the agentrt.* counters are ours.
const (
	// MetricRuns counts ended runs by kind, status, delivery and whether
	// their tokens and cost were known.
	MetricRuns = instruments.Runs
	// MetricTokenUsage records the tokens of each turn whose usage is
	// known exactly, by gen_ai.token.type (input, output). A turn whose
	// usage is unknown records nothing: never a 0.
	MetricTokenUsage = instruments.TokenUsage
	// MetricCost adds the cost in US dollars of each run whose cost is
	// known exactly.
	MetricCost = instruments.Cost
	// MetricTurnDuration records each turn's latency in seconds.
	MetricTurnDuration = instruments.TurnDuration

	// KeyTokenType is the gen_ai.token.type attribute of MetricTokenUsage.
	KeyTokenType = "gen_ai.token.type"
)

// runInstruments are the run metrics a Tracing or Metrics records; nil
// when there is no meter provider.
type runInstruments struct{ *instruments.Run }

func newInstruments(mp metric.MeterProvider) (*runInstruments, error) {
	in, err := instruments.NewRun(mp.Meter(ScopeName))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return &runInstruments{in}, nil
}

// turn records a turn's latency — with error.type, errType, when the
// turn failed (as the GenAI conventions ask of the duration histogram) —
// and, when known exactly, its tokens.
func (in *runInstruments) turn(ctx context.Context, took time.Duration, requested, served, errType string, u ledger.Usage) {
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
	in.Duration.Record(ctx, took.Seconds(), metric.WithAttributes(timed...))
	for _, c := range []struct {
		kind string
		a    ledger.Amount[int64]
	}{{"input", u.InputTokens}, {"output", u.OutputTokens}} {
		if c.a.Known() {
			in.Tokens.Record(ctx, c.a.Value, metric.WithAttributes(append(attrs, attribute.String(KeyTokenType, c.kind))...))
		}
	}
}

// run counts an ended run and adds its cost when known exactly.
func (in *runInstruments) run(ctx context.Context, kind string, r kernel.Result) {
	if in == nil {
		return
	}
	tokens := r.Usage.InputTokens.Known() && r.Usage.OutputTokens.Known()
	in.Runs.Add(ctx, 1, metric.WithAttributes(
		attribute.String(KeyRunKind, kind), attribute.String(KeyRunStatus, string(r.Status)),
		attribute.Bool(KeyDelivered, r.Delivered), attribute.Bool(KeyTokensKnown, tokens),
		attribute.Bool(KeyCostKnown, r.Usage.CostUSD.Known())))
	if r.Usage.CostUSD.Known() {
		attrs := []attribute.KeyValue{attribute.String(KeyRunKind, kind)}
		if r.RequestedModel != "" {
			attrs = append(attrs, attribute.String(KeyRequestModel, r.RequestedModel))
		}
		in.Cost.Add(ctx, r.Usage.CostUSD.Value, metric.WithAttributes(attrs...))
	}
}
