package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// valueEqual lets go-cmp compare canonjson values (whose fields are
// unexported) as JSON.
var valueEqual = cmp.Comparer(func(a, b canonjson.Value) bool { return canonjson.Equal(a, b) })

func turn(events ...contract.ChatEvent) scripted.ChatTurn { return scripted.ChatTurn{Events: events} }

func answer(text string) scripted.ChatTurn { return turn(scripted.Text(text)) }

func model(turns ...scripted.ChatTurn) *scripted.ChatModel {
	return scripted.NewChatModel(scripted.ChatScript{Turns: turns})
}

// echoTool is a tool that returns its arguments and counts its runs.
func echoTool(name string, runs *atomic.Int64) contract.Tool {
	return contract.Tool{Name: name, Run: func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		if runs != nil {
			runs.Add(1)
		}
		return args, nil
	}}
}

// nextTool is a tool that returns 1, 2, 3, … whatever its arguments:
// something that waits and gets a new event each time.
func nextTool(name string) contract.Tool {
	var n atomic.Int64
	return contract.Tool{Name: name, Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
		return canonjson.NumberValue(float64(n.Add(1))), nil
	}}
}

func failing(name string, err error) contract.Tool {
	return contract.Tool{Name: name, Run: func(context.Context, canonjson.Value) (canonjson.Value, error) { return canonjson.Value{}, err }}
}

// outcome renders a tool result for comparison: "label ok" or "label
// code: message".
func outcome(r kernel.ToolResult) string {
	if r.Outcome.OK {
		return r.Label + " ok " + string(canonjson.Marshal(r.Outcome.Result))
	}
	return r.Label + " " + r.Outcome.Code + ": " + r.Outcome.Message
}

// summary is what a loop did, in a form go-cmp shows well.
type summary struct {
	Stop             kernel.StopReason
	Turns            int
	Results          []string
	Pending, Ignored []string
	Text             string
}

func summarize(res *kernel.ToolLoopResult) summary {
	s := summary{Stop: res.StopReason, Turns: res.Turns, Text: res.FinalText}
	for _, r := range res.ToolResults {
		s.Results = append(s.Results, outcome(r))
	}
	for _, c := range res.Pending {
		s.Pending = append(s.Pending, c.ID)
	}
	for _, c := range res.Ignored {
		s.Ignored = append(s.Ignored, c.ID)
	}
	return s
}

// Every stop reason the loop returns without an error (runtime spec §3.4;
// checklist FD-03, and runtime spec §15 items 32–34).
func TestToolLoopStops(t *testing.T) {
	past := time.Now().Add(-time.Minute)
	cost := func(contract.ToolCall, kernel.ToolOutcome) float64 { return 0.1 }
	refuse := failing("delete", &contract.ToolRefusal{Tool: "delete", Reason: "policy forbids deleting"})
	tests := []struct {
		name  string
		turns []scripted.ChatTurn
		opts  kernel.ToolLoopOptions
		want  summary
	}{
		{"calls a tool twice then answers (FD-03)",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{"n":1}`)),
				turn(scripted.Call("c2", "echo", `{"n":2}`)),
				answer("done"),
			}, kernel.ToolLoopOptions{},
			summary{Stop: kernel.StopCompleted, Turns: 3, Results: []string{`echo ok {"n":1}`, `echo ok {"n":2}`}, Text: "done"}},
		{"three identical calls are stuck, whatever the key order (§15.32)",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{"a":1,"b":[2]}`)),
				turn(scripted.Call("c2", "echo", `{"b":[2],"a":1}`)),
				turn(scripted.Call("c3", "echo", `{ "a" : 1, "b" : [ 2 ] }`)),
				answer("never"),
			}, kernel.ToolLoopOptions{},
			summary{Stop: kernel.StopStuckLoop, Turns: 3, Results: []string{`echo ok {"a":1,"b":[2]}`, `echo ok {"b":[2],"a":1}`}, Pending: []string{"c3"}}},
		{"identical calls within one turn are stuck too",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{}`), scripted.Call("c2", "echo", `{}`), scripted.Call("c3", "echo", `{}`), scripted.Call("c4", "echo", `{"x":1}`)),
			}, kernel.ToolLoopOptions{},
			summary{Stop: kernel.StopStuckLoop, Turns: 1, Results: []string{`echo ok {}`, `echo ok {}`}, Pending: []string{"c3", "c4"}}},
		{"a different call resets the window",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{"q":"a"}`)),
				turn(scripted.Call("c2", "echo", `{"q":"a"}`)),
				turn(scripted.Call("c3", "echo", `{"q":"b"}`)),
				turn(scripted.Call("c4", "echo", `{"q":"a"}`)),
				turn(scripted.Call("c5", "echo", `{"q":"a"}`)),
				answer("ok"),
			}, kernel.ToolLoopOptions{},
			summary{Stop: kernel.StopCompleted, Turns: 6, Results: []string{`echo ok {"q":"a"}`, `echo ok {"q":"a"}`, `echo ok {"q":"b"}`, `echo ok {"q":"a"}`, `echo ok {"q":"a"}`}, Text: "ok"}},
		{"identical calls of a Waiting tool that returns something new each time are not stuck",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "await", `{}`), scripted.Call("c2", "await", `{}`), scripted.Call("c3", "await", `{}`), scripted.Call("c4", "await", `{}`)),
				answer("ok"),
			}, kernel.ToolLoopOptions{Tools: []contract.Tool{nextTool("await")}, Waiting: []string{"await"}},
			summary{Stop: kernel.StopCompleted, Turns: 2, Results: []string{`await ok 1`, `await ok 2`, `await ok 3`, `await ok 4`}, Text: "ok"}},
		{"identical calls of a Waiting tool whose outcomes repeat are stuck",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{}`), scripted.Call("c2", "echo", `{}`), scripted.Call("c3", "echo", `{}`)),
				answer("never"),
			}, kernel.ToolLoopOptions{Tools: []contract.Tool{echoTool("echo", nil)}, Waiting: []string{"echo"}},
			summary{Stop: kernel.StopStuckLoop, Turns: 1, Results: []string{`echo ok {}`, `echo ok {}`}, Pending: []string{"c3"}}},
		{"the same arguments to another tool are another call",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{}`), scripted.Call("c2", "other", `{}`), scripted.Call("c3", "echo", `{}`)),
				answer("ok"),
			}, kernel.ToolLoopOptions{},
			summary{Stop: kernel.StopCompleted, Turns: 2, Results: []string{`echo ok {}`, `other ok {}`, `echo ok {}`}, Text: "ok"}},
		{"backstop: the turn after MaxToolTurns tool turns is not run",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{"n":1}`)),
				turn(scripted.Call("c2", "echo", `{"n":2}`)),
				turn(scripted.Call("c3", "echo", `{"n":3}`), scripted.Call("c4", "echo", `{"n":4}`)),
			}, kernel.ToolLoopOptions{MaxToolTurns: 2},
			summary{Stop: kernel.StopBackstop, Turns: 3, Results: []string{`echo ok {"n":1}`, `echo ok {"n":2}`}, Pending: []string{"c3", "c4"}}},
		{"a deadline in the past stops before the first turn (§15.33)",
			[]scripted.ChatTurn{answer("never")}, kernel.ToolLoopOptions{Deadline: past},
			summary{Stop: kernel.StopDeadline, Turns: 0}},
		{"budget: the crossing call is recorded, the rest pending (§15.33)",
			[]scripted.ChatTurn{
				turn(scripted.Call("c1", "echo", `{"n":1}`), scripted.Call("c2", "echo", `{"n":2}`)),
				turn(scripted.Call("c3", "echo", `{"n":3}`), scripted.Call("c4", "echo", `{"n":4}`)),
				answer("never"),
			}, kernel.ToolLoopOptions{MaxCostUSD: 0.25, CostOf: cost},
			summary{Stop: kernel.StopBudget, Turns: 2, Results: []string{`echo ok {"n":1}`, `echo ok {"n":2}`, `echo ok {"n":3}`}, Pending: []string{"c4"}}},
		{"a refusal stops the loop when asked to, after it is recorded",
			[]scripted.ChatTurn{turn(scripted.Call("c1", "delete", `{}`), scripted.Call("c2", "echo", `{}`)), answer("never")},
			kernel.ToolLoopOptions{StopOnRefusal: true, Tools: []contract.Tool{echoTool("echo", nil), refuse}},
			summary{Stop: kernel.StopRefused, Turns: 1, Results: []string{"delete refused: tool delete refused: policy forbids deleting"}, Pending: []string{"c2"}}},
		{"a refusal is otherwise just fed back",
			[]scripted.ChatTurn{turn(scripted.Call("c1", "delete", `{}`)), answer("I may not delete it.")},
			kernel.ToolLoopOptions{Tools: []contract.Tool{refuse}},
			summary{Stop: kernel.StopCompleted, Turns: 2, Results: []string{"delete refused: tool delete refused: policy forbids deleting"}, Text: "I may not delete it."}},
		{"a turn with only calls of other tools completes (§15.34)",
			[]scripted.ChatTurn{turn(scripted.Text("Rendering a chart."), scripted.Call("ui1", "chart", `{}`)), answer("never")},
			kernel.ToolLoopOptions{},
			summary{Stop: kernel.StopCompleted, Turns: 1, Ignored: []string{"ui1"}, Text: "Rendering a chart."}},
		{"calls of other tools beside ours are ignored, ours run",
			[]scripted.ChatTurn{turn(scripted.Call("ui1", "chart", `{}`), scripted.Call("c1", "echo", `{}`)), answer("ok")},
			kernel.ToolLoopOptions{},
			summary{Stop: kernel.StopCompleted, Turns: 2, Results: []string{`echo ok {}`}, Ignored: []string{"ui1"}, Text: "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := model(tt.turns...)
			o := tt.opts
			o.Model, o.System, o.User = m, "system", "user"
			if o.Tools == nil {
				o.Tools = []contract.Tool{echoTool("echo", nil), echoTool("other", nil)}
			}
			res, err := kernel.RunToolLoop(context.Background(), o)
			if err != nil {
				t.Fatalf("a %s stop is not an error: %v", tt.want.Stop, err)
			}
			if diff := cmp.Diff(tt.want, summarize(res)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if m.Calls() != tt.want.Turns {
				t.Errorf("the model was called %d times for %d turns", m.Calls(), tt.want.Turns)
			}
			if res.StopReason.Capped() != (tt.want.Stop != kernel.StopCompleted) {
				t.Errorf("Capped() = %v for %s", res.StopReason.Capped(), res.StopReason)
			}
		})
	}
}

// With MaxToolTurns unset the runaway backstop is 200 tool turns.
func TestToolLoopDefaultBackstop(t *testing.T) {
	m := scripted.NewChatModel(scripted.ChatScript{Cycle: true, Turns: []scripted.ChatTurn{
		turn(scripted.Call("", "echo", `{"n":1}`)), turn(scripted.Call("", "echo", `{"n":2}`)),
	}})
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Tools: []contract.Tool{echoTool("echo", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != kernel.StopBackstop || len(res.ToolResults) != kernel.DefaultMaxToolTurns || res.Turns != kernel.DefaultMaxToolTurns+1 || len(res.Pending) != 1 {
		t.Errorf("stop %s after %d turns, %d results, %d pending; want backstop after 201 turns, 200 results, 1 pending",
			res.StopReason, res.Turns, len(res.ToolResults), len(res.Pending))
	}
}

// A tool's failure is a value fed back to the model, never a crash: an
// error, a panic, a refusal and unusable arguments each become a failed
// outcome and a tool message keyed to the call (§15.34).
func TestToolLoopFailuresAreValues(t *testing.T) {
	var runs atomic.Int64
	tools := []contract.Tool{
		failing("flaky", errors.New("upstream 503")),
		{Name: "buggy", Run: func(context.Context, canonjson.Value) (canonjson.Value, error) { panic("index out of range") }},
		failing("guarded", fmt.Errorf("wrapped: %w", &contract.ToolRefusal{Tool: "guarded", Reason: "not allowed"})),
		echoTool("echo", &runs),
	}
	m := model(
		turn(
			scripted.Call("c1", "flaky", `{}`),
			scripted.Call("c2", "buggy", `{}`),
			scripted.Call("c3", "guarded", `{}`),
			scripted.Call("c4", "echo", `{"a":`),
			scripted.Call("c5", "echo", `"just text"`),
			scripted.Call("c6", "echo", ``),
		),
		answer("recovered"),
	)
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"flaky tool_error: upstream 503",
		"buggy executor_error: the tool panicked: index out of range",
		"guarded refused: wrapped: tool guarded refused: not allowed",
		"echo invalid_arguments: the arguments are absent or not JSON, not a JSON object",
		"echo invalid_arguments: the arguments are a JSON string, not a JSON object",
		"echo ok {}",
	}
	if diff := cmp.Diff(want, summarize(res).Results); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if runs.Load() != 1 {
		t.Errorf("the tool ran %d times; calls with unusable arguments must not reach it", runs.Load())
	}
	if res.StopReason != kernel.StopCompleted || res.FinalText != "recovered" {
		t.Errorf("stop %s, text %q", res.StopReason, res.FinalText)
	}
	// Each outcome is a tool message answering its call.
	var tool []string
	for _, msg := range res.Messages {
		if msg.Role == contract.ChatTool {
			tool = append(tool, msg.ToolCallID+" "+*msg.Content)
		}
	}
	wantTool := []string{
		"c1 - flaky → failed (tool_error): upstream 503",
		"c2 - buggy → failed (executor_error): the tool panicked: index out of range",
		"c3 - guarded → failed (refused): wrapped: tool guarded refused: not allowed",
		"c4 - echo → failed (invalid_arguments): the arguments are absent or not JSON, not a JSON object",
		"c5 - echo → failed (invalid_arguments): the arguments are a JSON string, not a JSON object",
		"c6 - echo → ok: {}",
	}
	if diff := cmp.Diff(wantTool, tool); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
}

// The transcript is OpenAI-shaped: [system, ...prior, user], then per tool
// turn the assistant message (trimmed text or null, its calls with
// call_<tool> for missing ids) and one tool message per call, and the
// model of the next turn reads exactly that (runtime spec §3.4).
func TestToolLoopTranscript(t *testing.T) {
	text := func(s string) *string { return &s }
	args := func(s string) canonjson.Value {
		v, err := canonjson.Decode([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	prior := []contract.ChatMessage{
		{Role: contract.ChatUser, Content: text("Hi.")},
		{Role: contract.ChatAssistant, Content: text("Hello.")},
	}
	want := []contract.ChatMessage{
		{Role: contract.ChatSystem, Content: text("Be brief.")},
		prior[0], prior[1],
		{Role: contract.ChatUser, Content: text("Look it up.")},
		{Role: contract.ChatAssistant, Content: text("Checking."), ToolCalls: []contract.ToolCall{
			{ID: "call_lookup", Name: "lookup", Args: args(`{"q":"go"}`)},
			{ID: "x9", Name: "echo", Args: args(`{}`)},
		}},
		{Role: contract.ChatTool, Content: text(`- lookup → ok: {"q":"go"}`), ToolCallID: "call_lookup"},
		{Role: contract.ChatTool, Content: text(`- echo → ok: {}`), ToolCallID: "x9"},
		{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{{ID: "call_echo", Name: "echo", Args: args(`{"n":1}`)}}},
		{Role: contract.ChatTool, Content: text(`- echo → ok: {"n":1}`), ToolCallID: "call_echo"},
		{Role: contract.ChatAssistant, Content: text("Found it.")},
	}
	seen := func(n int) func([]contract.ChatMessage, []contract.Tool) error {
		return func(msgs []contract.ChatMessage, tools []contract.Tool) error {
			if diff := cmp.Diff(want[:n], msgs, valueEqual); diff != "" {
				return fmt.Errorf("turn given the wrong transcript (-want +got):\n%s", diff)
			}
			if len(tools) != 2 {
				return fmt.Errorf("the model was offered %d tools, want 2", len(tools))
			}
			return nil
		}
	}
	m := model(
		scripted.ChatTurn{Expect: seen(4), Events: []contract.ChatEvent{
			scripted.Text("  Checking."), scripted.Text("\n"), scripted.Call("", "lookup", `{"q":"go"}`),
			scripted.Call("ui", "chart", `{}`), scripted.Call("x9", "echo", `{}`),
		}},
		scripted.ChatTurn{Expect: seen(7), Events: []contract.ChatEvent{scripted.Call("", "echo", `{"n":1}`)}},
		scripted.ChatTurn{Expect: seen(9), Events: []contract.ChatEvent{scripted.Text("Found it.\n")}},
	)
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: m, System: "Be brief.", Prior: prior, User: "Look it up.",
		Tools: []contract.Tool{echoTool("lookup", nil), echoTool("echo", nil)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, res.Messages, valueEqual); diff != "" {
		t.Errorf("transcript (-want +got):\n%s", diff)
	}
	if res.FinalText != "  Checking.\nFound it.\n" {
		t.Errorf("FinalText = %q; want every turn's text, concatenated", res.FinalText)
	}
	if res.ToolResults[0].Call.ID != "call_lookup" {
		t.Errorf("result call id %q; want the id its tool message answers", res.ToolResults[0].Call.ID)
	}
}

// A model turn that fails — its stream breaks, it reports an in-band
// error, or it yields nonsense — fails the loop: never an empty
// completed (checklist RG-03, RTP-09; spec §7.7).
func TestToolLoopModelFailure(t *testing.T) {
	tests := []struct {
		name   string
		turns  []scripted.ChatTurn
		reason string
		text   string
	}{
		{"stream breaks mid-turn", []scripted.ChatTurn{{Events: []contract.ChatEvent{scripted.Text("par")}, Break: true}}, kernel.ReasonTransport, "par"},
		{"in-band failure after text", []scripted.ChatTurn{turn(scripted.Text("partial"), scripted.Failure("quota exhausted"))}, kernel.ReasonInBandError, "partial"},
		{"in-band failure after a tool turn", []scripted.ChatTurn{turn(scripted.Call("c1", "echo", `{}`)), turn(scripted.Failure(""))}, kernel.ReasonInBandError, ""},
		{"event of unknown kind", []scripted.ChatTurn{turn(contract.ChatEvent{Kind: "reasoning"})}, kernel.ReasonTransport, ""},
		{"script exhausted", nil, kernel.ReasonTransport, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memory.New(nil)
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(tt.turns...), Tools: []contract.Tool{echoTool("echo", nil)}, Store: st})
			runErr, ok := errors.AsType[*kernel.RunError](err)
			if !ok || runErr.Status != store.StatusFailed || runErr.Reason != tt.reason {
				t.Fatalf("err = %v; want a failed *RunError (%s)", err, tt.reason)
			}
			if res == nil || res.StopReason != kernel.StopFailed || res.FinalText != tt.text {
				t.Fatalf("result %+v; want stop failed with text %q", res, tt.text)
			}
			run, err := st.GetRun(context.Background(), res.RunID)
			if err != nil || run.Status != store.StatusFailed {
				t.Errorf("recorded run %s (%v); want failed", run.Status, err)
			}
		})
	}
}

// Usage goes through ledger.TurnUsage per turn and sums across turns;
// unknown stays unknown (checklist USG-02..05, RTP-09).
func TestToolLoopUsage(t *testing.T) {
	call := scripted.Call("", "echo", `{}`)
	tests := []struct {
		name          string
		turns         []scripted.ChatTurn
		input, output string
	}{
		{"no report is unknown, not 0", []scripted.ChatTurn{turn(call), answer("a")}, "unknown", "unknown"},
		{"deltas add (USG-02)", []scripted.ChatTurn{turn(call, scripted.Usage(10, 1, contract.UsageDelta), scripted.Usage(5, 2, contract.UsageDelta)), turn(scripted.Text("a"), scripted.Usage(0, 0, contract.UsageDelta))}, "15", "3"},
		{"cumulative twice counts once (USG-03, USG-04)", []scripted.ChatTurn{
			turn(scripted.Usage(10, 1, contract.UsageCumulative), call, scripted.Usage(30, 4, contract.UsageCumulative), scripted.Usage(30, 4, contract.UsageCumulative)),
			turn(scripted.Text("a"), scripted.Usage(40, 2, contract.UsageCumulative)),
		}, "70", "6"},
		{"every turn delta: exact sum", []scripted.ChatTurn{turn(call, scripted.Usage(10, 1, contract.UsageDelta)), turn(scripted.Text("a"), scripted.Usage(5, 2, contract.UsageDelta))}, "15", "3"},
		{"an unreported turn makes the sum a floor", []scripted.ChatTurn{turn(call), turn(scripted.Text("a"), scripted.Usage(5, 2, contract.UsageDelta))}, "≥ 5", "≥ 2"},
		{"no mode is a floor, never a blind sum (USG-05)", []scripted.ChatTurn{turn(scripted.Text("a"), scripted.Usage(10, 1, ""), scripted.Usage(10, 1, ""))}, "≥ 10", "≥ 1"},
		{"an unknown mode is a floor too", []scripted.ChatTurn{turn(scripted.Text("a"), contract.ChatEvent{Kind: contract.ChatUsage, Usage: &contract.TokenUsage{InputTokens: 7}, UsageMode: "weird"})}, "≥ 7", "≥ 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(tt.turns...), Tools: []contract.Tool{echoTool("echo", nil)}})
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]string{res.Usage.InputTokens.String(), res.Usage.OutputTokens.String()}; got != [2]string{tt.input, tt.output} {
				t.Errorf("usage in/out = %v; want %s/%s", got, tt.input, tt.output)
			}
		})
	}
}

func newPool(t *testing.T, tokens, iterations int64, opts ledger.PoolOptions) *ledger.Pool {
	t.Helper()
	p, err := ledger.NewPool(ledger.Budget{Tokens: &tokens, Iterations: &iterations}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A pool is reserved before every model turn and settled with the turn's
// observed usage; a refused reservation stops the loop before the model
// is called, so the pool is never overspent (checklist RTP-02, RG-04).
func TestToolLoopPool(t *testing.T) {
	reserve := ledger.Budget{Tokens: ptr(int64(100)), Iterations: ptr(int64(1))}
	call := func(n int) contract.ChatEvent { return scripted.Call("", "echo", fmt.Sprintf(`{"n":%d}`, n)) }

	t.Run("no room: the model is never called", func(t *testing.T) {
		m := model(answer("never"))
		pool := newPool(t, 50, 10, ledger.PoolOptions{})
		res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Budget: pool, Reserve: reserve})
		if err != nil || res.StopReason != kernel.StopBudget || res.Turns != 0 || m.Calls() != 0 {
			t.Fatalf("stop %v after %d turns, %d model calls, err %v; want budget before any call", res.StopReason, res.Turns, m.Calls(), err)
		}
		if res.Usage.InputTokens.Reported {
			t.Errorf("usage %v; nothing ran, so nothing is known", res.Usage.InputTokens)
		}
	})
	t.Run("settles observed usage, stops when a turn no longer fits", func(t *testing.T) {
		m := model(
			turn(call(1), scripted.Usage(10, 2, contract.UsageDelta)),
			turn(call(2), scripted.Usage(20, 3, contract.UsageDelta)),
			answer("never"),
		)
		pool := newPool(t, 1000, 2, ledger.PoolOptions{})
		res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Budget: pool, Reserve: reserve, Tools: []contract.Tool{echoTool("echo", nil)}})
		if err != nil || res.StopReason != kernel.StopBudget || m.Calls() != 2 {
			t.Fatalf("stop %v, %d model calls, err %v; want budget after 2", res.StopReason, m.Calls(), err)
		}
		r := pool.Readout()
		want := map[string]ledger.Balance{
			ledger.ChannelTokens:     {Total: 1000, Free: 965, Committed: 35, Capped: true, Known: true},
			ledger.ChannelIterations: {Total: 2, Free: 0, Committed: 2, Capped: true, Known: true},
		}
		for ch, b := range want {
			if diff := cmp.Diff(b, r.Channels[ch]); diff != "" {
				t.Errorf("%s (-want +got):\n%s", ch, diff)
			}
		}
		if r.OpenTickets != 0 || len(r.Violations) != 0 {
			t.Errorf("open tickets %d, violations %v; want every reservation settled within its ceiling", r.OpenTickets, r.Violations)
		}
	})
	t.Run("a turn without usage is charged its whole reservation", func(t *testing.T) {
		pool := newPool(t, 1000, 10, ledger.PoolOptions{})
		if _, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(answer("a")), Budget: pool, Reserve: reserve}); err != nil {
			t.Fatal(err)
		}
		if got := pool.Readout().Channels[ledger.ChannelTokens]; got.Committed != 100 || got.Known {
			t.Errorf("tokens %+v; want the 100 reserved committed and the channel unknown", got)
		}
	})
	t.Run("the pool's deadline is a deadline stop", func(t *testing.T) {
		pool := newPool(t, 1000, 10, ledger.PoolOptions{Deadline: time.Now().Add(-time.Second)})
		res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(answer("never")), Budget: pool, Reserve: reserve})
		if err != nil || res.StopReason != kernel.StopDeadline || res.Turns != 0 {
			t.Errorf("stop %v after %d turns, err %v; want deadline before any turn", res.StopReason, res.Turns, err)
		}
	})
	t.Run("a reservation the pool finds invalid fails the loop", func(t *testing.T) {
		pool, err := ledger.NewPool(ledger.Budget{Tokens: ptr(int64(1000)), Iterations: ptr(int64(10)), Resources: map[string]int64{"gpu-seconds": 60}}, ledger.PoolOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(answer("never")), Budget: pool, Reserve: reserve})
		if !errors.Is(err, ledger.ErrInvalid) || res.StopReason != kernel.StopFailed {
			t.Errorf("stop %v, err %v; want a failure wrapping ledger.ErrInvalid", res.StopReason, err)
		}
	})
}

// The deadline is checked before every turn with the loop's clock, and a
// turn still running at the deadline is cut short (a deadline stop, not a
// failure).
func TestToolLoopDeadline(t *testing.T) {
	t.Run("checked before the next turn", func(t *testing.T) {
		start := time.Now()
		var clock atomic.Int64 // seconds after start
		now := func() time.Time { return start.Add(time.Duration(clock.Load()) * time.Second) }
		slow := contract.Tool{Name: "slow", Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
			clock.Add(10) // the call takes ten seconds of the loop's clock
			return canonjson.NullValue(), nil
		}}
		m := model(turn(scripted.Call("c1", "slow", `{}`)), answer("never"))
		res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
			Model: m, Tools: []contract.Tool{slow}, Now: now, Deadline: start.Add(5 * time.Second),
		})
		if err != nil || res.StopReason != kernel.StopDeadline || m.Calls() != 1 || len(res.ToolResults) != 1 {
			t.Errorf("stop %v, %d model calls, %d results, err %v; want deadline before the second turn", res.StopReason, m.Calls(), len(res.ToolResults), err)
		}
	})
	t.Run("a hanging turn is cut short", func(t *testing.T) {
		m := model(scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text("thinking"), scripted.Call("c1", "echo", `{}`)}, Hang: true})
		start := time.Now()
		res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
			Model: m, Tools: []contract.Tool{echoTool("echo", nil)}, Deadline: start.Add(20 * time.Millisecond),
			Now: func() time.Time { return start }, // the check before the turn always passes, however slow the machine
		})
		if err != nil || res.StopReason != kernel.StopDeadline || len(res.Pending) != 1 || res.FinalText != "thinking" {
			t.Errorf("stop %v, pending %d, text %q, err %v; want a deadline stop with the call pending", res.StopReason, len(res.Pending), res.FinalText, err)
		}
	})
}

// The caller's context ending is not a stop like the others: the result
// says cancelled (or deadline), and the error is a *RunError that wraps
// the context's error, never a failure (checklist CAN-06, CHD-11).
func TestToolLoopCancellation(t *testing.T) {
	t.Run("cancelled while a tool runs", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stopper := contract.Tool{Name: "stopper", Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
			cancel()
			return canonjson.NullValue(), nil
		}}
		m := model(turn(scripted.Call("c1", "stopper", `{}`), scripted.Call("c2", "stopper", `{"again":true}`)), answer("never"))
		st := memory.New(nil)
		res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: m, Tools: []contract.Tool{stopper}, Store: st})
		runErr, ok := errors.AsType[*kernel.RunError](err)
		if !ok || runErr.Status != store.StatusCancelled || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v; want a cancelled *RunError wrapping context.Canceled", err)
		}
		if diff := cmp.Diff(summary{Stop: kernel.StopCancelled, Turns: 1, Results: []string{"stopper ok null"}, Pending: []string{"c2"}}, summarize(res)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if run, _ := st.GetRun(context.Background(), res.RunID); run.Status != store.StatusCancelled {
			t.Errorf("recorded %s; want cancelled", run.Status)
		}
	})
	t.Run("the caller's deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		st := memory.New(nil)
		res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: model(scripted.ChatTurn{Hang: true}), Store: st})
		runErr, ok := errors.AsType[*kernel.RunError](err)
		if !ok || runErr.Status != store.StatusTimedOut || !errors.Is(err, context.DeadlineExceeded) || res.StopReason != kernel.StopDeadline {
			t.Fatalf("stop %v, err %v; want deadline with a timed-out *RunError", res.StopReason, err)
		}
		if run, _ := st.GetRun(context.Background(), res.RunID); run.Status != store.StatusTimedOut {
			t.Errorf("recorded %s; want timed_out", run.Status)
		}
	})
	t.Run("already cancelled: no turn", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m := model(answer("never"))
		res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: m})
		if !errors.Is(err, context.Canceled) || res.StopReason != kernel.StopCancelled || m.Calls() != 0 {
			t.Errorf("stop %v, %d calls, err %v", res.StopReason, m.Calls(), err)
		}
	})
}

// The stream yields every model event and tool result, then exactly one
// final item, which alone may carry the error.
func TestStreamToolLoop(t *testing.T) {
	kinds := func(o kernel.ToolLoopOptions) (got []string, last kernel.ToolLoopEvent, lastErr error) {
		for ev, err := range kernel.StreamToolLoop(context.Background(), o) {
			if err != nil && ev.Kind != kernel.ToolLoopFinal {
				t.Errorf("error %v on a %s item", err, ev.Kind)
			}
			if last.Kind == kernel.ToolLoopFinal {
				t.Errorf("an item after the final one: %+v", ev)
			}
			k := string(ev.Kind)
			if ev.Kind == kernel.ToolLoopModelEvent {
				k += ":" + string(ev.Event.Kind)
			}
			got, last, lastErr = append(got, fmt.Sprintf("%d %s", ev.Turn, k)), ev, err
		}
		return got, last, lastErr
	}
	tools := []contract.Tool{echoTool("echo", nil)}
	tests := []struct {
		name string
		opts kernel.ToolLoopOptions
		want []string
		stop kernel.StopReason
		err  bool
	}{
		{"completed", kernel.ToolLoopOptions{Tools: tools, Model: model(
			turn(scripted.Call("c1", "echo", `{}`), scripted.Usage(1, 1, contract.UsageDelta)),
			answer("done"),
		)}, []string{"0 event:tool_call", "0 event:usage", "0 tool_result", "1 event:text", "1 final"}, kernel.StopCompleted, false},
		{"capped", kernel.ToolLoopOptions{Tools: tools, MaxToolTurns: 1, Model: model(
			turn(scripted.Call("c1", "echo", `{"n":1}`)),
			turn(scripted.Call("c2", "echo", `{"n":2}`)),
		)}, []string{"0 event:tool_call", "0 tool_result", "1 event:tool_call", "1 final"}, kernel.StopBackstop, false},
		{"failed", kernel.ToolLoopOptions{Model: model(turn(scripted.Text("x"), scripted.Failure("boom")))},
			[]string{"0 event:text", "0 event:failure", "0 final"}, kernel.StopFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, last, err := kinds(tt.opts)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if last.Result == nil || last.Result.StopReason != tt.stop || (err != nil) != tt.err {
				t.Errorf("final %+v, err %v; want %s", last.Result, err, tt.stop)
			}
		})
	}
	t.Run("invalid options: one final item without a result", func(t *testing.T) {
		got, last, err := kinds(kernel.ToolLoopOptions{})
		if len(got) != 1 || last.Result != nil || !errors.Is(err, kernel.ErrInvalidToolLoop) {
			t.Errorf("items %v, result %v, err %v", got, last.Result, err)
		}
	})
}

// A consumer that stops reading ends the loop, which is recorded as
// cancelled and leaves no reservation open.
func TestStreamToolLoopAbandoned(t *testing.T) {
	st := memory.New(nil)
	pool := newPool(t, 1000, 10, ledger.PoolOptions{})
	var runs atomic.Int64
	var runID string
	for ev := range kernel.StreamToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model(turn(scripted.Call("c1", "echo", `{}`), scripted.Call("c2", "echo", `{"n":2}`))), Tools: []contract.Tool{echoTool("echo", &runs)},
		Store: st, RunID: "loop-abandoned", Budget: pool, Reserve: ledger.Budget{Tokens: ptr(int64(100)), Iterations: ptr(int64(1))},
	}) {
		runID = "loop-abandoned"
		if ev.Kind == kernel.ToolLoopToolResult {
			break
		}
	}
	run, err := st.GetRun(context.Background(), runID)
	if err != nil || run.Status != store.StatusCancelled {
		t.Errorf("recorded %s (%v); want cancelled", run.Status, err)
	}
	if runs.Load() != 1 || pool.Readout().OpenTickets != 0 {
		t.Errorf("%d tool runs, %d open tickets; want 1 and 0", runs.Load(), pool.Readout().OpenTickets)
	}
}

// countingStore counts durable appends (a refused append is none).
type countingStore struct {
	store.Store
	appends atomic.Int64
}

func (s *countingStore) AppendEvents(ctx context.Context, f store.Fence, events []store.NewEvent) ([]store.Event, error) {
	out, err := s.Store.AppendEvents(ctx, f, events)
	if err == nil {
		s.appends.Add(1)
	}
	return out, err
}

// A recorded loop: one run of kind tool-loop, one durable append per
// model turn, a ledger entry with the observed usage, exactly one terminal
// state, readable back from the store (checklist RTP-03).
func TestToolLoopRecorded(t *testing.T) {
	st := &countingStore{Store: memory.New(nil)}
	m := model(
		turn(scripted.Text("Looking."), scripted.Call("c1", "echo", `{"q":"a"}`), scripted.Call("ui", "chart", `{}`), scripted.Usage(10, 2, contract.UsageDelta)),
		turn(scripted.Call("c2", "echo", `{"q":"b"}`), scripted.Call("c3", "bad", `{}`), scripted.Usage(12, 3, contract.UsageDelta)),
		turn(scripted.Text("Done."), scripted.Usage(15, 4, contract.UsageDelta)),
	)
	bad := contract.Tool{Name: "bad", Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
		return canonjson.NumberValue(math.NaN()), nil // no canonical form
	}}
	ctx := context.Background()
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: m, User: "find", Tools: []contract.Tool{echoTool("echo", nil), bad}, Store: st, RunID: "loop-1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.RunID != "loop-1" || res.StopReason != kernel.StopCompleted {
		t.Fatalf("run %s stopped %s", res.RunID, res.StopReason)
	}
	if n := st.appends.Load(); n != 3 {
		t.Errorf("%d appends for 3 turns; want one per turn", n)
	}
	run, err := st.GetRun(ctx, "loop-1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Kind != "tool-loop" || run.Status != store.StatusCompleted || !run.LeaseUntil.IsZero() {
		t.Errorf("run kind %s, status %s, lease %v", run.Kind, run.Status, run.LeaseUntil)
	}
	docWant := map[string]string{"stopReason": `"completed"`, "turns": `3`, "toolResults": `3`, "ignoredCalls": `1`, "text": `"Looking.Done."`,
		"usage":    `{"cacheReadTokens":null,"cacheWriteTokens":null,"costUsd":null,"inputTokens":37,"outputTokens":9,"reasoningTokens":null}`,
		"terminal": `{"status":"completed"}`, "user": `"find"`, "tools": `["echo","bad"]`}
	for name, want := range docWant {
		v, _ := run.Doc.Get(name)
		if got, _ := canonjson.Canonical(v); string(got) != want {
			t.Errorf("doc %s = %s; want %s", name, got, want)
		}
	}
	events, err := st.Events(ctx, "loop-1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		body, _ := canonjson.Canonical(e.Body)
		got = append(got, e.ID+" "+e.Type+" "+string(body))
	}
	usage := func(in, out int) string {
		return fmt.Sprintf(`{"cacheReadTokens":null,"cacheWriteTokens":null,"costUsd":null,"inputTokens":%d,"outputTokens":%d,"reasoningTokens":null}`, in, out)
	}
	want := []string{
		`t0 tool-loop.step {"ignoredCalls":[{"arguments":{},"id":"ui","name":"chart"}],"text":"Looking.","toolCalls":[{"arguments":{"q":"a"},"id":"c1","name":"echo","outcome":{"ok":true,"result":{"q":"a"}}}],"turn":0,"usage":` + usage(10, 2) + `}`,
		// A body without a canonical form (the NaN result) is kept as its
		// lossless JSON text, in which NaN reads null.
		`t1 tool-loop.step {"nonCanonical":` + strconv.Quote(`{"text":"","toolCalls":[{"arguments":{"q":"b"},"id":"c2","name":"echo","outcome":{"ok":true,"result":{"q":"b"}}},{"arguments":{},"id":"c3","name":"bad","outcome":{"ok":true,"result":null}}],"turn":1,"usage":`+usage(12, 3)+`}`) + `}`,
		`t2 tool-loop.step {"text":"Done.","toolCalls":[],"turn":2,"usage":` + usage(15, 4) + `}`,
		`final tool-loop.final {"pending":[],"stopReason":"completed","terminal":{"status":"completed"},"turns":3}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// A progress entry (the spend so far, a floor) after each turn that
	// did not end the loop, then the closing entry.
	ledgerEntries, err := st.Ledger(ctx, "loop-1")
	if err != nil || len(ledgerEntries) != 3 {
		t.Fatalf("%d ledger entries (%v); want 3", len(ledgerEntries), err)
	}
	for i, wants := range [][]string{
		{`"kind":"progress"`, `"inputTokens":{"atLeast":10}`, `"status":"running"`},
		{`"kind":"progress"`, `"inputTokens":{"atLeast":22}`},
		{`"kind":"tool-loop"`, `"inputTokens":37`, `"status":"completed"`},
	} {
		b, _ := canonjson.Canonical(ledgerEntries[i].Body)
		for _, w := range wants {
			if !strings.Contains(string(b), w) {
				t.Errorf("ledger entry %d %s lacks %s", i, b, w)
			}
		}
	}
	// The typed record reads the loop back.
	rec, err := kernel.ReadRun(ctx, st, "loop-1")
	if err != nil || rec.ToolLoop == nil || rec.DocErr != nil {
		t.Fatalf("ReadRun: %+v, %v", rec, err)
	}
	if tl := rec.ToolLoop; tl.StopReason != kernel.StopCompleted || *tl.Turns != 3 || tl.Usage.InputTokens.String() != "37" ||
		tl.Terminal.Status != store.StatusCompleted || rec.Spend.InputTokens.String() != "37" || rec.Events != 4 {
		t.Errorf("tool loop record %+v, spend %+v, %d events", tl, rec.Spend, rec.Events)
	}
	// A run ends once: the same id cannot be recorded again.
	if _, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: model(answer("x")), Store: st, RunID: "loop-1"}); !errors.Is(err, store.ErrExists) {
		t.Errorf("reusing a run id: %v; want store.ErrExists", err)
	}
}

// A stop that is not a failure is a completed run whose document names
// the stop reason.
func TestToolLoopRecordedStop(t *testing.T) {
	st := memory.New(nil)
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: model(answer("never")), Store: st, Deadline: time.Now().Add(-time.Second), Kind: "chat-turn"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := st.GetRun(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	stop, _ := run.Doc.Get("stopReason")
	if run.Status != store.StatusCompleted || stop.Str() != string(kernel.StopDeadline) || run.Kind != "chat-turn" || !strings.HasPrefix(res.RunID, "loop-") {
		t.Errorf("run %s kind %s status %s stop %s", res.RunID, run.Kind, run.Status, stop.Str())
	}
	events, _ := st.Events(context.Background(), res.RunID, "", 0)
	if len(events) != 1 || events[0].Type != kernel.EventToolLoopFinal {
		t.Errorf("events %+v; want only the final event", events)
	}
}

// Options are checked before anything runs; bad ones are refused with an
// error naming each problem, never a panic.
func TestToolLoopOptionsValidated(t *testing.T) {
	m := model(answer("x"))
	run := func(context.Context, canonjson.Value) (canonjson.Value, error) { return canonjson.NullValue(), nil }
	pool := newPool(t, 10, 10, ledger.PoolOptions{})
	usdPool, err := ledger.NewPool(ledger.Budget{Tokens: ptr(int64(10)), Iterations: ptr(int64(10)), MicroUSD: ptr(int64(10))}, ledger.PoolOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reserve := ledger.Budget{Tokens: ptr(int64(1)), Iterations: ptr(int64(1))}
	tests := []struct {
		name string
		opts kernel.ToolLoopOptions
		says string
	}{
		{"no model", kernel.ToolLoopOptions{}, "needs a Model"},
		{"negative backstop", kernel.ToolLoopOptions{Model: m, MaxToolTurns: -1}, "MaxToolTurns: -1"},
		{"cost cap without pricing", kernel.ToolLoopOptions{Model: m, MaxCostUSD: 1}, "needs CostOf"},
		{"NaN cost cap", kernel.ToolLoopOptions{Model: m, MaxCostUSD: math.NaN(), CostOf: func(contract.ToolCall, kernel.ToolOutcome) float64 { return 0 }}, "MaxCostUSD: NaN"},
		{"negative cost cap", kernel.ToolLoopOptions{Model: m, MaxCostUSD: -1}, "MaxCostUSD: -1"},
		{"duplicate tools", kernel.ToolLoopOptions{Model: m, Tools: []contract.Tool{{Name: "a", Run: run}, {Name: "a", Run: run}}}, "tool name a appears twice"},
		{"nameless tool", kernel.ToolLoopOptions{Model: m, Tools: []contract.Tool{{Run: run}}}, "tool 0 has no name"},
		{"tool without Run", kernel.ToolLoopOptions{Model: m, Tools: []contract.Tool{{Name: "a"}}}, "tool a has no Run"},
		{"reserve without budget", kernel.ToolLoopOptions{Model: m, Reserve: reserve}, "no Budget"},
		{"budget without reserve", kernel.ToolLoopOptions{Model: m, Budget: pool}, "Reserve of Tokens and Iterations"},
		{"dollar budget without dollars reserved", kernel.ToolLoopOptions{Model: m, Budget: usdPool, Reserve: reserve}, "needs MicroUSD"},
		{"negative lease", kernel.ToolLoopOptions{Model: m, LeaseTTL: -time.Second, Store: memory.New(nil)}, "LeaseTTL"},
		{"lease below the minimum", kernel.ToolLoopOptions{Model: m, LeaseTTL: time.Millisecond, Store: memory.New(nil)}, "LeaseTTL: 1ms is below the minimum of 1s"},
		{"lease without a store", kernel.ToolLoopOptions{Model: m, LeaseTTL: time.Minute}, "no Store was given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := kernel.RunToolLoop(context.Background(), tt.opts)
			if !errors.Is(err, kernel.ErrInvalidOptions) || !strings.Contains(err.Error(), tt.says) || res != nil {
				t.Errorf("got %v, %v; want ErrInvalidOptions saying %q", res, err, tt.says)
			}
			if _, ok := errors.AsType[*kernel.OptionsError](err); !ok {
				t.Errorf("%v is not an *OptionsError naming the field", err)
			}
		})
	}
	if m.Calls() != 0 {
		t.Errorf("the model was called %d times by invalid loops", m.Calls())
	}
}

// CostOf must price a call as a finite non-negative number; anything else
// fails the loop (after the priced result was recorded).
func TestToolLoopInvalidCost(t *testing.T) {
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model(turn(scripted.Call("c1", "echo", `{}`)), answer("never")), Tools: []contract.Tool{echoTool("echo", nil)},
		CostOf: func(contract.ToolCall, kernel.ToolOutcome) float64 { return math.Inf(1) },
	})
	runErr, ok := errors.AsType[*kernel.RunError](err)
	if !ok || runErr.Reason != kernel.ReasonInvalidCost || res.StopReason != kernel.StopFailed || len(res.ToolResults) != 1 {
		t.Errorf("stop %v, %d results, err %v; want an invalid-cost failure", res.StopReason, len(res.ToolResults), err)
	}
}

// Many tools are found by name as well as few (the loop switches to a map
// above a handful), and CostOf without a cap only sums.
func TestToolLoopManyTools(t *testing.T) {
	var tools []contract.Tool
	for i := range 20 {
		tools = append(tools, echoTool(fmt.Sprintf("t%d", i), nil))
	}
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model(turn(scripted.Call("a", "t17", `{}`), scripted.Call("b", "t3", `{}`), scripted.Call("c", "t20", `{}`)), answer("ok")),
		Tools: tools, CostOf: func(contract.ToolCall, kernel.ToolOutcome) float64 { return 0.5 },
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(summary{Stop: kernel.StopCompleted, Turns: 2, Results: []string{"t17 ok {}", "t3 ok {}"}, Ignored: []string{"c"}, Text: "ok"}, summarize(res)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if res.CostUSD != 1 {
		t.Errorf("CostUSD = %v; want 1", res.CostUSD)
	}
}

// Label and Render replace the defaults.
func TestToolLoopLabelAndRender(t *testing.T) {
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model(turn(scripted.Call("c1", "echo", `{"x":1}`)), answer("ok")), Tools: []contract.Tool{echoTool("echo", nil)},
		Label:  func(c contract.ToolCall) string { return c.Name + "#" + c.ID },
		Render: func(label string, out kernel.ToolOutcome) string { return fmt.Sprintf("%s=%v", label, out.OK) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ToolResults[0].Label != "echo#c1" || *res.Messages[3].Content != "echo#c1=true" {
		t.Errorf("label %q, message %q", res.ToolResults[0].Label, *res.Messages[3].Content)
	}
}

// brokenStore refuses every event append, as a full disk would.
type brokenStore struct{ store.Store }

func (brokenStore) AppendEvents(context.Context, store.Fence, []store.NewEvent) ([]store.Event, error) {
	return nil, errors.New("disk full")
}

// An event that cannot be made durable fails the loop (it stops at that
// turn), and the run still ends in exactly one terminal state.
func TestToolLoopRecordingFailure(t *testing.T) {
	st := brokenStore{memory.New(nil)}
	m := model(turn(scripted.Call("c1", "echo", `{}`)), answer("never"))
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Tools: []contract.Tool{echoTool("echo", nil)}, Store: st})
	runErr, ok := errors.AsType[*kernel.RunError](err)
	if !ok || runErr.Status != store.StatusFailed || res.StopReason != kernel.StopFailed || m.Calls() != 1 {
		t.Fatalf("stop %v after %d calls, err %v; want a failure after the first turn", res.StopReason, m.Calls(), err)
	}
	if run, err := st.GetRun(context.Background(), res.RunID); err != nil || run.Status != store.StatusFailed {
		t.Errorf("recorded %s (%v); want failed", run.Status, err)
	}
}

// While the loop lives its lease is renewed: a run busier than its lease
// is still running, not interrupted.
func TestToolLoopLeaseRenewed(t *testing.T) {
	st := memory.New(nil)
	var during store.Status
	slow := contract.Tool{Name: "slow", Run: func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
		time.Sleep(1500 * time.Millisecond) // one and a half lease lifetimes
		run, err := st.GetRun(ctx, "loop-lease")
		during = run.Status
		return canonjson.NullValue(), err
	}}
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model(turn(scripted.Call("c1", "slow", `{}`)), answer("ok")), Tools: []contract.Tool{slow},
		// A lifetime long enough that a loaded CI machine still schedules
		// the renewal in time; what is tested is that it renews at all.
		Store: st, RunID: "loop-lease", LeaseTTL: kernel.MinLeaseTTL,
	})
	if err != nil || len(res.ToolResults) == 0 || !res.ToolResults[0].Outcome.OK {
		t.Fatalf("err %v, outcome %+v", err, res.ToolResults[0].Outcome)
	}
	if during != store.StatusRunning {
		t.Errorf("status while the tool ran: %s; want running (the lease renewed)", during)
	}
	if run, _ := st.GetRun(context.Background(), "loop-lease"); run.Status != store.StatusCompleted {
		t.Errorf("status after: %s", run.Status)
	}
}

// A recorded loop honours a cancel request from any process
// (RequestCancel): it stops cancelled, naming the request.
func TestToolLoopRequestCancel(t *testing.T) {
	st := memory.New(nil)
	operator := contract.Tool{Name: "operator", Run: func(ctx context.Context, _ canonjson.Value) (canonjson.Value, error) {
		if _, _, err := kernel.RequestCancel(context.Background(), st, "loop-victim", "operator says stop", time.Now()); err != nil {
			return canonjson.Value{}, err
		}
		<-ctx.Done() // the lease notices the request and cancels the loop
		return canonjson.NullValue(), nil
	}}
	m := model(turn(scripted.Call("c1", "operator", `{}`)), answer("never"))
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: m, Tools: []contract.Tool{operator}, Store: st, RunID: "loop-victim", LeaseTTL: kernel.MinLeaseTTL,
	})
	runErr, ok := errors.AsType[*kernel.RunError](err)
	if !ok || runErr.Status != store.StatusCancelled || !strings.Contains(runErr.Detail, "operator says stop") || res.StopReason != kernel.StopCancelled {
		t.Fatalf("stop %v, err %v; want cancelled by the request", res.StopReason, err)
	}
	if _, ok := errors.AsType[*kernel.CancelRequestedError](err); !ok {
		t.Errorf("err %v does not wrap the *CancelRequestedError", err)
	}
	if run, _ := st.GetRun(context.Background(), "loop-victim"); run.Status != store.StatusCancelled || m.Calls() != 1 {
		t.Errorf("recorded %s after %d model calls; want cancelled after 1", run.Status, m.Calls())
	}
}

// A panic outside the tools — here in the caller's Render — is not
// swallowed, but the recorded run ends failed instead of staying running.
func TestToolLoopPanicEndsTheRecord(t *testing.T) {
	st := memory.New(nil)
	defer func() {
		if p := recover(); p != "render bug" {
			t.Fatalf("recovered %v; want the caller's panic to go on", p)
		}
		run, err := st.GetRun(context.Background(), "loop-panic")
		if err != nil || run.Status != store.StatusFailed || !run.LeaseUntil.IsZero() {
			t.Errorf("recorded %s, lease %v (%v); want failed with the lease released", run.Status, run.LeaseUntil, err)
		}
		reason, _ := run.Doc.Get("terminal")
		if b, _ := canonjson.Canonical(reason); !strings.Contains(string(b), `"reason":"panic"`) {
			t.Errorf("terminal %s", b)
		}
	}()
	kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
		Model: model(turn(scripted.Call("c1", "echo", `{}`)), answer("never")), Tools: []contract.Tool{echoTool("echo", nil)},
		Render: func(string, kernel.ToolOutcome) string { panic("render bug") },
		Store:  st, RunID: "loop-panic",
	})
}
