package telemetry_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/agentrt/agentrt/telemetry"
)

// point is one data point, flattened: its attributes and its value (a
// sum's value, or a histogram's count and sum).
type point struct {
	Attrs        map[string]any
	Value        float64
	Count        uint64
	HistogramSum float64
}

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	attrs := func(s attribute.Set) map[string]any { return attrMap(s.ToSlice()) }
	out := map[string][]point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{Attrs: attrs(p.Attributes), Value: float64(p.Value)})
				}
			case metricdata.Sum[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{Attrs: attrs(p.Attributes), Value: p.Value})
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{Attrs: attrs(p.Attributes), Count: p.Count, HistogramSum: float64(p.Sum)})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					// Latency varies: keep only the count.
					out[m.Name] = append(out[m.Name], point{Attrs: attrs(p.Attributes), Count: p.Count})
				}
			}
		}
	}
	return out
}

// Issue 16 item 2 metrics: run counts, token and cost counters and the
// turn latency histogram; unknown usage records no token or cost point
// (never a 0) and is counted as unknown on the run.
func TestRunMetrics(t *testing.T) {
	models := map[string]any{"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted/note-writer", "gen_ai.response.model": "scripted/note-writer"}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	run := func(tokens, cost bool) map[string]any {
		return map[string]any{"tangle.run.kind": "execute", "tangle.run.status": "completed", "tangle.run.delivered": true, "tangle.tokens_known": tokens, "tangle.cost_known": cost}
	}
	tests := []struct {
		name   string
		script string
		want   map[string][]point
	}{
		{"known usage and cost", `{"turns":[{"steps":[{"text":"A note."},{"usage":{"inputTokens":12,"outputTokens":5,"cost":0.5},"mode":"delta"}]}]}`, map[string][]point{
			telemetry.MetricRuns: {{Attrs: run(true, true), Value: 1}},
			telemetry.MetricTokenUsage: {
				{Attrs: with(models, "gen_ai.token.type", "input"), Count: 1, HistogramSum: 12},
				{Attrs: with(models, "gen_ai.token.type", "output"), Count: 1, HistogramSum: 5},
			},
			telemetry.MetricCost:         {{Attrs: map[string]any{"tangle.run.kind": "execute", "gen_ai.request.model": "scripted/note-writer"}, Value: 0.5}},
			telemetry.MetricTurnDuration: {{Attrs: models, Count: 1}},
		}},
		{"unknown usage", `{"turns":[{"steps":[{"text":"A note."}]}]}`, map[string][]point{
			telemetry.MetricRuns:         {{Attrs: run(false, false), Value: 1}},
			telemetry.MetricTurnDuration: {{Attrs: models, Count: 1}},
		}},
		// A failed turn's latency carries error.type, as the GenAI
		// conventions ask of gen_ai.client.operation.duration.
		{"failed turn", `{"turns":[{"steps":[{"text":"partial"}],"end":"failed","error":"quota exhausted"}]}`, map[string][]point{
			telemetry.MetricRuns:         {{Attrs: with(run(false, false), "tangle.run.status", "failed", "tangle.run.delivered", false), Value: 1}},
			telemetry.MetricTurnDuration: {{Attrs: with(models, "error.type", "turn_failed"), Count: 1}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			tracedWith(t, tc.script, "run-metrics", telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
			got := collect(t, reader)
			for name, pts := range got {
				if len(pts) == 0 {
					delete(got, name)
				}
			}
			byType := cmpopts.SortSlices(func(a, b point) bool {
				return fmt.Sprint(a.Attrs[telemetry.KeyTokenType]) < fmt.Sprint(b.Attrs[telemetry.KeyTokenType])
			})
			if diff := cmp.Diff(tc.want, got, byType); diff != "" {
				t.Errorf("metrics (-want +got):\n%s", diff)
			}
		})
	}
}
