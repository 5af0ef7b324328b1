package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// delegationQueue opens a queue whose manager spawns the writer once on
// the task and whose check wants DONE.
func delegationQueue(t *testing.T) *delegation.Queue {
	t.Helper()
	var script scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"match": "alpha", "repeat": true, "steps": [{"text": "alpha: DONE"},
		{"usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.0001}, "mode": "delta"}]}]}`), &script); err != nil {
		t.Fatal(err)
	}
	q, err := delegation.Open(delegation.Config{
		Store: storememory.New(nil),
		Manager: parseProfile(t, `{"name": "manager", "harness": "cli-base", "model": {"default": "scripted/manager"},
			"tools": {"agent_runtime_coordination_spawn_worker": true, "agent_runtime_coordination_await_event": true}}`),
		Profiles: map[string]*profile.Profile{"writer": parseProfile(t, `{"name": "writer", "harness": "cli-base", "model": {"provider": "scripted", "default": "scripted/writer"}}`)},
		Executor: &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: storememory.New(nil)},
		Router: func(task string) (contract.ChatModel, error) {
			spawn, _ := json.Marshal(map[string]any{"profile": "writer", "task": task})
			return scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				{Events: []contract.ChatEvent{scripted.Call("s1", supervise.ToolPrefix+supervise.VerbSpawnWorker, string(spawn))}},
				{Events: []contract.ChatEvent{scripted.Call("a1", supervise.ToolPrefix+supervise.VerbAwaitEvent, `{"timeoutMs": 60000}`)}},
				{Events: []contract.ChatEvent{scripted.Text("done")}},
			}}), nil
		},
		Deliverable: supervise.Deliverable{Check: func(_ context.Context, out supervise.Output) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: strings.Contains(out.Text, "DONE")}, nil
		}},
		Caps:   delegation.Budget{Tokens: 10_000, Iterations: 10},
		RunDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q.Close(ctx)
	})
	return q
}

// call calls a tool and returns its structured result and isError.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name, args string) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	m, _ := res.StructuredContent.(map[string]any)
	return m, res.IsError
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestDelegationOverMCP: OS-04, §9 delegation server — an SDK client,
// over the stdio transport and over streamable HTTP, lists the
// delegation tools, delegates (the same key and request return the same
// delegation; another request under the key is a refusal RESULT, not a
// protocol error), reads the status and history shapes, rates and
// cancels; arguments that do not fit the schema are an
// invalid-arguments result.
func TestDelegationOverMCP(t *testing.T) {
	for _, kind := range transports {
		t.Run(kind, func(t *testing.T) {
			ctx := deadline(t)
			srv, err := mcpserver.NewDelegation(delegationQueue(t), mcpserver.DelegationOptions{Version: "test"})
			if err != nil {
				t.Fatal(err)
			}
			cs := connect(t, ctx, srv, kind)
			listed, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range listed.Tools {
				names = append(names, tl.Name)
			}
			want := []string{"delegate", "delegate_feedback", "delegation_cancel", "delegation_history", "delegation_status"}
			if diff := cmp.Diff(want, names); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if got := cs.InitializeResult().ServerInfo.Name; got != delegation.ServerName {
				t.Errorf("server name %q", got)
			}

			// §9: delegate is synchronous by default and answers with the
			// winner arm at the top level.
			first, isErr := call(t, ctx, cs, "delegate", `{"intent": "write alpha", "idempotencyKey": "k1", "runId": "caller-run-1"}`)
			if isErr || first["status"] != "winner" || first["state"] != "completed" || first["reused"] != false {
				t.Fatalf("delegate: %v", first)
			}
			if out, _ := first["out"].(string); !strings.Contains(out, "DONE") || first["outRef"] == nil {
				t.Errorf("the winner arm: out %q outRef %v", out, first["outRef"])
			}
			if top, _ := first["spentTotal"].(map[string]any); top == nil || top["charged"] == nil {
				t.Errorf("the winner arm's spentTotal: %v", first["spentTotal"])
			}
			id, _ := first["taskId"].(string)
			d, _ := first["delegation"].(map[string]any)
			if diff := cmp.Diff([]string{"attempts", "budget", "createdAt", "endedAt", "feedback", "requestDigest", "result", "resumed", "runDir", "runId", "startedAt", "state", "intent", "taskId", "updatedAt", "idempotencyKey"}, keys(d), cmpSorted); diff != "" {
				t.Errorf("delegation keys (-want +got):\n%s", diff)
			}
			res, _ := d["result"].(map[string]any)
			if res["status"] != "winner" || !strings.Contains(res["out"].(string), "DONE") {
				t.Errorf("result %v", res)
			}
			spent, _ := res["spentTotal"].(map[string]any)
			if _, present := spent["usd"]; !present || spent["usd"] != nil || spent["tokens"] != nil {
				t.Errorf("spent %v: the manager's model reported nothing, so tokens and usd are null", spent)
			}

			again, isErr := call(t, ctx, cs, "delegate", `{"intent": "write alpha", "idempotencyKey": "k1"}`)
			if isErr || again["taskId"] != id || again["reused"] != true {
				t.Errorf("retry: %v", again)
			}
			conflict, isErr := call(t, ctx, cs, "delegate", `{"intent": "write beta", "idempotencyKey": "k1"}`)
			if isErr || conflict["error"] != delegation.CodeIdempotencyConflict || conflict["path"] != "/idempotencyKey" || conflict["reason"] == "" {
				t.Errorf("conflict: isError %v, %v", isErr, conflict)
			}
			over, isErr := call(t, ctx, cs, "delegate", `{"intent": "write alpha", "budget": {"tokens": 20000}}`)
			if isErr || over["error"] != delegation.CodeBudgetOverCap || over["path"] != "/budget/tokens" {
				t.Errorf("over the cap: isError %v, %v", isErr, over)
			}
			bad, isErr := call(t, ctx, cs, "delegate", `{"intent": "write alpha", "profile": "root"}`)
			if !isErr || bad["error"] != kernel.CodeInvalidArguments {
				t.Errorf("an argument naming a profile: isError %v, %v", isErr, bad)
			}
			old, isErr := call(t, ctx, cs, "delegate", `{"task": "write alpha"}`)
			if !isErr || old["error"] != kernel.CodeInvalidArguments {
				t.Errorf("the argument is named intent, not task: isError %v, %v", isErr, old)
			}
			badRun, isErr := call(t, ctx, cs, "delegate", `{"intent": "write alpha", "runId": "a b"}`)
			if isErr || badRun["error"] != delegation.CodeInvalidArguments || badRun["path"] != "/runId" {
				t.Errorf("a runId with a space: isError %v, %v", isErr, badRun)
			}

			status, isErr := call(t, ctx, cs, "delegation_status", `{"taskId": "`+id+`"}`)
			if isErr || status["taskId"] != id || status["state"] != "completed" {
				t.Errorf("status: %v", status)
			}
			unknown, isErr := call(t, ctx, cs, "delegation_status", `{"taskId": "dlg_nobody"}`)
			if isErr || unknown["error"] != delegation.CodeUnknownDelegation {
				t.Errorf("unknown: %v", unknown)
			}

			rated, isErr := call(t, ctx, cs, "delegate_feedback", `{"taskId": "`+id+`", "rating": {"score": 0.9, "label": "good", "notes": "as asked"}, "by": "user"}`)
			if isErr || rated["recorded"] != true || rated["ratings"] != float64(1) {
				t.Errorf("feedback: %v", rated)
			}
			hist, isErr := call(t, ctx, cs, "delegation_history", `{"limit": 5}`)
			items, _ := hist["delegations"].([]any)
			if isErr || hist["count"] != float64(1) || len(items) != 1 {
				t.Fatalf("history: %v", hist)
			}
			fb := items[0].(map[string]any)["feedback"].([]any)
			if len(fb) != 1 || fb[0].(map[string]any)["by"] != "user" {
				t.Errorf("history feedback: %v", fb)
			}
			later, _ := call(t, ctx, cs, "delegation_history", `{"since": "`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`)
			if later["count"] != float64(0) {
				t.Errorf("history since a later time: %v", later)
			}

			cancelled, isErr := call(t, ctx, cs, "delegation_cancel", `{"taskId": "`+id+`"}`)
			if isErr || cancelled["effect"] != string(kernel.EffectNotLive) || cancelled["state"] != "completed" {
				t.Errorf("cancel of an ended delegation: %v", cancelled)
			}
		})
	}
}

var cmpSorted = cmp.Transformer("sort", func(in []string) []string {
	out := slices.Clone(in)
	sort.Strings(out)
	return out
})
