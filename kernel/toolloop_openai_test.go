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
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// The OpenAI Responses API's evidence: the tool loop driven over HTTP
// against a local server that plays providers/openai's recorded
// Responses transcripts.

const openaiKey = "sk-test-4f9c2a7b1e"

// responsesModel serves the Responses transcript name and returns a
// gpt-5.2 model speaking the Responses API to it.
func responsesModel(t *testing.T, name string) *openai.Model {
	t.Helper()
	srv := transcript.Serve(t, filepath.Join("..", "providers", "openai", "testdata", "responses", name+".txtar"), transcript.ServerOptions{Complete: true})
	m, err := openai.New(openai.Options{API: openai.APIResponses, BaseURL: srv.BaseURL(), APIKey: openaiKey, Model: "gpt-5.2"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// getWeather is the tool the Responses tool-call transcript offers.
func getWeather(runs *int) contract.Tool {
	schema, _ := canonjson.Decode([]byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`))
	return contract.Tool{Name: "get_weather", Description: "Current weather for a city.", InputSchema: schema,
		Run: func(_ context.Context, args canonjson.Value) (canonjson.Value, error) {
			*runs++
			if city, _ := args.Get("city"); city.Str() != "Oslo" {
				return canonjson.Value{}, errors.New("asked for " + string(canonjson.Marshal(args)))
			}
			return canonjson.Decode([]byte(`{"celsius":4,"sky":"rain"}`))
		}}
}

// The loop runs the function call the first response made, sends its
// output back as a function_call_output item, and sums the two
// responses' usage exactly: cached and reasoning tokens included, the
// cache writes OpenAI does not report left unknown.
func TestToolLoopOverOpenAIResponses(t *testing.T) {
	m := responsesModel(t, "toolcall")
	st := memory.New(nil)
	ctx := t.Context()
	runs := 0
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: m, System: "Use the tools.", User: "What is the weather in Oslo?",
		Tools: []contract.Tool{getWeather(&runs)}, Store: st, RunID: "loop-responses", RequestedModel: "gpt-5.2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != kernel.StopCompleted || res.Turns != 2 || runs != 1 || len(res.ToolResults) != 1 || !res.ToolResults[0].Outcome.OK {
		t.Fatalf("stopped %s after %d turns, %d runs, results %+v", res.StopReason, res.Turns, runs, res.ToolResults)
	}
	if res.FinalText != "Rain in Oslo, 4 °C." {
		t.Errorf("final text %q", res.FinalText)
	}
	want := ledger.Usage{InputTokens: ledger.ExactAmount[int64](61 + 104), OutputTokens: ledger.ExactAmount[int64](17 + 9),
		CacheReadTokens: ledger.ExactAmount[int64](0 + 64), ReasoningTokens: ledger.ExactAmount[int64](0 + 0)}
	if res.Usage != want {
		t.Errorf("usage %+v; want %+v", res.Usage, want)
	}
	if len(res.ServedModels) != 1 || res.ServedModels[0] != "gpt-5.2" {
		t.Errorf("served models %q", res.ServedModels)
	}
	run, err := st.GetRun(ctx, "loop-responses")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := run.Doc.Get("usage")
	got, _ := canonjson.Canonical(v)
	if string(got) != `{"cacheReadTokens":64,"cacheWriteTokens":null,"costUsd":null,"inputTokens":165,"outputTokens":26,"reasoningTokens":0}` {
		t.Errorf("recorded usage %s", got)
	}
	if run.Status != store.StatusCompleted {
		t.Errorf("run %s", run.Status)
	}
}

// The truthfulness cases of the Responses API in the loop.
func TestToolLoopOverOpenAIResponsesTruthfulness(t *testing.T) {
	t.Run("missing usage is unknown", func(t *testing.T) {
		res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: responsesModel(t, "nousage"), System: "Be brief.", User: "Say hello."})
		if err != nil {
			t.Fatal(err)
		}
		if res.StopReason != kernel.StopCompleted || res.Usage.InputTokens.Reported || res.Usage.OutputTokens.Reported {
			t.Errorf("stopped %s with usage %+v; want completed with unknown usage", res.StopReason, res.Usage)
		}
	})
	t.Run("incomplete fails the loop, its tokens counted", func(t *testing.T) {
		m, err := openai.New(openai.Options{API: openai.APIResponses, APIKey: openaiKey, Model: "gpt-5.2", MaxCompletionTokens: new(int64(16)),
			BaseURL: transcript.Serve(t, filepath.Join("..", "providers", "openai", "testdata", "responses", "incomplete.txtar"), transcript.ServerOptions{Complete: true}).BaseURL()})
		if err != nil {
			t.Fatal(err)
		}
		res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: m, System: "Be brief.", User: "Say hello."})
		var re *kernel.RunError
		if !errors.As(err, &re) || re.Status != store.StatusFailed || re.Reason != kernel.ReasonInBandError || res.StopReason != kernel.StopFailed {
			t.Fatalf("err %v, stop %s; want a failed run with reason %s", err, res.StopReason, kernel.ReasonInBandError)
		}
		if !res.Usage.OutputTokens.Known() || res.Usage.OutputTokens.Value != 16 {
			t.Errorf("usage %+v", res.Usage)
		}
	})
	t.Run("another served model fails the loop", func(t *testing.T) {
		res, err := kernel.RunToolLoop(t.Context(), kernel.ToolLoopOptions{Model: responsesModel(t, "served"), System: "Be brief.", User: "Say hello.", RequestedModel: "gpt-5.2"})
		var re *kernel.RunError
		if !errors.As(err, &re) || re.Reason != kernel.ReasonModelMismatch || res.FinalText != "" {
			t.Fatalf("err %v, final %q; want a model mismatch", err, res.FinalText)
		}
	})
}

// ERR-04 through Execute and the Provider path: a turn the model ended
// itself (Responses "incomplete" at its token limit) reported its whole
// usage, which stays exact; a turn that broke off (an in-band error
// event, a dropped connection) keeps what it reported as a floor, and its
// served model.
func TestExecuteEarlyEndingsOverOpenAIResponses(t *testing.T) {
	tests := []struct {
		transcript string
		reason     string
		exact      bool
	}{
		{"incomplete", kernel.ReasonInBandError, true},
		{"inband_error", kernel.ReasonInBandError, false},
		{"dropped", kernel.ReasonTransport, false},
	}
	prof := mustProfile(t, `{"name":"n","harness":"cli-base","model":{"provider":"openai","default":"openai/gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`)
	for _, tc := range tests {
		t.Run(tc.transcript, func(t *testing.T) {
			srv := transcript.Serve(t, filepath.Join("..", "providers", "openai", "testdata", "responses", tc.transcript+".txtar"), transcript.ServerOptions{Complete: true})
			opts := openai.Options{API: openai.APIResponses, BaseURL: srv.BaseURL(), APIKey: openaiKey}
			if tc.transcript == "incomplete" {
				opts.MaxCompletionTokens = new(int64(16))
			}
			p, err := openai.NewProvider(openai.ProviderOptions{Options: opts, StripModelPrefix: "openai/"})
			if err != nil {
				t.Fatal(err)
			}
			st := memory.New(nil)
			res, err := kernel.Execute(t.Context(), kernel.Request{Profile: prof, Task: "Say hello.", Provider: p, Store: st, Check: nonEmpty})
			re, ok := errors.AsType[*kernel.RunError](err)
			if !ok || re.Status != store.StatusFailed || re.Reason != tc.reason {
				t.Fatalf("err %v; want failed (%s)", err, tc.reason)
			}
			in := res.Usage.InputTokens
			if tc.exact != in.Known() || (in.Reported && in.Value == 0) {
				t.Errorf("input tokens %s; want exact %v", in, tc.exact)
			}
			if !in.Reported && tc.exact {
				t.Errorf("input tokens unknown; the finished turn reported them")
			}
			if res.Served.Model == "" && tc.transcript != "dropped" {
				t.Errorf("served model lost")
			}
		})
	}
}
