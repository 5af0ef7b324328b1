package telemetry_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/telemetry"
)

// Issue 14 (worker metrics with no tracing): the metrics-only path
// (NewMetrics, its Observer) records exactly the run metrics a Tracing
// records for the same run — run counts, turn latency with error.type,
// tokens and cost only when known exactly — with no span exporter at
// all. OS-06.
func TestMetricsWithoutTracingRecordWhatTracingRecords(t *testing.T) {
	scripts := map[string]string{
		"known usage and cost": `{"turns":[{"steps":[{"text":"A note."},{"usage":{"inputTokens":12,"outputTokens":5,"cost":0.5},"mode":"delta"}]}]}`,
		"unknown usage":        `{"turns":[{"steps":[{"text":"A note."}]}]}`,
		"failed turn":          `{"turns":[{"steps":[{"text":"partial"}],"end":"failed","error":"quota exhausted"}]}`,
	}
	for name, script := range scripts {
		t.Run(name, func(t *testing.T) {
			traced := sdkmetric.NewManualReader()
			tracedWith(t, script, "run-traced", telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(traced))})

			only := sdkmetric.NewManualReader()
			m, err := telemetry.NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(only)))
			if err != nil {
				t.Fatal(err)
			}
			p, err := profile.Parse([]byte(noteWriter))
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scripted.ParseScript([]byte(script))
			if err != nil {
				t.Fatal(err)
			}
			kernel.Execute(t.Context(), kernel.Request{Profile: p, Task: "Write a release note.", Provider: scripted.New(sc, scripted.Options{}),
				Store: memory.New(nil), RunID: "run-metrics-only", Observer: m.AttemptObserver("fleet-run"),
				Check: func(context.Context, kernel.Outcome) (kernel.Verdict, error) {
					return kernel.Verdict{Passed: true}, nil
				}})

			want, got := collect(t, traced), collect(t, only)
			if len(got[telemetry.MetricRuns]) != 1 {
				t.Fatalf("the metrics-only path counted %d runs, want 1: %v", len(got[telemetry.MetricRuns]), got)
			}
			byType := cmpopts.SortSlices(func(a, b point) bool {
				return fmt.Sprint(a.Attrs[telemetry.KeyTokenType]) < fmt.Sprint(b.Attrs[telemetry.KeyTokenType])
			})
			if diff := cmp.Diff(want, got, byType, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("metrics without tracing (-traced +metrics-only):\n%s", diff)
			}
		})
	}
	if _, err := telemetry.NewMetrics(nil); err == nil {
		t.Error("NewMetrics(nil) = nil error, want a refusal")
	}
	var none *telemetry.Metrics
	if none.Observer() != nil {
		t.Error("a nil Metrics' Observer is not nil")
	}
}
