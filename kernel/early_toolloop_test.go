package kernel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// A tool loop whose model stream breaks mid-iteration fails the loop and
// never runs work in doubt: a tool call the broken turn announced is not
// run (its turn never finished), a tool an earlier finished turn called
// ran exactly once, and the usage is the finished turns' exact sum plus
// the broken turn's report as a floor (RG-03, USG-02; spec §7: unknown
// stays unknown, a failure is a failure).
func TestToolLoopTurnEndingEarlyMidIteration(t *testing.T) {
	call := func(id string) contract.ChatEvent { return scripted.Call(id, "echo", `{"id":"`+id+`"}`) }
	tests := []struct {
		name          string
		turns         []scripted.ChatTurn
		runs          int64
		input, output string
	}{
		{"breaks after announcing a call", []scripted.ChatTurn{
			{Events: []contract.ChatEvent{scripted.Usage(4, 1, contract.UsageDelta), call("c1")}, Break: true},
		}, 0, "≥ 4", "≥ 1"},
		{"breaks before any event of the second turn", []scripted.ChatTurn{
			turn(call("c1"), scripted.Usage(10, 2, contract.UsageDelta)),
			{Break: true},
		}, 1, "≥ 10", "≥ 2"},
		{"breaks after usage and a call in the second turn", []scripted.ChatTurn{
			turn(call("c1"), scripted.Usage(10, 2, contract.UsageDelta)),
			{Events: []contract.ChatEvent{scripted.Usage(3, 1, contract.UsageDelta), call("c2")}, Break: true},
		}, 1, "≥ 13", "≥ 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			st := memory.New(nil)
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(tc.turns...),
				Tools: []contract.Tool{echoTool("echo", &runs)}, Store: st})
			runErr, ok := errors.AsType[*kernel.RunError](err)
			if !ok || runErr.Status != store.StatusFailed || runErr.Reason != kernel.ReasonTransport {
				t.Fatalf("err = %v; want a failed *RunError (transport)", err)
			}
			if res == nil || res.StopReason != kernel.StopFailed {
				t.Fatalf("result %+v; want stop failed", res)
			}
			if got := runs.Load(); got != tc.runs {
				t.Errorf("the tool ran %d times, want %d", got, tc.runs)
			}
			if got := [2]string{res.Usage.InputTokens.String(), res.Usage.OutputTokens.String()}; got != [2]string{tc.input, tc.output} {
				t.Errorf("usage in/out = %v; want %s/%s", got, tc.input, tc.output)
			}
			if run, err := st.GetRun(context.Background(), res.RunID); err != nil || run.Status != store.StatusFailed {
				t.Errorf("recorded run %s (%v); want failed", run.Status, err)
			}
		})
	}
}
