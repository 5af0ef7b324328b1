package kernel_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
)

// toolRecorder is a recorder that also watches a tool loop's calls.
type toolRecorder struct{ recorder }

func (r *toolRecorder) ToolStarted(ctx context.Context, c kernel.ToolCallStart) (context.Context, error) {
	return context.WithValue(ctx, hookKey{}, "tool"), r.note("tool started %s %s run-ctx=%v", c.Call.ID, c.Call.Name, ctx.Value(hookKey{}))
}

func (r *toolRecorder) ToolEnded(ctx context.Context, c kernel.ToolCallEnd) error {
	return r.note("tool ended %s ok=%v code=%s", c.Call.ID, c.Outcome.OK, c.Outcome.Code)
}

func echoLoop(obs kernel.Observer, seen *any) kernel.ToolLoopOptions {
	echo := contract.Tool{Name: "echo", Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		*seen = ctx.Value(hookKey{})
		return args, nil
	}}
	model := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		{Events: []contract.ChatEvent{scripted.Call("call_1", "echo", `{"x":1}`), scripted.Usage(40, 8, contract.UsageDelta)}},
		{Events: []contract.ChatEvent{scripted.Text("done"), scripted.Usage(61, 7, contract.UsageDelta)}},
	}})
	return kernel.ToolLoopOptions{Model: model, User: "echo", Tools: []contract.Tool{echo}, RunID: "loop-1", Observer: obs}
}

// A tool loop's Observer sees the run, each model turn and, as a
// ToolObserver, each call it runs, under the run's context; the tool
// runs under the context ToolStarted returned.
func TestToolLoopObserver(t *testing.T) {
	r := &toolRecorder{}
	var seen any
	res, err := kernel.RunToolLoop(t.Context(), echoLoop(r, &seen))
	if err != nil || res.StopReason != kernel.StopCompleted {
		t.Fatal(res, err)
	}
	want := []string{
		"run started loop-1 kind=tool-loop stage=0",
		"turn started loop-1 model= provider= run-ctx=run",
		"turn ended loop-1 terminal=completed served=",
		"tool started call_1 echo run-ctx=run",
		"tool ended call_1 ok=true code=",
		"turn started loop-1 model= provider= run-ctx=run",
		"turn ended loop-1 terminal=completed served=",
		"run ended loop-1 completed delivered=false",
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("hooks (-want +got):\n%s", diff)
	}
	if seen != "tool" {
		t.Errorf("the tool ran under %v, not ToolStarted's context", seen)
	}
}

// A panicking observer, or a plain Observer that is no ToolObserver,
// never changes the loop.
func TestToolLoopObserverContained(t *testing.T) {
	var seen any
	want, err := kernel.RunToolLoop(t.Context(), echoLoop(nil, &seen))
	if err != nil {
		t.Fatal(err)
	}
	for _, obs := range []kernel.Observer{&toolRecorder{recorder{panic: true}}, &recorder{}} {
		got, err := kernel.RunToolLoop(t.Context(), echoLoop(obs, &seen))
		if err != nil || got.FinalText != want.FinalText || got.Turns != want.Turns || len(got.ToolResults) != 1 || !got.ToolResults[0].Outcome.OK {
			t.Errorf("observer %T: %+v %v", obs, got, err)
		}
	}
}
