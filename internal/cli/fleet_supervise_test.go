package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// TestSuperviseOnTheFleet (issue 14): a supervised run whose executor is
// the fleet (fleet.Executor) has its workers executed by an `agentrt
// worker` process, a run of the fleet each, and charges what their
// attempts' ledgers state.
func TestSuperviseOnTheFleet(t *testing.T) {
	t.Parallel()
	conn, schema := fleetDB(t)
	db := []string{"--database", conn, "--river-schema", schema}
	if out, errOut, code := run(t, "", append([]string{"fleet", "migrate"}, db...)...); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}
	script := writeFile(t, "script.json", `{"turns":[{"repeat":true,"steps":[{"text":"note: DONE"},{"usage":{"inputTokens":7,"outputTokens":3},"mode":"delta"}]}]}`)
	worker := startProc(t, "worker", nil, append([]string{"worker", "--id", "fleet-w", "--script", script, "--poll-interval", "50ms", "--log-format", "json"}, db...)...)
	f := openTestFleet(t, conn, schema)

	manager, err := profile.Parse([]byte(`{"name": "manager", "harness": "cli-base", "tools": {"agent_runtime_coordination_spawn_worker": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	writer, err := profile.Parse([]byte(`{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`))
	if err != nil {
		t.Fatal(err)
	}
	tasks := []string{"write alpha", "write beta"}
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for _, task := range tasks {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: task}); err != nil {
				return supervise.BrainReport{}, err
			}
			if _, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil {
				return supervise.BrainReport{}, err
			}
		}
		return supervise.BrainReport{}, nil
	})
	tokens, iterations, perTokens, perIterations := int64(10_000), int64(10), int64(1_000), int64(1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := supervise.Supervise(ctx, manager, "write two notes", supervise.Options{
		Budget:    ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations},
		Profiles:  map[string]*profile.Profile{"writer": writer},
		Deliverable: supervise.Deliverable{Describe: "the note says DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE"), Reason: "the note says DONE"}, nil
		}},
		Executor: &fleet.Executor{Fleet: f, Provider: "scripted", PollInterval: 50 * time.Millisecond},
		Brain:    brain, RunID: "sup-" + schema,
	})
	if err != nil {
		t.Fatalf("supervise: %v\nworker:\n%s", err, worker.logs)
	}
	if res.Status != supervise.StatusWinner || len(res.Tree) != 2 {
		t.Fatalf("supervised run %s (%s) with %d workers; want a winner of 2\nworker:\n%s", res.Status, res.Reason, len(res.Tree), worker.logs)
	}
	for _, w := range res.Tree {
		if !w.Delivered {
			t.Errorf("worker %+v not delivered", w)
		}
	}
	// Each worker was a fleet run the worker process executed.
	runs, err := f.Store().ListRuns(t.Context(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var executed int
	for _, sr := range runs {
		if sr.Kind != fleet.Kind {
			continue
		}
		r, err := fleet.DecodeRun(sr)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != store.StatusCompleted || len(r.Attempts) != 1 || r.Attempts[0].Worker != "fleet-w" {
			t.Errorf("fleet run %s: %s, attempts %+v; want completed by the worker process", r.ID, r.Status, r.Attempts)
		}
		// The supervised run's gate decides delivery: the fleet run and
		// its attempt name it, and claim no verdict of their own.
		judge := "supervise run sup-" + schema + ", node "
		if r.Spec.JudgedBy == "" || !strings.HasPrefix(r.Spec.JudgedBy, judge) || r.Outcome == nil || r.Outcome.JudgedBy != r.Spec.JudgedBy || r.Outcome.Delivered {
			t.Errorf("fleet run %s: spec judgedBy %q, outcome %+v; want judged by %q…, not delivered by the fleet", r.ID, r.Spec.JudgedBy, r.Outcome, judge)
		}
		if len(r.Attempts) == 1 {
			ar, err := kernel.ReadRun(t.Context(), f.Store(), r.Attempts[0].RunID)
			if err != nil {
				t.Fatal(err)
			}
			if ar.Exact == nil || ar.Exact.JudgedBy != r.Spec.JudgedBy || ar.Exact.Delivered != nil || ar.Exact.Verdict != nil {
				t.Errorf("attempt %s records %+v; want judged by %q with no delivered or verdict of its own", ar.ID, ar.Exact, r.Spec.JudgedBy)
			}
		}
		executed++
	}
	if executed != 2 {
		t.Errorf("%d fleet runs; want one per worker, 2", executed)
	}
	// The spend is what the attempts' ledgers state: 10 tokens, one
	// iteration per worker.
	if got := res.Breakdown.ChildWork; !got.TokensKnown || got.Tokens != 20 || got.Iterations != 2 {
		t.Errorf("the workers' spend %+v; want 20 tokens, 2 iterations, known", got)
	}
	worker.stop(t)
}
