package coordmcp_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/supervise"
)

// cutAwait wraps the await_event tool among ts so that the first call
// whose Await took an event closes took and then holds its result until
// the call's own context ended (the server saw the harness's cancel;
// bounded by steerWait): the cancel lands after the take and before the
// result is returned, every time. seen reports whether that context did
// end.
func cutAwait(ts []contract.Tool) (took <-chan struct{}, seen func() bool) {
	ch := make(chan struct{})
	var (
		once  sync.Once
		mu    sync.Mutex
		ended bool
	)
	for i, tl := range ts {
		if tl.Name != supervise.ToolPrefix+supervise.VerbAwaitEvent {
			continue
		}
		run := tl.Run
		ts[i].Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
			v, err := run(ctx, args)
			if _, ok := v.Get("event"); err != nil || !ok {
				return v, err
			}
			first := false
			once.Do(func() { first = true; close(ch) })
			if first {
				t := time.NewTimer(steerWait)
				defer t.Stop()
				select {
				case <-ctx.Done():
					mu.Lock()
					ended = true
					mu.Unlock()
				case <-t.C:
				}
			}
			return v, err
		}
	}
	return ch, func() bool { mu.Lock(); defer mu.Unlock(); return ended }
}

// Issue 13, OS-04, §9 await_event "returns the next settlement not yet
// returned": an external harness's await_event that is cancelled after
// the run's Await took a worker's settlement, but before the result
// reached the harness (through the real stdio relay process and the
// streamable HTTP endpoint), does not lose that settlement — the
// harness's next await_event returns it. That call is made at once and
// may reach the server before the cancel does (it travels harness →
// relay → server on its own): it waits for the held event rather than
// answering idle. Before the fix the event was gone and the second call
// answered idle; without the hold it answered idle whenever it overtook
// the cancel.
func TestAwaitCutOverMCPPutsEventBack(t *testing.T) {
	agentrtBinary(t) // build before the run's clock starts
	ctx := deadline(t)
	runDir := t.TempDir()
	var (
		firstErr        error
		serverSawCancel bool
		spawned, second map[string]any
		secondErr       bool
	)
	brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		all, err := c.Tools()
		if err != nil {
			return supervise.BrainReport{}, err
		}
		took, seen := cutAwait(all)
		srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{Tools: all})
		if err != nil {
			return supervise.BrainReport{}, err
		}
		defer srv.Close()
		cs := relaySession(t, ctx, runDir)
		spawned, _ = call(t, ctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write alpha"})
		callCtx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-took:
				cancel() // the harness cancels the tool call
			case <-callCtx.Done():
			}
		}()
		_, firstErr = cs.CallTool(callCtx, &mcp.CallToolParams{Name: supervise.ToolPrefix + supervise.VerbAwaitEvent,
			Arguments: map[string]any{"timeoutMs": 60000}})
		cancel()
		second, secondErr = call(t, ctx, cs, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000})
		serverSawCancel = seen()
		call(t, ctx, cs, supervise.VerbSubmitResult, map[string]any{"result": "alpha: DONE"})
		return supervise.BrainReport{Text: "submitted"}, nil
	})
	if _, err := supervise.Supervise(ctx, cliBase(t), "write alpha", runOptions(t, runDir, brain)); err != nil {
		t.Fatal(err)
	}
	if spawned["workerId"] != "run1:s1" {
		t.Fatalf("spawn_worker: %v", spawned)
	}
	if !errors.Is(firstErr, context.Canceled) {
		t.Fatalf("the cancelled await_event: %v, want context.Canceled", firstErr)
	}
	if !serverSawCancel {
		t.Error("the harness's cancel never reached the served await_event's context")
	}
	ev, _ := second["event"].(map[string]any)
	if secondErr || ev["workerId"] != "run1:s1" || ev["kind"] != supervise.EventSettled {
		t.Errorf("the await_event after the cut: isError %v %v, want the settlement of run1:s1 it took", secondErr, second)
	}
}
