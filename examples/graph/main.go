package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

func main() {
	ctx := context.Background()
	path, err := sqlite.DefaultPath()
	if err != nil {
		fail(err)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fail(err)
	}
	defer st.Close()
	runDir, err := os.MkdirTemp("", "agentrt-graph-")
	if err != nil {
		fail(err)
	}
	if err := run(ctx, os.Stdout, st, runDir); err != nil {
		fail(err)
	}
	fmt.Println("journal:", runDir)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "graph:", err)
	os.Exit(1)
}

// topology is the graph as data: nodes are profiles (name = id), edges
// name their directives by registry handle.
const topology = `{
  "nodes": [
    {"id": "driver", "profile": {"name": "driver", "harness": "cli-base", "model": {"default": "scripted/driver"},
      "prompt": {"systemPrompt": "Delegate with spawn_worker, collect with await_event."},
      "tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}},
    {"id": "coder", "profile": {"name": "coder", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/coder"}}},
    {"id": "reviewer", "profile": {"name": "reviewer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/reviewer"}}},
    {"id": "critic", "profile": {"name": "critic", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/critic"}}}
  ],
  "edges": [
    {"kind": "delegates", "from": "driver", "to": "coder", "directive": "delegate/coder/v1"},
    {"kind": "delegates", "from": "driver", "to": "reviewer", "directive": "delegate/reviewer/v1", "maxTraversals": 2},
    {"kind": "analyzes", "analyst": "critic", "over": ["coder"], "to": "driver", "directive": "analyze/critic/v1"}
  ],
  "budget": {"maxTokens": 5000, "maxIterations": 6, "maxUsd": 0.05}
}`

// directives are the edges' text, by handle.
var directives = map[string]string{
	"delegate/coder/v1":    "Fix the failing test; change nothing else.",
	"delegate/reviewer/v1": "Review the change and name the riskiest line.",
	"analyze/critic/v1":    "Critique the patch for unsafe changes.",
}

// The workers' provider answers each node's task, with usage and cost.
const workerScript = `{"turns": [
  {"match": "failing test", "steps": [{"text": "patch: guard the nil session."}, {"usage": {"inputTokens": 120, "outputTokens": 30, "cost": 0.002}, "mode": "delta"}]},
  {"match": "riskiest line", "steps": [{"text": "The riskiest line is the session check."}, {"usage": {"inputTokens": 80, "outputTokens": 20, "cost": 0.001}, "mode": "delta"}]},
  {"match": "unsafe changes", "steps": [{"text": "No unsafe change; the guard is minimal."}, {"usage": {"inputTokens": 60, "outputTokens": 15, "cost": 0.001}, "mode": "delta"}]}
]}`

func call(id, verb string, args map[string]any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, supervise.ToolPrefix+verb, string(b))
}

// driver is the root's scripted model: delegate to the coder, collect
// its settle and the critic's finding on it, then delegate the review,
// collect it, answer.
func driver() contract.ChatModel {
	usage := scripted.Usage(50, 10, contract.UsageDelta)
	return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{
			call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "coder", "task": "test_login fails on an expired session."}),
			usage}},
		{Events: []contract.ChatEvent{
			call("c2", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000}),
			call("c3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30001}),
			usage}},
		{Events: []contract.ChatEvent{
			call("c4", supervise.VerbSpawnWorker, map[string]any{"profile": "reviewer", "task": "The login handler change."}),
			usage}},
		{Events: []contract.ChatEvent{
			call("c5", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30002}),
			usage}},
		{Events: []contract.ChatEvent{scripted.Text("The coder's patch is in; the critic found nothing unsafe."), usage}},
	}})
}

// aPatch is the caller's independent check: the deliverable is a patch.
var aPatch = supervise.Deliverable{
	Describe: "a patch",
	Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		if strings.HasPrefix(out.Text, "patch:") {
			return kernel.Verdict{Passed: true}, nil
		}
		return kernel.Verdict{Passed: false, Reason: "not a patch"}, nil
	},
}

func run(ctx context.Context, w io.Writer, st store.Store, runDir string) error {
	g, err := graph.Decode([]byte(topology))
	if err != nil {
		return err
	}
	g.Deliverable = aPatch
	reg, err := graph.NewRegistry(directives)
	if err != nil {
		return err
	}
	var script scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &script); err != nil {
		return err
	}
	perTokens, perIterations, perMicroUSD := int64(1_000), int64(1), int64(10_000)
	res, err := graph.RunGraph(ctx, g, graph.Options{
		Task:     "Make the login tests pass.",
		Registry: reg,
		Supervise: supervise.Options{
			PerWorker: ledger.Budget{Tokens: &perTokens, Iterations: &perIterations, MicroUSD: &perMicroUSD},
			Executor:  &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: st},
			Router:    driver(),
			RunDir:    runDir,
			RunID:     "login",
		},
	})
	if err != nil {
		return err
	}
	for _, row := range res.Ledger {
		fmt.Fprintf(w, "%s #%d %s %s %d bytes, worker %s\n", row.Edge, row.Traversal, row.Outcome, row.Continuity, row.Bytes, row.WorkerID)
	}
	for _, n := range res.Result.Tree {
		fmt.Fprintf(w, "worker %s %-8s %s, delivered %v\n", n.ID, n.Profile, n.State, n.Delivered)
	}
	if res.Result.Status == supervise.StatusWinner {
		fmt.Fprintf(w, "winner: %s %q\n", res.Result.Winner.Node, res.Result.Winner.Text)
	} else {
		fmt.Fprintf(w, "no winner: %s\n", res.Result.Reason)
	}
	s := res.Result.Spent
	fmt.Fprintf(w, "spent: %d tokens, %d worker iterations, $%.6f (known %v)\n", s.Tokens, s.Iterations, float64(s.MicroUSD)/1e6, s.USDKnown)
	return nil
}
