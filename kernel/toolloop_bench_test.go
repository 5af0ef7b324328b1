package kernel_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
)

// benchScript is steps tool-calling turns — each one call of the trivial
// tool with its own small arguments (so the stuck-loop check compares and
// never fires) and a delta usage report — then an answer.
func benchScript(steps int) scripted.ChatScript {
	s := scripted.ChatScript{Cycle: true}
	for i := range steps {
		s.Turns = append(s.Turns, turn(scripted.Call(fmt.Sprintf("call_%d", i), "inc", fmt.Sprintf(`{"n":%d}`, i)), scripted.Usage(120, 12, contract.UsageDelta)))
	}
	s.Turns = append(s.Turns, turn(scripted.Text("done"), scripted.Usage(140, 3, contract.UsageDelta)))
	return s
}

// inc is the trivial tool: it answers with its arguments.
var inc = contract.Tool{Name: "inc", Description: "Returns its arguments.",
	Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) { return args, nil }}

// BenchmarkToolLoopStep measures one step — a model turn that calls a
// tool, the call, and the transcript growing by the assistant and tool
// messages — with a zero-latency scripted model, so what is measured is
// the loop itself. ns/step, allocs/step and B/step are per step; the
// per-loop costs (setup, the answer turn, and when recording the run
// record, its lease and ledger entry) are spread over the loop's steps.
// "baseline" is a bare hand-written loop over the same model and tool,
// without stop rules, usage, results or recording: the floor.
func BenchmarkToolLoopStep(b *testing.B) {
	for _, steps := range []int{10, 100} {
		b.Run(fmt.Sprintf("steps=%d/record=memory", steps), func(b *testing.B) {
			m := scripted.NewChatModel(benchScript(steps))
			perStep(b, steps, func() {
				// A fresh store per loop: the cost measured is recording
				// one run, not the garbage collector scanning every run
				// recorded before it (an in-memory store keeps them all).
				st := memory.New(nil)
				res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
					Model: m, System: "You count.", User: "Count.", Tools: []contract.Tool{inc}, Store: st,
				})
				check(b, res, err, steps)
			})
		})
		b.Run(fmt.Sprintf("steps=%d/record=none", steps), func(b *testing.B) {
			m := scripted.NewChatModel(benchScript(steps))
			perStep(b, steps, func() {
				res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
					Model: m, System: "You count.", User: "Count.", Tools: []contract.Tool{inc},
				})
				check(b, res, err, steps)
			})
		})
		b.Run(fmt.Sprintf("steps=%d/checkpoint", steps), func(b *testing.B) {
			// A Checkpoint that keeps nothing: the cost of handing the
			// transcript out at each consistent point.
			m := scripted.NewChatModel(benchScript(steps))
			keep := func(context.Context, []contract.ChatMessage) error { return nil }
			perStep(b, steps, func() {
				res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
					Model: m, System: "You count.", User: "Count.", Tools: []contract.Tool{inc}, Checkpoint: keep,
				})
				check(b, res, err, steps)
			})
		})
		b.Run(fmt.Sprintf("steps=%d/baseline", steps), func(b *testing.B) {
			m := scripted.NewChatModel(benchScript(steps))
			perStep(b, steps, func() {
				if n := bareLoop(context.Background(), m, "You count.", "Count.", []contract.Tool{inc}); n != steps {
					b.Fatalf("%d steps, want %d", n, steps)
				}
			})
		})
	}
}

func check(b *testing.B, res *kernel.ToolLoopResult, err error, steps int) {
	if err != nil || res.StopReason != kernel.StopCompleted || len(res.ToolResults) != steps {
		b.Fatalf("stop %v after %d results, err %v", res.StopReason, len(res.ToolResults), err)
	}
}

// perStep runs loop under b.Loop and reports time and allocations per
// step.
func perStep(b *testing.B, steps int, loop func()) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	loops := 0
	for b.Loop() {
		loop()
		loops++
	}
	runtime.ReadMemStats(&after)
	n := float64(loops * steps)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/step")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/step")
}

// bareLoop is the tool loop as one would write it by hand for one known
// model and tool set: run turns, run each call, append the assistant and
// tool messages, until a turn makes no call. It returns the steps taken.
func bareLoop(ctx context.Context, m contract.ChatModel, system, user string, tools []contract.Tool) int {
	msgs := []contract.ChatMessage{{Role: contract.ChatSystem, Content: &system}, {Role: contract.ChatUser, Content: &user}}
	var final strings.Builder
	for steps := 0; ; steps++ {
		var calls []contract.ToolCall
		for e, err := range m.Turn(ctx, msgs, tools) {
			if err != nil {
				return -1
			}
			switch e.Kind {
			case contract.ChatText:
				final.WriteString(e.Text)
			case contract.ChatToolCall:
				calls = append(calls, e.ToolCall)
			}
		}
		if len(calls) == 0 {
			return steps
		}
		msgs = append(msgs, contract.ChatMessage{Role: contract.ChatAssistant, ToolCalls: calls})
		for _, c := range calls {
			var content string
			for _, t := range tools {
				if t.Name == c.Name {
					out, err := t.Run(ctx, c.Args)
					if err != nil {
						content = "- " + c.Name + " → failed: " + err.Error()
					} else {
						content = "- " + c.Name + " → ok: " + string(canonjson.Marshal(out))
					}
				}
			}
			msgs = append(msgs, contract.ChatMessage{Role: contract.ChatTool, Content: &content, ToolCallID: c.ID})
		}
	}
}
