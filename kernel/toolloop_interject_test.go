package kernel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
)

// lastUser expects the transcript a turn is given to end on a user
// message whose text is want.
func lastUser(want string) func([]contract.ChatMessage, []contract.Tool) error {
	return func(msgs []contract.ChatMessage, _ []contract.Tool) error {
		last := msgs[len(msgs)-1]
		if last.Role != contract.ChatUser || last.Content == nil || *last.Content != want {
			return fmt.Errorf("the turn's last message is %s %v, want the user message %q", last.Role, last.Content, want)
		}
		return nil
	}
}

// interjections is an Interject that hands out queued batches, one per
// call, and records how it was called.
type interjections struct {
	batches [][]string
	calls   []bool // the answered argument of each call
}

func (q *interjections) take(_ context.Context, answered bool) []string {
	q.calls = append(q.calls, answered)
	if len(q.batches) == 0 {
		return nil
	}
	b := q.batches[0]
	q.batches = q.batches[1:]
	return b
}

// §3.6 "Router roots read steers between turns" (behaviour 48): the
// messages Interject returns reach the next model call as one user
// message; it is asked before every turn but the first, and once more
// when a turn answers, whose messages make the loop go on.
func TestToolLoopInterjectBetweenTurns(t *testing.T) {
	tests := []struct {
		name      string
		turns     []scripted.ChatTurn
		batches   [][]string
		wantCalls []bool
		wantTurns int
		wantText  string
	}{
		{
			name: "a steer after a tool turn",
			turns: []scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{}`)),
				{Events: []contract.ChatEvent{scripted.Text("steered")}, Expect: lastUser("focus on tests")},
			},
			batches:   [][]string{{"focus on tests"}},
			wantCalls: []bool{false, true},
			wantTurns: 2, wantText: "steered",
		},
		{
			name: "two steers join in one message",
			turns: []scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{}`)),
				{Events: []contract.ChatEvent{scripted.Text("both")}, Expect: lastUser("one\n\ntwo")},
			},
			batches:   [][]string{{"one", "", "two"}},
			wantCalls: []bool{false, true},
			wantTurns: 2, wantText: "both",
		},
		{
			name: "a steer that arrived while the model answered",
			turns: []scripted.ChatTurn{
				answer("first answer"),
				{Events: []contract.ChatEvent{scripted.Text(" second answer")}, Expect: lastUser("one more thing")},
			},
			batches:   [][]string{{"one more thing"}},
			wantCalls: []bool{true, false, true},
			wantTurns: 2, wantText: "first answer second answer",
		},
		{
			name:      "nothing to interject",
			turns:     []scripted.ChatTurn{turn(scripted.Call("c1", "echo", `{}`)), answer("done")},
			wantCalls: []bool{false, true},
			wantTurns: 2, wantText: "done",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := &interjections{batches: tc.batches}
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(tc.turns...), User: "task",
				Tools: []contract.Tool{echoTool("echo", nil)}, Interject: q.take, Store: memory.New(nil)})
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != kernel.StopCompleted || res.Turns != tc.wantTurns || res.FinalText != tc.wantText {
				t.Errorf("stop %s after %d turns with %q, want completed after %d with %q", res.StopReason, res.Turns, res.FinalText, tc.wantTurns, tc.wantText)
			}
			if diff := cmp.Diff(tc.wantCalls, q.calls); diff != "" {
				t.Errorf("Interject calls (answered) (-want +got):\n%s", diff)
			}
		})
	}
}

// A turn the budget refuses takes no messages: Interject is not asked,
// so nothing is acknowledged for a model call that never happens.
func TestToolLoopInterjectNotAskedWithoutRoom(t *testing.T) {
	tokens, iterations := int64(100), int64(1)
	pool, err := ledger.NewPool(ledger.Budget{Tokens: &tokens, Iterations: &iterations}, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model(turn(scripted.Call("c1", "echo", `{}`), scripted.Usage(5, 5, contract.UsageDelta))),
		Tools: []contract.Tool{echoTool("echo", nil)}, Budget: pool, Reserve: ledger.Budget{Tokens: &tokens, Iterations: &iterations},
		Interject: func(context.Context, bool) []string { asked.Add(1); return []string{"unseen"} },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != kernel.StopBudget || res.Turns != 1 {
		t.Errorf("stop %s after %d turns, want budget after 1", res.StopReason, res.Turns)
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("Interject asked %d times for a turn the budget refused, want 0", n)
	}
}

// BenchmarkToolLoopInterject is BenchmarkToolLoopStep's unrecorded loop
// with an Interject: "empty" never has a message (the cost of asking),
// "each" adds one steer before every turn (the transcript grows by a
// user message per step).
func BenchmarkToolLoopInterject(b *testing.B) {
	const steps = 100
	for _, each := range []bool{false, true} {
		name := "empty"
		if each {
			name = "each"
		}
		b.Run(name, func(b *testing.B) {
			m := scripted.NewChatModel(benchScript(steps))
			steer := []string{"keep going"}
			perStep(b, steps, func() {
				res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
					Model: m, System: "You count.", User: "Count.", Tools: []contract.Tool{inc},
					Interject: func(_ context.Context, answered bool) []string {
						if each && !answered {
							return steer
						}
						return nil
					},
				})
				check(b, res, err, steps)
			})
		})
	}
}
