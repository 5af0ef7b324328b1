package kernel_test

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
	"github.com/agentrt/agentrt/store/sqlite"
)

// requestRecorder is a chat model that keeps a copy of every request's
// messages before its inner model plays the turn.
type requestRecorder struct {
	inner    contract.ChatModel
	mu       sync.Mutex
	requests [][]contract.ChatMessage
}

func (m *requestRecorder) Turn(ctx context.Context, msgs []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	m.mu.Lock()
	m.requests = append(m.requests, slices.Clone(msgs))
	m.mu.Unlock()
	return m.inner.Turn(ctx, msgs, tools)
}

// batches is a Checkpoint that keeps every batch it is given and fails
// the batch numbered failAt (1-based; 0 never).
type batches struct {
	failAt int
	got    [][]contract.ChatMessage
	calls  int
}

var errRecordGone = errors.New("the record is gone")

func (b *batches) checkpoint(_ context.Context, appended []contract.ChatMessage) error {
	b.calls++
	if b.calls == b.failAt {
		return errRecordGone
	}
	b.got = append(b.got, slices.Clone(appended))
	return nil
}

func (b *batches) transcript() []contract.ChatMessage { return slices.Concat(b.got...) }

func roles(batches [][]contract.ChatMessage) [][]string {
	var out [][]string
	for _, b := range batches {
		var rs []string
		for _, m := range b {
			s := string(m.Role)
			if m.Role == contract.ChatTool {
				s += ":" + m.ToolCallID
			}
			rs = append(rs, s)
		}
		out = append(out, rs)
	}
	return out
}

// Checkpoint is given the transcript in consistent pieces, before the
// loop goes on: the assistant message with its calls before either
// runs, each tool message once its call was handled, the answer at the
// end; the pieces, concatenated, are the transcript after the user
// message.
func TestToolLoopCheckpointsEachConsistentPoint(t *testing.T) {
	var b batches
	var runs atomic.Int64
	order := []string{}
	tool := echoTool("echo", &runs)
	run := tool.Run
	tool.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		order = append(order, "run after "+string(rune('0'+len(b.got))))
		return run(ctx, args)
	}
	m := model(
		turn(scripted.Call("a", "echo", `{"x":1}`), scripted.Call("b", "echo", `{"x":2}`)),
		answer("done"),
	)
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "go", Tools: []contract.Tool{tool}, Checkpoint: b.checkpoint})
	if err != nil || res.StopReason != kernel.StopCompleted {
		t.Fatalf("%v %+v", err, res)
	}
	want := [][]string{{"assistant"}, {"tool:a"}, {"tool:b"}, {"assistant"}}
	if diff := cmp.Diff(want, roles(b.got)); diff != "" {
		t.Errorf("checkpoint batches (-want +got):\n%s", diff)
	}
	// Each call ran only once what came before it was recorded.
	if diff := cmp.Diff([]string{"run after 1", "run after 2"}, order); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(res.Messages[2:], b.transcript(), valueEqual); diff != "" {
		t.Errorf("recorded transcript (-result +recorded):\n%s", diff)
	}
}

// A Checkpoint that fails stops the loop before anything it could not
// record goes on: with the assistant message unrecorded, no call runs;
// the error is a *RunError whose cause is a *CheckpointError wrapping
// what Checkpoint returned.
func TestToolLoopStopsWhenCheckpointFails(t *testing.T) {
	var runs atomic.Int64
	b := batches{failAt: 1}
	m := model(turn(scripted.Call("a", "echo", `{"x":1}`)), answer("never asked"))
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "go", Tools: []contract.Tool{echoTool("echo", &runs)}, Checkpoint: b.checkpoint})
	var ce *kernel.CheckpointError
	var re *kernel.RunError
	if !errors.As(err, &ce) || !errors.Is(err, errRecordGone) || !errors.As(err, &re) || re.Reason != kernel.ReasonCheckpointFailed {
		t.Fatalf("error %v, want a *RunError (checkpoint-failed) with a *CheckpointError cause", err)
	}
	if res.StopReason != kernel.StopFailed || runs.Load() != 0 || m.Calls() != 1 || len(res.Pending) != 1 {
		t.Errorf("stop %s, %d runs, %d model turns, pending %v; want failed, no run, one turn, the call pending", res.StopReason, runs.Load(), m.Calls(), res.Pending)
	}
	if b.calls != 1 {
		t.Errorf("Checkpoint called %d times after it failed, want once", b.calls)
	}
}

// A loop cut after its first call's result was recorded is resumed from
// its record (Recorded): the model's first request is the recorded
// transcript after System and User (the user message once), the call
// with no recorded result runs again with its recorded id and
// arguments, the recorded one does not, and the loop goes on from
// there.
func TestToolLoopResumesRecordedTranscript(t *testing.T) {
	var runsA, runsB atomic.Int64
	tools := []contract.Tool{echoTool("a", &runsA), echoTool("b", &runsB)}
	first := &batches{failAt: 3} // the second call's result is not recorded
	m1 := &requestRecorder{inner: model(turn(scripted.Call("c1", "a", `{"n":1}`), scripted.Call("c2", "b", `{"n":2}`)), answer("never"))}
	_, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m1, System: "sys", User: "task", Tools: tools, Checkpoint: first.checkpoint})
	if !errors.Is(err, errRecordGone) {
		t.Fatalf("first attempt: %v, want the checkpoint failure", err)
	}
	if runsA.Load() != 1 || runsB.Load() != 1 {
		t.Fatalf("first attempt ran a %d, b %d times", runsA.Load(), runsB.Load())
	}
	recorded := first.transcript()

	second := &batches{}
	m2 := &requestRecorder{inner: model(answer("all done"))}
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m2, System: "sys", User: "task", Tools: tools,
		Checkpoint: second.checkpoint, Recorded: recorded})
	if err != nil || res.StopReason != kernel.StopCompleted {
		t.Fatalf("resumed: %v %+v", err, res)
	}
	if runsA.Load() != 1 || runsB.Load() != 2 {
		t.Errorf("after the resume a ran %d, b %d times; want 1 and 2 (only the unrecorded call again)", runsA.Load(), runsB.Load())
	}
	if len(m2.requests) != 1 {
		t.Fatalf("%d model turns, want 1", len(m2.requests))
	}
	want := slices.Concat(m1.requests[0][:2], recorded, second.got[0])
	if diff := cmp.Diff(want, m2.requests[0], valueEqual); diff != "" {
		t.Errorf("the resumed model's first request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{{"tool:c2"}, {"assistant"}}, roles(second.got)); diff != "" {
		t.Errorf("the resumed loop's batches (-want +got):\n%s", diff)
	}
	if r := res.ToolResults; len(r) != 1 || r[0].Call.ID != "c2" || string(canonjson.Marshal(r[0].Call.Args)) != `{"n":2}` {
		t.Errorf("resumed results %+v, want c2 with its recorded arguments", r)
	}
	if res.Turns != 1 {
		t.Errorf("Turns = %d, want 1 (the recorded turn is not asked again)", res.Turns)
	}
}

// A record that ends on the loop's answer completes without a model
// turn; its answer is the final text.
func TestToolLoopRecordedAnswerCompletes(t *testing.T) {
	done := "done"
	m := model()
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "task", Tools: []contract.Tool{echoTool("a", nil)},
		Recorded: []contract.ChatMessage{{Role: contract.ChatAssistant, Content: &done}}})
	if err != nil || res.StopReason != kernel.StopCompleted || res.FinalText != "done" || m.Calls() != 0 {
		t.Errorf("%v, stop %s, text %q, %d model turns; want completed with the recorded answer and no turn", err, res.StopReason, res.FinalText, m.Calls())
	}
}

// Recorded tool turns count towards MaxToolTurns: a resumed loop does
// not get a fresh backstop.
func TestToolLoopRecordedTurnsCountTowardsBackstop(t *testing.T) {
	var runs atomic.Int64
	out := "- a → ok: {}"
	rec := []contract.ChatMessage{
		{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{ID: "c1", Name: "a", Args: mustJSON(`{"n":1}`)}}},
		{Role: contract.ChatTool, ToolCallID: "c1", Content: &out},
	}
	m := model(turn(scripted.Call("c2", "a", `{"n":2}`)))
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "task", Tools: []contract.Tool{echoTool("a", &runs)},
		MaxToolTurns: 1, Recorded: rec})
	if err != nil || res.StopReason != kernel.StopBackstop || runs.Load() != 0 {
		t.Errorf("%v, stop %s, %d runs; want the backstop with no run", err, res.StopReason, runs.Load())
	}
}

// With Checkpoint, a call the caller's context cut short is not a
// result: it stays pending and is not recorded, so a resumed loop runs
// it again.
func TestToolLoopCutCallIsNotRecorded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	hang := contract.Tool{Name: "hang", Run: func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
		close(started)
		<-ctx.Done()
		return canonjson.Value{}, ctx.Err()
	}}
	go func() {
		select {
		case <-started:
			cancel()
		case <-time.After(time.Minute):
		}
	}()
	var b batches
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: model(turn(scripted.Call("c1", "hang", `{}`))), User: "task",
		Tools: []contract.Tool{hang}, Checkpoint: b.checkpoint})
	if !errors.Is(err, context.Canceled) || res.StopReason != kernel.StopCancelled {
		t.Fatalf("%v, stop %s; want cancelled", err, res.StopReason)
	}
	if diff := cmp.Diff([][]string{{"assistant"}}, roles(b.got)); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	if len(res.Pending) != 1 || len(res.ToolResults) != 0 {
		t.Errorf("pending %v, results %v; want the cut call pending", res.Pending, res.ToolResults)
	}
}

// A Recorded transcript the loop could not have written is refused
// before anything runs.
func TestToolLoopRefusesInvalidRecorded(t *testing.T) {
	s := "x"
	call := contract.ToolCall{ID: "c1", Name: "a", Args: mustJSON(`{}`)}
	for name, rec := range map[string][]contract.ChatMessage{
		"system":        {{Role: contract.ChatSystem, Content: &s}},
		"stray result":  {{Role: contract.ChatTool, ToolCallID: "c9", Content: &s}},
		"user mid-turn": {{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{call}}, {Role: contract.ChatUser, Content: &s}},
		"unknown tool":  {{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{ID: "c1", Name: "gone", Args: mustJSON(`{}`)}}}},
	} {
		m := model(answer("never"))
		_, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "task", Tools: []contract.Tool{echoTool("a", nil)}, Recorded: rec})
		if !errors.Is(err, kernel.ErrInvalidOptions) || m.Calls() != 0 {
			t.Errorf("%s: %v after %d turns, want ErrInvalidOptions before any", name, err, m.Calls())
		}
	}
}

func mustJSON(s string) canonjson.Value {
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		panic(err)
	}
	return v
}

// A resumed loop whose deadline already passed runs none of the calls
// its record left without a result: they stay pending.
func TestToolLoopRecordedPendingPastDeadline(t *testing.T) {
	var runs atomic.Int64
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	rec := []contract.ChatMessage{{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{ID: "c1", Name: "a", Args: mustJSON(`{}`)}}}}
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(), User: "task", Tools: []contract.Tool{echoTool("a", &runs)},
		Recorded: rec, Deadline: now, Now: func() time.Time { return now }})
	if err != nil || res.StopReason != kernel.StopDeadline || runs.Load() != 0 || len(res.Pending) != 1 {
		t.Errorf("%v, stop %s, %d runs, pending %v; want the deadline with the call pending", err, res.StopReason, runs.Load(), res.Pending)
	}
}

// A steer Interject adds is recorded before the model turn that sees
// it, in its own piece.
func TestToolLoopCheckpointsInterjectionBeforeTheTurn(t *testing.T) {
	var b batches
	steered := false
	m := model(turn(scripted.Call("c1", "a", `{}`)), answer("done"))
	_, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "task", Tools: []contract.Tool{echoTool("a", nil)},
		Checkpoint: b.checkpoint, Interject: func(context.Context, bool) []string {
			if steered {
				return nil
			}
			steered = true
			return []string{"hurry"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"assistant"}, {"tool:c1"}, {"user"}, {"assistant"}}, roles(b.got)); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}

// Issue 13: a tool sees the id of the call it runs for
// (kernel.ToolCallID), and a call a resumed loop runs again (Recorded)
// has the id it had the first time, so a tool that acts outside the
// loop can key its effect by it. Outside a loop's call there is none.
func TestToolLoopToolSeesItsCallID(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	idTool := contract.Tool{Name: "a", Run: func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
		mu.Lock()
		seen = append(seen, kernel.ToolCallID(ctx))
		mu.Unlock()
		return mustJSON(`{}`), nil
	}}
	first := &batches{failAt: 3} // c2's result is not recorded
	m := model(turn(scripted.Call("c1", "a", `{"n":1}`), scripted.Call("c2", "a", `{"n":2}`)), answer("never"))
	if _, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, User: "task", Tools: []contract.Tool{idTool},
		Checkpoint: first.checkpoint}); !errors.Is(err, errRecordGone) {
		t.Fatalf("first attempt: %v, want the checkpoint failure", err)
	}
	if _, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(answer("done")), User: "task",
		Tools: []contract.Tool{idTool}, Recorded: first.transcript()}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c1", "c2", "c2"}, seen); diff != "" {
		t.Errorf("the call ids the tool saw (-want +got):\n%s", diff)
	}
	if id := kernel.ToolCallID(context.Background()); id != "" {
		t.Errorf("ToolCallID outside a call = %q, want none", id)
	}
}

// A recorded loop (Store) resumed from Recorded records the calls it
// runs again as a step of their turn, like a first run's — their
// outcomes, the recorded turn's text and number, nothing spent, marked
// rerun — so its run's events show every call it ran (issue 13; on
// SQLite and PostgreSQL).
func TestToolLoopRecordsRerunCallsAsAStep(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := postgres.Open(t.Context(), pgtest.Schema(t), postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			looking, out := "Looking.", "- a → ok: {\"n\":1}"
			rec := []contract.ChatMessage{
				{Role: contract.ChatAssistant, Content: &looking, ToolCalls: []contract.ToolCall{
					{ID: "c1", Name: "a", Args: mustJSON(`{"n":1}`)}, {ID: "c2", Name: "a", Args: mustJSON(`{"n":2}`)}}},
				{Role: contract.ChatTool, ToolCallID: "c1", Content: &out},
			}
			var runs atomic.Int64
			res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: model(answer("Done.")), User: "task",
				Tools: []contract.Tool{echoTool("a", &runs)}, Recorded: rec, Store: st, RunID: "loop-resumed"})
			if err != nil || res.StopReason != kernel.StopCompleted || runs.Load() != 1 {
				t.Fatalf("%v, stop %s, %d runs; want completed after running c2 again", err, res.StopReason, runs.Load())
			}
			events, err := st.Events(t.Context(), "loop-resumed", "", 0)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range events {
				if e.Type != kernel.EventToolLoopStep {
					continue
				}
				body, _ := canonjson.Canonical(e.Body)
				got = append(got, e.ID+" "+string(body))
			}
			nothing := `{"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0,"inputTokens":0,"outputTokens":0,"reasoningTokens":0}`
			unknown := `{"cacheReadTokens":null,"cacheWriteTokens":null,"costUsd":null,"inputTokens":null,"outputTokens":null,"reasoningTokens":null}`
			want := []string{
				`t0 {"rerun":true,"text":"Looking.","toolCalls":[{"arguments":{"n":2},"id":"c2","name":"a","outcome":{"ok":true,"result":{"n":2}}}],"turn":0,"usage":` + nothing + `}`,
				`t1 {"text":"Done.","toolCalls":[],"turn":1,"usage":` + unknown + `}`,
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("step events (-want +got):\n%s", diff)
			}
		})
	}
}
