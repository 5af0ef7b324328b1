package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentrt/agentrt/telemetry"
)

// tracingShutdown bounds how long a command waits, once its run ended,
// for its spans to reach the collector.
const tracingShutdown = 10 * time.Second

// tracingFlush bounds how long a command that goes on waits for the spans
// ended so far to reach the collector.
const tracingFlush = 5 * time.Second

// startTracing returns the tracing the standard OTEL_EXPORTER_OTLP_*
// variables configure, or nil when they configure none. A configuration
// that cannot be used is reported and the command runs untraced: tracing
// only observes, it never changes a run.
func startTracing(ctx context.Context, stdio IO) *telemetry.Tracing {
	return startTracingWith(ctx, stdio, telemetry.Options{})
}

// startTracingWith is startTracing with o (a meter provider of the
// command's own, which then receives the run metrics instead of OTLP).
func startTracingWith(ctx context.Context, stdio IO, o telemetry.Options) *telemetry.Tracing {
	t, err := telemetry.FromEnv(ctx, os.Getenv, o)
	if err != nil {
		fmt.Fprintf(stdio.Err, "agentrt: tracing is off: %v\n", err)
		return nil
	}
	return t
}

// stopTracing delivers what is left of t's spans and reports spans that
// were not delivered.
func stopTracing(ctx context.Context, stdio IO, t *telemetry.Tracing) {
	if t == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdown)
	defer cancel()
	if r := t.Shutdown(ctx); !r.Succeeded {
		fmt.Fprintf(stdio.Err, "agentrt: tracing: %d spans delivered, %d undelivered, %d dropped", r.Delivered, r.Undelivered, r.Dropped)
		if r.Err != nil {
			fmt.Fprintf(stdio.Err, ": %s", strings.ReplaceAll(r.Err.Error(), "\n", "; "))
		}
		fmt.Fprintln(stdio.Err)
	}
}
