package chatprovider_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/chatprovider"
)

var errDestroyed = fmt.Errorf("fake: %w", contract.ErrDestroyed)

// fakeModel yields its events, then err when set; calls counts its
// turns.
type fakeModel struct {
	events []contract.ChatEvent
	err    error
	calls  *atomic.Int32
	got    *[]contract.ChatMessage
}

func (f fakeModel) Turn(ctx context.Context, msgs []contract.ChatMessage, tools []contract.Tool) iter.Seq2[contract.ChatEvent, error] {
	f.calls.Add(1)
	if f.got != nil {
		*f.got = msgs
	}
	return func(yield func(contract.ChatEvent, error) bool) {
		for _, e := range f.events {
			if !yield(e, nil) {
				return
			}
		}
		if f.err != nil {
			yield(contract.ChatEvent{}, f.err)
		}
	}
}

// fake is a provider over a fakeModel; settings receives each turn's
// Settings.
type fake struct {
	model    fakeModel
	settings []chatprovider.Settings
	done     func(map[string]canonjson.Value)
}

func newFake(t testing.TB, f *fake, defaultModel string) *chatprovider.Provider {
	t.Helper()
	if f.model.calls == nil {
		f.model.calls = new(atomic.Int32)
	}
	p, err := chatprovider.New(chatprovider.Config{
		Name: "fake-provider", Vendor: "fake", Usage: true, ErrDestroyed: errDestroyed,
		DefaultModel: defaultModel, StripModelPrefix: "fake/",
		CheckEffort: func(e harness.ReasoningEffort, _ *int64) error {
			if e == "xhigh" {
				return errors.Join(errors.New("fake: xhigh"), contract.ErrUnsupported)
			}
			return nil
		},
		Dispatch: func(s chatprovider.Settings) (chatprovider.Turn, error) {
			f.settings = append(f.settings, s)
			return chatprovider.Turn{Model: f.model, Done: f.done}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func str(s string) *string { return &s }

func stream(t *testing.T, p *chatprovider.Provider, prof string, in *contract.TurnInput) ([]contract.EnvironmentEvent, error) {
	t.Helper()
	cin := &contract.CreateInput{}
	if prof != "" {
		pr, err := profile.Parse([]byte(prof))
		if err != nil {
			t.Fatal(err)
		}
		cin.Profile = profile.Ref{Inline: pr}
	}
	env, err := p.Create(t.Context(), cin)
	if err != nil {
		t.Fatal(err)
	}
	var out []contract.EnvironmentEvent
	for e, err := range env.Stream(t.Context(), in) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func backend(e contract.EnvironmentEvent, member string) (string, bool) {
	v, ok := e.Data["effectiveBackend"].Get(member)
	return v.Str(), ok
}

// A retry of the model's request becomes a warning naming it — attempt,
// delay, status and the bounded reason — and the turn goes on to its
// end; a retry event without its retry is skipped.
func TestRetryIsAWarning(t *testing.T) {
	f := &fake{model: fakeModel{events: []contract.ChatEvent{
		contract.RetryEvent(contract.ModelRetry{Attempt: 2, Delay: 1500 * time.Millisecond, Status: 429, Reason: "HTTP 429 Too Many Requests (rate_limit_exceeded)"}),
		contract.RetryEvent(contract.ModelRetry{Attempt: 3, Delay: 20 * time.Millisecond, Reason: strings.Repeat("x", 500)}),
		{Kind: contract.ChatRetry},
		{Kind: contract.ChatText, Text: "Hello"},
	}, got: new([]contract.ChatMessage)}}
	p := newFake(t, f, "")
	evs, err := stream(t, p, `{"harness":"cli-base","model":{"default":"fake/m"}}`, &contract.TurnInput{Prompt: str("Q")})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
		if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, e); err != nil {
			t.Errorf("event %s: %v", e.Type, err)
		}
	}
	if got := strings.Join(types, " "); got != "execution.started warning warning message.part.updated done" {
		t.Fatalf("types %s", got)
	}
	tests := []struct {
		msg, retry string
	}{
		{"retrying the model request in 1.5s (attempt 2) after HTTP 429 Too Many Requests (rate_limit_exceeded)",
			`{"attempt":2,"delayMs":1500,"reason":"HTTP 429 Too Many Requests (rate_limit_exceeded)","status":429}`},
		{"retrying the model request in 20ms (attempt 3) after " + strings.Repeat("x", contract.MaxRetryReasonBytes-len("…")) + "…",
			`{"attempt":3,"delayMs":20,"reason":"` + strings.Repeat("x", contract.MaxRetryReasonBytes-len("…")) + `…"}`},
	}
	for i, tc := range tests {
		w := evs[1+i]
		if n := w.Normalized; n == nil || n.Warning == nil || n.Warning.Code != chatprovider.WarningModelRetry || n.Warning.Message != tc.msg {
			t.Errorf("warning %d: %+v", i, w.Normalized.Warning)
		}
		if got, _ := canonjson.Canonical(w.Data["retry"]); string(got) != tc.retry {
			t.Errorf("warning %d retry %s; want %s", i, got, tc.retry)
		}
	}
	if done := evs[len(evs)-1]; done.Data["text"].Str() != "Hello" {
		t.Errorf("done %+v", done.Data)
	}
}

// Chat events become canonical events: text deltas, usage as reported,
// the ChatServed model at once on a status event (RG-02: it survives a
// later cut) and again on the terminal event; a tool call is not work
// done, but is not dropped either: a warning names it; the vendor's Done
// adds to the done event. The transcript is the profile's system prompt
// (replace, then append) and the prompt.
func TestTurnEvents(t *testing.T) {
	u := &contract.TokenUsage{InputTokens: 7, OutputTokens: 2}
	f := &fake{model: fakeModel{events: []contract.ChatEvent{
		{Kind: contract.ChatServed, Model: "m-served"},
		{Kind: contract.ChatText, Text: "Hel"},
		{Kind: contract.ChatToolCall, ToolCall: contract.ToolCall{ID: "c1", Name: "x"}},
		{Kind: contract.ChatText, Text: "lo"},
		{Kind: contract.ChatUsage, Usage: u, UsageMode: contract.UsageCumulative},
	}, got: new([]contract.ChatMessage)}, done: func(d map[string]canonjson.Value) { d["finishReason"] = canonjson.StringValue("stop") }}
	p := newFake(t, f, "")
	evs, err := stream(t, p, `{"harness":"cli-base","model":{"default":"fake/m","reasoningEffort":"high","maxTotalOutputTokens":99},"prompt":{"systemPrompt":"A.","appendSystemPrompt":"B."}}`,
		&contract.TurnInput{Prompt: str("Q")})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
		if _, err := contract.Validate(contract.KindEnvironmentEvent, contract.EnvironmentEventSchema, e); err != nil {
			t.Errorf("event %s: %v", e.Type, err)
		}
	}
	if got := strings.Join(types, " "); got != "execution.started status message.part.updated warning message.part.updated usage done" {
		t.Fatalf("types %s", got)
	}
	if model, _ := backend(evs[1], "model"); model != "m-served" {
		t.Errorf("status event %s, want the served model", canonjson.Marshal(evs[1].Data["effectiveBackend"]))
	}
	if _, ok := contract.EnvironmentEventTerminal(evs[1]); ok {
		t.Error("the served-model status event is terminal")
	}
	w := evs[3]
	if n := w.Normalized; n == nil || n.Warning == nil || n.Warning.Code != chatprovider.WarningToolCallNotRun {
		t.Errorf("warning %+v", w.Normalized)
	}
	if id, _ := w.Data["toolCall"].Get("id"); id.Str() != "c1" {
		t.Errorf("warning call id %q", id.Str())
	}
	if name, _ := w.Data["toolCall"].Get("name"); name.Str() != "x" {
		t.Errorf("warning names tool %q", name.Str())
	}
	if got, _, ok := evs[5].UsageReport(); !ok || got != u {
		t.Errorf("usage %+v", got)
	}
	done := evs[len(evs)-1]
	model, _ := backend(done, "model")
	prov, _ := backend(done, "provider")
	if done.Data["text"].Str() != "Hello" || model != "m-served" || prov != "fake-provider" || done.Data["finishReason"].Str() != "stop" {
		t.Errorf("done %s", canonjson.Marshal(done.Data["effectiveBackend"]))
	}
	if len(f.settings) != 1 || f.settings[0].Model != "m" || f.settings[0].ReasoningEffort != "high" || *f.settings[0].MaxTotalOutputTokens != 99 {
		t.Errorf("settings %+v", f.settings)
	}
	msgs := *f.model.got
	if len(msgs) != 2 || msgs[0].Role != contract.ChatSystem || *msgs[0].Content != "A.\n\nB." || msgs[1].Role != contract.ChatUser || *msgs[1].Content != "Q" {
		t.Errorf("transcript %+v", msgs)
	}
}

// A failure is an error terminal event with the served model; without a
// ChatServed event the served model is unknown (absent), not "".
func TestFailureAndUnknownServedModel(t *testing.T) {
	f := &fake{model: fakeModel{events: []contract.ChatEvent{{Kind: contract.ChatFailure}}}}
	evs, err := stream(t, newFake(t, f, "m"), "", &contract.TurnInput{Prompt: str("Q"), Model: str("fake/turn-model")})
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1]
	if kind, ok := contract.EnvironmentEventTerminal(last); !ok || kind != contract.TerminalFailed || last.Data["error"].Str() == "" {
		t.Errorf("last %s %v", last.Type, kind)
	}
	if m, ok := backend(last, "model"); ok {
		t.Errorf("served model %q, want none", m)
	}
	if f.settings[0].Model != "turn-model" {
		t.Errorf("settings %+v", f.settings)
	}
}

// A stream error ends the sequence with no terminal event.
func TestStreamErrorIsNoSuccess(t *testing.T) {
	broken := errors.New("broken")
	f := &fake{model: fakeModel{events: []contract.ChatEvent{{Kind: contract.ChatText, Text: "x"}}, err: broken}}
	evs, err := stream(t, newFake(t, f, "m"), "", &contract.TurnInput{Prompt: str("Q")})
	if !errors.Is(err, broken) {
		t.Fatalf("err %v", err)
	}
	for _, e := range evs {
		if _, ok := contract.EnvironmentEventTerminal(e); ok {
			t.Errorf("terminal event %s", e.Type)
		}
	}
}

// Refusals come before Dispatch and before the model is called.
func TestRefusedBeforeDispatch(t *testing.T) {
	for _, tc := range []struct{ name, def, prof string }{
		{"no model", "", ""},
		{"effort the vendor refuses", "m", `{"harness":"cli-base","model":{"reasoningEffort":"xhigh"}}`},
		{"reasoning ceiling", "m", `{"harness":"cli-base","model":{"maxReasoningTokens":5}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fake{}
			p := newFake(t, f, tc.def)
			var err error
			if tc.prof == "" {
				_, err = stream(t, p, "", &contract.TurnInput{Prompt: str("Q"), Model: str("fake/turn-model")})
			} else {
				pr, perr := profile.Parse([]byte(tc.prof))
				if perr != nil {
					t.Fatal(perr)
				}
				_, err = stream(t, p, "", &contract.TurnInput{Prompt: str("Q"), Profile: pr})
			}
			if !errors.Is(err, contract.ErrUnsupported) || !strings.HasPrefix(err.Error(), "fake: turn refused before dispatch") {
				t.Errorf("err %v", err)
			}
			if len(f.settings) != 0 || f.model.calls.Load() != 0 {
				t.Errorf("dispatched %d, model called %d times", len(f.settings), f.model.calls.Load())
			}
		})
	}
}

func TestDestroyed(t *testing.T) {
	f := &fake{}
	env, err := newFake(t, f, "m").Create(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Destroy(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s, _ := env.Status(t.Context()); s != contract.EnvironmentStopped {
		t.Errorf("status %s", s)
	}
	for _, err := range env.Stream(t.Context(), &contract.TurnInput{Prompt: str("Q")}) {
		if !errors.Is(err, errDestroyed) || !errors.Is(err, contract.ErrDestroyed) {
			t.Errorf("err %v", err)
		}
	}
	if f.model.calls.Load() != 0 {
		t.Error("the model was called")
	}
}

func TestNewRequiresTheVendorParts(t *testing.T) {
	if _, err := chatprovider.New(chatprovider.Config{Name: "x"}); err == nil {
		t.Error("no error")
	}
	dispatch := func(chatprovider.Settings) (chatprovider.Turn, error) { return chatprovider.Turn{}, nil }
	if _, err := chatprovider.New(chatprovider.Config{Name: "x", Vendor: "x", Dispatch: dispatch, ErrDestroyed: errors.New("x: gone")}); err == nil {
		t.Error("an ErrDestroyed that does not wrap contract.ErrDestroyed was accepted")
	}
	if _, err := chatprovider.New(chatprovider.Config{Name: "x", Vendor: "x", Dispatch: dispatch}); err != nil {
		t.Errorf("no ErrDestroyed: %v", err)
	}
}

// The shared provider over any model passes providertest with what it
// declares.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) contract.Provider {
		return newFake(t, &fake{model: fakeModel{events: []contract.ChatEvent{
			{Kind: contract.ChatServed, Model: "m"},
			{Kind: contract.ChatText, Text: "Hello."},
			{Kind: contract.ChatUsage, Usage: &contract.TokenUsage{InputTokens: 1, OutputTokens: 1}, UsageMode: contract.UsageCumulative},
		}}}, "m")
	}, providertest.Options{})
}
