package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
	"github.com/agentrt/agentrt/telemetry"
	"github.com/agentrt/agentrt/telemetry/otlptest"
)

// Issue 16 (OS-06; spec runtime §10 "worker trace context is propagated
// as TRACEPARENT"): a supervised run whose workers the fleet executes
// (fleet.Executor, PostgreSQL + River) is one trace. The supervisor's
// process exports the supervisor.run root and a supervisor.node span per
// worker; the `agentrt worker` process executing each worker's fleet run
// continues the node's trace context, recorded with the run, so the
// attempt's invoke_agent span is the node span's child and its turn the
// attempt's, all in the trace derived from the supervised run's id.
func TestFleetWorkersContinueTheSupervisorsTrace(t *testing.T) {
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	c := otlptest.New()
	defer c.Close()
	// The worker process reads OTEL_EXPORTER_OTLP_ENDPOINT from the
	// environment it inherits.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", c.URL)
	script := writeFile(t, "script.json", `{"turns":[{"repeat":true,"steps":[{"text":"note: DONE"},{"usage":{"inputTokens":7,"outputTokens":3},"mode":"delta"}]}]}`)
	worker := startProc(t, "worker", nil, append([]string{"worker", "--id", "traced-w", "--script", script, "--poll-interval", "50ms", "--log-format", "json"}, db...)...)
	f := openTestFleet(t, conn, schema)

	tracing, err := telemetry.FromEnv(t.Context(), func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return c.URL
		}
		return ""
	}, telemetry.Options{})
	if err != nil || tracing == nil {
		t.Fatalf("tracing: %v %v", tracing, err)
	}
	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	writer, err := profile.Parse([]byte(`{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	tasks := []string{"write alpha", "write beta"}
	brain := supervise.BrainFunc(func(ctx context.Context, co *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range tasks {
			if _, err := co.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		for range tasks {
			if _, err := co.Await(ctx, supervise.AwaitArgs{TimeoutMS: 90_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	tokens, iterations, perTokens, perIterations := int64(10_000), int64(10), int64(1_000), int64(1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	runID := "traced-sup-" + schema
	res, err := supervise.Supervise(ctx, manager, "write two notes", supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations},
		Profiles:  map[string]*profile.Profile{"writer": writer},
		Deliverable: supervise.Deliverable{Describe: "the note says DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE"), Reason: "the note says DONE"}, nil
		}},
		Executor: &fleet.Executor{Fleet: f, Provider: "scripted", PollInterval: 50 * time.Millisecond},
		Brain:    brain, RunID: runID,
		Observer: tracing.SuperviseObserver(),
	})
	if err != nil {
		t.Fatalf("supervise: %v\nworker:\n%s", err, worker.logs)
	}
	if res.Status != supervise.StatusWinner || len(res.Tree) != 2 {
		t.Fatalf("supervised run %s (%s) with %d workers; want a winner of 2\nworker:\n%s", res.Status, res.Reason, len(res.Tree), worker.logs)
	}
	shutdown, stop := context.WithTimeout(t.Context(), 30*time.Second)
	defer stop()
	if r := tracing.Shutdown(shutdown); !r.Succeeded {
		t.Fatalf("the supervisor's spans: %+v", r)
	}
	// SIGINT: the worker delivers its spans as it stops.
	worker.stop(t)

	// Each fleet run records the trace context of its node's span.
	runs, err := f.Store().ListRuns(t.Context(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, sr := range runs {
		if sr.Kind != fleet.Kind {
			continue
		}
		r, err := fleet.DecodeRun(sr)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != store.StatusCompleted || len(r.Attempts) != 1 {
			t.Errorf("fleet run %s: %s, attempts %+v; want completed in one attempt", r.ID, r.Status, r.Attempts)
		}
		recorded[r.TraceParent] = true
	}

	spans := c.Spans()
	want := telemetry.TraceID(runID).String()
	var root otlptest.Span
	var nodes []otlptest.Span
	for _, s := range spans {
		if s.TraceID != want {
			t.Errorf("%s (%s) in trace %s, want %s (derived from run %s)", s.Name, s.Resource["service.name"], s.TraceID, want, runID)
		}
		switch s.Name {
		case telemetry.SpanSupervisorRun:
			root = s
		case telemetry.SpanSupervisorNode:
			nodes = append(nodes, s)
		}
	}
	if root.SpanID == "" || root.ParentID != "" || len(nodes) != 2 {
		t.Fatalf("root %+v and %d node spans, want one root and 2 nodes; all: %+v", root, len(nodes), spans)
	}
	for _, node := range nodes {
		if node.ParentID != root.SpanID {
			t.Errorf("node %v under %s, want the root %s", node.Attributes[telemetry.KeySuperviseNodeID], node.ParentID, root.SpanID)
		}
		if tp := "00-" + node.TraceID + "-" + node.SpanID + "-01"; !recorded[tp] {
			t.Errorf("no fleet run recorded the node's traceparent %s; recorded %v", tp, recorded)
		}
		attempt := childOf(t, spans, node, telemetry.SpanRunPrefix)
		if diff := cmp.Diff(map[string]any{telemetry.KeyOperation: "invoke_agent", telemetry.KeyRunStatus: "completed",
			telemetry.KeyInputTokens: int64(7), telemetry.KeyOutputTokens: int64(3)},
			pickAttrs(attempt, telemetry.KeyOperation, telemetry.KeyRunStatus, telemetry.KeyInputTokens, telemetry.KeyOutputTokens, telemetry.KeyTokensKnown)); diff != "" {
			t.Errorf("worker attempt under node %v (-want +got):\n%s", node.Attributes[telemetry.KeySuperviseNodeID], diff)
		}
		childOf(t, spans, attempt, telemetry.SpanInference)
	}
	noContent(t, spans, "write alpha", "write beta", "note: DONE")
}
