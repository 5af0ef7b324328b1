package kernel_test

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// earlyProvider is a provider whose every turn yields exactly the events
// (or errors) of its play, then — with hang — blocks until the turn's
// context ends, as a stream that stays open without a terminal or after
// one. It counts what the consumer took and each Destroy. Creation and
// capabilities are the scripted provider's.
type earlyProvider struct {
	contract.Provider
	play     []earlyStep
	hang     bool
	taken    atomic.Int64 // events the consumer accepted
	asked    atomic.Int64 // yields the provider made
	destroys atomic.Int64
}

// earlyStep is one yield of an earlyProvider's turn.
type earlyStep struct {
	ev  contract.EnvironmentEvent
	err error
}

func newEarlyProvider(hang bool, play ...earlyStep) *earlyProvider {
	return &earlyProvider{Provider: scripted.New(scripted.DefaultScript(), scripted.Options{}), play: play, hang: hang}
}

func (p *earlyProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return &earlyEnv{Environment: env, p: p}, nil
}

type earlyEnv struct {
	contract.Environment
	p *earlyProvider
}

func (e *earlyEnv) Stream(ctx context.Context, _ *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		for i, s := range e.p.play {
			if s.err == nil && s.ev.ID == nil {
				id := "ev-" + strconv.Itoa(i+1)
				s.ev.ID = &id
			}
			e.p.asked.Add(1)
			if !yield(s.ev, s.err) {
				return
			}
			e.p.taken.Add(1)
		}
		if e.p.hang {
			<-ctx.Done()
		}
	}
}

func (e *earlyEnv) Destroy(ctx context.Context) error {
	e.p.destroys.Add(1)
	return e.Environment.Destroy(ctx)
}

func deltaStep(text string) earlyStep {
	part := contract.Part{ID: "text-1", SessionID: "s", MessageID: "m1", Type: contract.PartTypeText, Text: &text}
	ev, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: part, Delta: &text})
	if err != nil {
		panic(err)
	}
	return earlyStep{ev: contract.EnvironmentEvent{Type: contract.EventTypeMessagePartUpdated,
		Data: map[string]canonjson.Value{"delta": canonjson.StringValue(text)}, Normalized: &ev}}
}

func usageStep(in, out int64) earlyStep {
	return earlyStep{ev: contract.EnvironmentEvent{Type: "usage", Data: map[string]canonjson.Value{},
		Usage: &contract.TokenUsage{InputTokens: in, OutputTokens: out}, UsageMode: contract.UsageDelta}}
}

func toolCallStep(id, name string) earlyStep {
	part := contract.Part{ID: id, SessionID: "s", MessageID: "m1", Type: contract.PartTypeTool, CallID: &id, Tool: &name,
		State: &contract.ToolState{Status: contract.ToolStatusPending, Input: map[string]canonjson.Value{}}}
	ev, err := contract.NewStreamEvent(&contract.MessagePartUpdatedEvent{Part: part})
	if err != nil {
		panic(err)
	}
	return earlyStep{ev: contract.EnvironmentEvent{Type: contract.EventTypeMessagePartUpdated, Data: map[string]canonjson.Value{}, Normalized: &ev}}
}

func completedStep(text string) earlyStep {
	return earlyStep{ev: contract.CompletedEvent(map[string]canonjson.Value{"text": canonjson.StringValue(text)})}
}

func failedStep(msg string) earlyStep { return earlyStep{ev: contract.FailedEvent(msg, nil)} }

// terminalsIn counts the provider terminal events a run's event log holds.
func terminalsIn(t *testing.T, st store.Store, runID string) int {
	t.Helper()
	events, err := st.Events(context.Background(), runID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		var ev contract.EnvironmentEvent
		if err := canonjson.FromValue(e.Body, &ev); err != nil {
			t.Fatalf("event %s does not decode: %v", e.ID, err)
		}
		if _, ok := contract.EnvironmentEventTerminal(ev); ok || ev.Type == "error" {
			n++
		}
	}
	return n
}

// A turn whose stream ends at any position before its terminal event is a
// failure, never an empty success (ERR-04/05, spec/runtime.md §2.4: "a
// non-completed final with empty text is a failure"); the usage reported
// before the end is kept as a floor and what was never reported stays
// unknown (never 0); the text streamed so far is kept; the environment is
// torn down once; the stream yields exactly one terminal envelope. A
// terminal followed by more events, or by a second terminal, settles on
// the first: the stream is not read past it (so a provider that keeps its
// stream open after the terminal cannot hang the run), and the run's log
// holds exactly that one terminal.
func TestTurnEndingEarlyAtEveryPosition(t *testing.T) {
	tests := []struct {
		name          string
		play          []earlyStep
		hang          bool
		deadline      time.Duration // 0: none
		status        store.Status
		reason        string
		text          string
		input, output string
		terminals     int // provider terminal events in the run's log
		taken         int64
	}{
		{name: "before any event", status: store.StatusFailed, reason: kernel.ReasonNoTerminal,
			input: "unknown", output: "unknown"},
		{name: "after a delta", play: []earlyStep{deltaStep("par")}, status: store.StatusFailed, reason: kernel.ReasonNoTerminal,
			text: "par", input: "unknown", output: "unknown", taken: 1},
		{name: "after usage", play: []earlyStep{deltaStep("par"), usageStep(12, 5)}, status: store.StatusFailed, reason: kernel.ReasonNoTerminal,
			text: "par", input: "≥ 12", output: "≥ 5", taken: 2},
		{name: "after a tool call", play: []earlyStep{deltaStep("let me look"), usageStep(3, 1), toolCallStep("call-1", "grep")},
			status: store.StatusFailed, reason: kernel.ReasonNoTerminal, text: "let me look", input: "≥ 3", output: "≥ 1", taken: 3},
		{name: "transport error after usage", play: []earlyStep{usageStep(7, 2), {err: errors.New("unexpected EOF")}},
			status: store.StatusFailed, reason: kernel.ReasonTransport, input: "≥ 7", output: "≥ 2", taken: 1},
		{name: "open stream past the caller's deadline", play: []earlyStep{deltaStep("par"), usageStep(4, 4)}, hang: true, deadline: 300 * time.Millisecond,
			status: store.StatusTimedOut, reason: kernel.ReasonTimedOut, text: "par", input: "≥ 4", output: "≥ 4", taken: 2},
		{name: "completed then more events", play: []earlyStep{deltaStep("a"), usageStep(2, 1), completedStep("a"), deltaStep("b"), usageStep(100, 100)},
			status: store.StatusCompleted, text: "a", input: "2", output: "1", terminals: 1, taken: 2},
		{name: "completed then failed", play: []earlyStep{deltaStep("a"), completedStep("a"), failedStep("late failure")},
			status: store.StatusCompleted, text: "a", input: "unknown", output: "unknown", terminals: 1, taken: 1},
		{name: "failed then completed", play: []earlyStep{deltaStep("a"), usageStep(9, 9), failedStep("overloaded"), completedStep("a")},
			status: store.StatusFailed, reason: kernel.ReasonInBandError, text: "a", input: "≥ 9", output: "≥ 9", terminals: 1, taken: 2},
		{name: "completed then the stream stays open", play: []earlyStep{deltaStep("a"), completedStep("a")}, hang: true,
			status: store.StatusCompleted, text: "a", input: "unknown", output: "unknown", terminals: 1, taken: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a guard, not the test's deadline
			defer cancel()
			runCtx := ctx
			if tc.deadline > 0 {
				var stop context.CancelFunc
				runCtx, stop = context.WithTimeout(ctx, tc.deadline)
				defer stop()
			}
			p := newEarlyProvider(tc.hang, tc.play...)
			st := memory.New(nil)
			sr := kernel.StreamRun(runCtx, kernel.Request{Profile: mustProfile(t, noteWriter), Task: "Write a release note.",
				Provider: p, Store: st, Check: nonEmpty})
			ends := 0
			for env, err := range sr.Events() {
				if err != nil {
					t.Fatalf("stream error: %v", err)
				}
				if _, ok := contract.EventTerminal(env.Event); ok {
					ends++
				}
			}
			if ends != 1 {
				t.Errorf("%d terminal envelopes, want exactly 1", ends)
			}
			res, err := sr.Result()
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			if res.Status != tc.status || res.Reason != tc.reason {
				t.Errorf("status %s reason %q (%s), want %s %q", res.Status, res.Reason, res.Detail, tc.status, tc.reason)
			}
			if (err == nil) != (tc.status == store.StatusCompleted) {
				t.Errorf("err = %v for status %s", err, res.Status)
			}
			if tc.status != store.StatusCompleted && res.Delivered {
				t.Error("a turn that did not complete was delivered")
			}
			if res.Text != tc.text {
				t.Errorf("text %q, want %q", res.Text, tc.text)
			}
			if got := res.Usage.InputTokens.String(); got != tc.input {
				t.Errorf("input tokens %s, want %s", got, tc.input)
			}
			if got := res.Usage.OutputTokens.String(); got != tc.output {
				t.Errorf("output tokens %s, want %s", got, tc.output)
			}
			if got := p.taken.Load(); got != tc.taken {
				t.Errorf("the consumer took %d events, want %d (it must stop reading at the first terminal)", got, tc.taken)
			}
			if got := p.destroys.Load(); got != 1 {
				t.Errorf("environment destroyed %d times, want 1", got)
			}
			if got := terminalsIn(t, st, res.RunID); got != tc.terminals {
				t.Errorf("the run's log holds %d terminal events, want %d", got, tc.terminals)
			}
			run, err := st.GetRun(ctx, res.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != tc.status {
				t.Errorf("recorded status %s, want %s", run.Status, tc.status)
			}
			usage, _ := run.Doc.Get("usage")
			if in, _ := usage.Get("inputTokens"); tc.input == "unknown" && in.Kind() != canonjson.Null {
				t.Errorf("unknown input tokens recorded as %s", canonjson.Marshal(in))
			}
		})
	}
}
