package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// The Anthropic model's evidence: the tool loop driven over HTTP against
// a local server that plays providers/anthropic's recorded transcripts.

const anthropicKey = "sk-ant-api03-kernel-test-key"

// anthropicModel serves the transcript name and returns a model talking to
// it.
func anthropicModel(t *testing.T, name string) *anthropic.Model {
	t.Helper()
	srv := transcript.Serve(t, filepath.Join("..", "providers", "anthropic", "testdata", name+".txtar"), transcript.ServerOptions{
		Complete: true, Check: transcript.AnthropicHeaders(anthropicKey, anthropic.APIVersion)})
	m, err := anthropic.NewModel(anthropic.Options{BaseURL: srv.URL, APIKey: anthropicKey, Model: "claude-sonnet-4-5-20250929", MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func weather() contract.Tool {
	schema, _ := canonjson.Decode([]byte(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}`))
	return contract.Tool{Name: "weather", Description: "Current weather for a city", InputSchema: schema,
		Run: func(context.Context, canonjson.Value) (canonjson.Value, error) {
			return canonjson.Decode([]byte(`{"temp_c":18,"sky":"sunny"}`))
		}}
}

func TestToolLoopOverAnthropic(t *testing.T) {
	m := anthropicModel(t, "tool_use")
	st := memory.New(nil)
	ctx := t.Context()
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: m, User: "What is the weather in Paris?",
		Tools: []contract.Tool{weather()}, Store: st, RunID: "loop-anthropic", RequestedModel: m.RequestedModel()})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != kernel.StopCompleted || res.Turns != 2 || len(res.ToolResults) != 1 || !res.ToolResults[0].Outcome.OK {
		t.Fatalf("stopped %s after %d turns with %d results", res.StopReason, res.Turns, len(res.ToolResults))
	}
	if res.FinalText != "Let me check.It is 18°C and sunny in Paris." {
		t.Errorf("final text %q", res.FinalText)
	}
	// Input is the whole prompt, cache reads included (spec runtime §2.1):
	// Anthropic's input_tokens leave them out.
	want := ledger.Usage{InputTokens: ledger.ExactAmount[int64](412 + 106 + 424), OutputTokens: ledger.ExactAmount[int64](58 + 16),
		CacheReadTokens: ledger.ExactAmount[int64](424), CacheWriteTokens: ledger.ExactAmount[int64](0)}
	if res.Usage != want {
		t.Errorf("usage %+v; want %+v", res.Usage, want)
	}
	if len(res.ServedModels) != 1 || res.ServedModels[0] != m.RequestedModel() {
		t.Errorf("served models %q", res.ServedModels)
	}
	run, err := st.GetRun(ctx, "loop-anthropic")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := run.Doc.Get("usage")
	got, _ := canonjson.Canonical(v)
	if string(got) != `{"cacheReadTokens":424,"cacheWriteTokens":0,"costUsd":null,"inputTokens":942,"outputTokens":74,"reasoningTokens":null}` {
		t.Errorf("recorded usage %s", got)
	}
	if run.Status != store.StatusCompleted {
		t.Errorf("run %s", run.Status)
	}
}

// The truthfulness cases HTTP can produce.
func TestToolLoopOverAnthropicTruthfulness(t *testing.T) {
	t.Run("missing usage is unknown", func(t *testing.T) {
		m := anthropicModel(t, "usage_missing")
		res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: m, System: "You are terse.", User: "Say hello."})
		if err != nil {
			t.Fatal(err)
		}
		if res.StopReason != kernel.StopCompleted || res.Usage.InputTokens.Reported || res.Usage.OutputTokens.Reported {
			t.Errorf("stopped %s with usage %+v; want completed with unknown usage", res.StopReason, res.Usage)
		}
	})
	t.Run("in-band error fails the loop", func(t *testing.T) {
		m := anthropicModel(t, "inband_error")
		res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: m, System: "You are terse.", User: "Say hello."})
		var re *kernel.RunError
		if !errors.As(err, &re) || re.Status != store.StatusFailed || re.Reason != kernel.ReasonInBandError || res.StopReason != kernel.StopFailed {
			t.Fatalf("err %v, stop %s; want a failed run with reason %s", err, res.StopReason, kernel.ReasonInBandError)
		}
		// ERR-04: the turn broke off, so what it reported is kept as a floor.
		if u := res.Usage.InputTokens; !u.Reported || u.Complete || u.Value != 25 {
			t.Errorf("usage %+v; the tokens spent before the failure are kept, as a floor", res.Usage)
		}
	})
	t.Run("another served model fails the loop", func(t *testing.T) {
		m := anthropicModel(t, "served_other")
		res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: m, System: "You are terse.", User: "Say hello.", RequestedModel: m.RequestedModel()})
		var re *kernel.RunError
		if !errors.As(err, &re) || re.Status != store.StatusFailed || re.Reason != kernel.ReasonModelMismatch || res.StopReason != kernel.StopFailed {
			t.Fatalf("err %v, stop %s; want a failed run with reason %s", err, res.StopReason, kernel.ReasonModelMismatch)
		}
		if len(res.ServedModels) != 1 || res.ServedModels[0] != "claude-3-5-haiku-20241022" {
			t.Errorf("served models %q", res.ServedModels)
		}
		if res.FinalText != "" {
			t.Errorf("final text %q; nothing another model wrote is taken", res.FinalText)
		}
		if !res.Usage.OutputTokens.Known() || res.Usage.OutputTokens.Value != 7 {
			t.Errorf("usage %+v; the tokens another model spent still count", res.Usage)
		}
	})
}
