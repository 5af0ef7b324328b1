package coordmcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/providers/scripted"
	storememory "github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// Two harness clients at once, each through its own relay process, on
// one live run: A spawns a worker that takes 3 s and waits for it in
// await_event; meanwhile B observes the worker running and then waits
// too (1 s bound). The settlement is A's alone: B's wait ends pending,
// A's with the event; the run ends with the worker's winner and no
// endpoint left. (stop does not end a wait already in flight: it ends
// the manager's turn, and the harness's process with it.)
func TestTwoRelaysShareOneRun(t *testing.T) {
	agentrtBinary(t) // build before the run's clock starts
	ctx := deadline(t)
	runDir := t.TempDir()
	var script scripted.Script
	if err := json.Unmarshal([]byte(`{"turns": [{"match": "slow", "repeat": true, "steps": [{"text": "working"}, {"delayMs": 3000}, {"text": "slow: DONE"}]}]}`), &script); err != nil {
		t.Fatal(err)
	}
	type awaited struct {
		res     *mcp.CallToolResult
		err     error
		elapsed time.Duration
	}
	var (
		got              awaited
		observed, stoppd map[string]any
	)
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		defer srv.Close()
		hctx := deadline(t) // the harness's calls are not the brain's
		a, b := relaySession(t, hctx, runDir), relaySession(t, hctx, runDir)
		spawned, err := callVerb(hctx, a, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write slow"})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		done := make(chan awaited, 1)
		go func() {
			start := time.Now()
			res, err := a.CallTool(hctx, &mcp.CallToolParams{Name: supervise.ToolPrefix + supervise.VerbAwaitEvent, Arguments: map[string]any{"timeoutMs": 120000}})
			done <- awaited{res, err, time.Since(start)}
		}()
		time.Sleep(500 * time.Millisecond) // A is waiting
		if observed, err = callVerb(hctx, b, supervise.VerbObserveAgent, map[string]any{"workerId": spawned["workerId"]}); err != nil {
			return supervise.BrainReport{}, err
		}
		if stoppd, err = callVerb(hctx, b, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 1000}); err != nil {
			return supervise.BrainReport{}, err
		}
		select {
		case got = <-done:
		case <-time.After(90 * time.Second):
			t.Error("A's await_event did not end within 90 s")
		}
		return supervise.BrainReport{}, nil
	})
	o := runOptions(t, runDir, brain)
	o.Executor = &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: storememory.New(nil)}
	res, err := supervise.Supervise(ctx, cliBase(t), "write slow", o)
	if err != nil {
		t.Fatal(err)
	}
	if observed["status"] != "running" || stoppd["pending"] != true {
		t.Errorf("B: observe_agent %v, await_event %v; want the worker running, then pending", observed, stoppd)
	}
	if got.err != nil || got.res == nil {
		t.Fatalf("A's await_event: %v, want a tool result", got.err)
	}
	m, _ := got.res.StructuredContent.(map[string]any)
	if ev, _ := m["event"].(map[string]any); got.res.IsError || ev["workerId"] != "run1:s1" || ev["delivered"] != true {
		t.Errorf("A's await_event: %v, want the settlement", m)
	}
	if res.Status != supervise.StatusWinner {
		t.Errorf("status %s, want winner", res.Status)
	}
	if _, err := coordmcp.ReadEndpoint(runDir); err == nil {
		t.Error("the endpoint outlived the run")
	}
}
