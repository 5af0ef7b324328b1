package coordmcp_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// A harness manager may have two tool calls in flight: await_event
// {timeoutMs: 60000} waiting on a worker that runs for minutes, and
// then stop (or an operator's `agentrt cancel RUN-DIR`). The waiting
// await answers at once that the run is settling ({stopped: true,
// reason, live}), through the real relay process, rather than running
// out its minute: before, it answered {pending: true} only when its
// timeout ran out. Whether the await reaches the run before the stop or
// after it, the answer is the same. A cancel also cancels the worker at
// once, so the await may instead return its cancelled settlement, which
// is queued first.
func TestAwaitInFlightAnswersStopped(t *testing.T) {
	bin := agentrtBinary(t)
	for _, how := range []string{"stop", "agentrt cancel"} {
		t.Run(strings.ReplaceAll(how, " ", "-"), func(t *testing.T) {
			tctx := deadline(t) // the harness's: the run's stop does not end it
			runDir := t.TempDir()
			var script scripted.Script
			if err := json.Unmarshal([]byte(`{"turns": [{"match": "slow", "repeat": true, "steps": [{"text": "working"},
				{"delayMs": 600000}, {"text": "slow: DONE"}]}]}`), &script); err != nil {
				t.Fatal(err)
			}
			var (
				awaited  map[string]any
				awaitErr error
				took     time.Duration
				stopped  map[string]any
			)
			brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				srv, err := coordmcp.Serve(ctx, c, coordmcp.ServeOptions{})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				defer srv.Close()
				cs := relaySession(t, tctx, runDir)
				if got, isErr := call(t, tctx, cs, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "write slow"}); isErr {
					t.Fatalf("spawn_worker: %v", got)
				}
				// The await's own bound: well short of its timeoutMs, so
				// an await that runs it out fails here.
				actx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				done := make(chan struct{})
				go func() {
					defer close(done)
					start := time.Now()
					var res *mcp.CallToolResult
					res, awaitErr = cs.CallTool(actx, &mcp.CallToolParams{Name: supervise.ToolPrefix + supervise.VerbAwaitEvent,
						Arguments: map[string]any{"timeoutMs": 60000}})
					took = time.Since(start)
					if res != nil {
						awaited, _ = res.StructuredContent.(map[string]any)
					}
				}()
				if how == "stop" {
					stopped, _ = call(t, tctx, cs, supervise.VerbStop, map[string]any{"reason": "enough"})
					<-done
					return supervise.BrainReport{Text: "stopped"}, nil
				}
				// agentrt cancel waits for the run to end, which it does
				// once this brain returns.
				var out strings.Builder
				cancelCmd := exec.CommandContext(tctx, bin, "cancel", runDir, "--reason", "operator")
				cancelCmd.Stdout, cancelCmd.Stderr = &out, &out
				if err := cancelCmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if err := cancelCmd.Wait(); err != nil {
						t.Errorf("agentrt cancel: %v\n%s", err, out.String())
					}
				})
				<-done
				return supervise.BrainReport{Text: "stopped"}, nil
			})
			o := runOptions(t, runDir, brain)
			o.Executor = &supervise.KernelExecutor{Provider: scripted.New(&script, scripted.Options{}), Store: memory.New(nil)}
			if _, err := supervise.Supervise(tctx, cliBase(t), "t", o); err != nil && how == "stop" {
				t.Fatal(err)
			}
			if how == "stop" && stopped["stopped"] != true {
				t.Errorf("stop: %v", stopped)
			}
			if awaitErr != nil {
				t.Fatalf("the await_event in flight: %v after %s, want it answered once the run settles", awaitErr, took)
			}
			reason, _ := awaited["reason"].(string)
			ev, _ := awaited["event"].(map[string]any)
			switch {
			case awaited["stopped"] == true && reason != "":
			case how != "stop" && ev["state"] == string(supervise.StateCancelled):
				// The cancel reached the worker first: its settlement
				// was queued before the await looked again.
			default:
				t.Errorf("the await_event in flight answered %v after %s, want {stopped: true, reason}", awaited, took)
			}
		})
	}
}
