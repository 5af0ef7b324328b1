package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
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
	runDir, err := os.MkdirTemp("", "agentrt-supervise-")
	if err != nil {
		fail(err)
	}
	if err := run(ctx, os.Stdout, st, runDir); err != nil {
		fail(err)
	}
	fmt.Println("journal:", runDir)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "supervise:", err)
	os.Exit(1)
}

// The manager declares the coordination verbs it may use; the worker is
// a plain cli-base profile.
const (
	managerDoc = `{
  "name": "release-manager",
  "harness": "cli-base",
  "model": { "default": "scripted/manager" },
  "prompt": { "systemPrompt": "Delegate with spawn_worker, collect results with await_event." },
  "tools": {
    "agent_runtime_coordination_spawn_worker": true,
    "agent_runtime_coordination_await_event": true
  }
}`
	writerDoc = `{
  "name": "note-writer",
  "harness": "cli-base",
  "model": { "provider": "scripted", "default": "scripted/note-writer" }
}`
	// The workers' provider: each task's note, usage and cost.
	workerScript = `{"turns": [
  {"match": "restore", "steps": [{"text": "Shipped one-click restore."}, {"usage": {"inputTokens": 100, "outputTokens": 20, "cost": 0.002}, "mode": "delta"}]},
  {"match": "export", "steps": [{"text": "Export is faster now"}, {"usage": {"inputTokens": 50, "outputTokens": 10, "cost": 0.001}, "mode": "delta"}]}
]}`
)

// call is one scripted call of a coordination verb.
func call(id, verb string, args map[string]any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, supervise.ToolPrefix+verb, string(b))
}

func usage(in, out int64) contract.ChatEvent {
	return scripted.Usage(in, out, contract.UsageDelta)
}

// manager is the manager's scripted model: spawn two writers, await both
// settlements, answer.
func manager() contract.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{
			call("c1", supervise.VerbSpawnWorker, map[string]any{"profile": "note-writer", "label": "restore", "task": "Release note for one-click restore."}),
			call("c2", supervise.VerbSpawnWorker, map[string]any{"profile": "note-writer", "label": "export", "task": "Release note for faster export."}),
			usage(40, 10)}},
		{Events: []contract.ChatEvent{
			call("c3", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30000}),
			call("c4", supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 30001}),
			usage(60, 10)}},
		{Events: []contract.ChatEvent{scripted.Text("The restore note passed review."), usage(80, 10)}},
	}})
}

// sentence is the caller's independent check: a release note is one
// sentence ending in a full stop.
var sentence = supervise.Deliverable{
	Describe: "one sentence ending in a full stop",
	Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
		if strings.HasSuffix(out.Text, ".") {
			return kernel.Verdict{Passed: true}, nil
		}
		return kernel.Verdict{Passed: false, Reason: "no full stop"}, nil
	},
}

func run(ctx context.Context, w io.Writer, st store.Store, runDir string) error {
	mgr, err := profile.Parse([]byte(managerDoc))
	if err != nil {
		return err
	}
	writer, err := profile.Parse([]byte(writerDoc))
	if err != nil {
		return err
	}
	var script scripted.Script
	if err := json.Unmarshal([]byte(workerScript), &script); err != nil {
		return err
	}
	tokens, iterations, microUSD := int64(5_000), int64(4), int64(50_000)
	perTokens, perIterations, perMicroUSD := int64(1_000), int64(1), int64(10_000)
	res, err := supervise.Supervise(ctx, mgr, "Write release notes for this week's two features.", supervise.Options{
		Budget:      ledger.Budget{Tokens: &tokens, Iterations: &iterations, MicroUSD: &microUSD},
		PerWorker:   ledger.Budget{Tokens: &perTokens, Iterations: &perIterations, MicroUSD: &perMicroUSD},
		Profiles:    map[string]*profile.Profile{"note-writer": writer},
		Deliverable: sentence,
		Executor:    &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: st},
		Router:      manager(),
		RunDir:      runDir,
		RunID:       "notes",
	})
	if err != nil {
		return err
	}
	for _, n := range res.Tree {
		verdict := "not delivered"
		if n.Delivered {
			verdict = "delivered"
		} else if n.Verdict != nil && n.Verdict.Reason != "" {
			verdict += " (" + n.Verdict.Reason + ")"
		}
		fmt.Fprintf(w, "worker %s %-7s %s, %s\n", n.ID, n.Label, n.State, verdict)
	}
	switch res.Status {
	case supervise.StatusWinner:
		fmt.Fprintf(w, "winner: %s %q\n", res.Winner.Node, res.Winner.Text)
	default:
		fmt.Fprintf(w, "no winner: %s\n", res.Reason)
	}
	s := res.Spent
	fmt.Fprintf(w, "spent: %d tokens (known %v), %d worker iterations, $%.6f (known %v); manager %d tokens, workers %d\n",
		s.Tokens, s.TokensKnown, s.Iterations, float64(s.MicroUSD)/1e6, s.USDKnown,
		res.Breakdown.DriverInference.Tokens, res.Breakdown.ChildWork.Tokens)
	return nil
}
