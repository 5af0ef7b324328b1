package mcpserver_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

func ptr[T any](v T) *T { return &v }

func parseProfile(t *testing.T, doc string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCoordinationToolsOverMCP: OS-04 (the coordination part) — a brain
// that mounts its Coordinator's tools behind mcpserver.New lets an MCP
// client list the coordination verbs and drive a run through them: spawn
// a worker, await its settlement, observe it; a refused spawn is a
// result {error, reason}, not a protocol error. This is the shape an
// external-harness manager brain takes.
func TestCoordinationToolsOverMCP(t *testing.T) {
	var script scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"},
		{"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.0001}, "mode": "delta"}]}]}`), &script); err != nil {
		t.Fatal(err)
	}
	var (
		names                       []string
		spawned, awaited, refused   map[string]any
		observed                    map[string]any
		refusedIsError, spawnFailed bool
	)
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		ts, err := c.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		srv, err := mcpserver.New(ts, &mcpserver.Options{Name: "agentrt-coordination"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		cs := connect(t, ctx, srv, "pipe")
		listed, err := cs.ListTools(ctx, nil)
		if err != nil {
			return supervise.BrainReport{}, err
		}
		for _, tl := range listed.Tools {
			names = append(names, tl.Name)
		}
		call := func(verb string, args map[string]any) (map[string]any, bool) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: supervise.ToolPrefix + verb, Arguments: args})
			if err != nil {
				t.Errorf("%s: protocol error %v", verb, err)
				return nil, true
			}
			m, _ := res.StructuredContent.(map[string]any)
			return m, res.IsError
		}
		spawned, spawnFailed = call(supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"})
		awaited, _ = call(supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 20000})
		observed, _ = call(supervise.VerbObserveAgent, map[string]any{"workerId": spawned["workerId"]})
		refused, refusedIsError = call(supervise.VerbSpawnWorker, map[string]any{"profile": "nobody", "task": "write alpha"})
		return supervise.BrainReport{}, nil
	})
	manager := parseProfile(t, `{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
		"tools": {"agent_runtime_coordination_spawn_worker": true}}`)
	o := supervise.Options{
		Budget:    ledger.Budget{Tokens: ptr[int64](10_000), Iterations: ptr[int64](10), MicroUSD: ptr[int64](1_000_000)},
		PerWorker: ledger.Budget{Tokens: ptr[int64](1_000), Iterations: ptr[int64](1), MicroUSD: ptr[int64](100_000)},
		Profiles:  map[string]*profile.Profile{"writer": parseProfile(t, `{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`)},
		Deliverable: supervise.Deliverable{Describe: "says DONE", Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE")}, nil
		}},
		Executor: &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: storememory.New(nil)},
		Brain:    brain,
		RunID:    "run1",
	}
	res, err := supervise.Supervise(deadline(t), manager, "write alpha", o)
	if err != nil {
		t.Fatal(err)
	}

	want := supervise.Verbs()
	for i := range want {
		want[i] = supervise.ToolPrefix + want[i]
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("listed verbs (-want +got):\n%s", diff)
	}
	if spawnFailed || spawned["workerId"] == nil {
		t.Errorf("spawn_worker: %v", spawned)
	}
	if awaited["event"] == nil {
		t.Errorf("await_event: %v", awaited)
	}
	if observed["status"] != "done" || observed["delivered"] != true {
		t.Errorf("observe_agent: %v", observed)
	}
	if refusedIsError || refused["error"] == nil || refused["reason"] == nil {
		t.Errorf("a refused spawn is a result {error, reason}: isError %v, %v", refusedIsError, refused)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("status %s, want winner", res.Status)
	}
}
