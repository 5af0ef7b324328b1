package kernel_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/chatprovider"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// A retry of the model's request is not a failure and does not end the
// turn: the loop streams it to its consumer as a model event and goes on;
// a truly unknown kind still fails the loop (TestToolLoopModelFailure).
func TestToolLoopRetryIsNotAFailure(t *testing.T) {
	retry := contract.RetryEvent(contract.ModelRetry{Attempt: 2, Delay: time.Second, Status: 429, Reason: "HTTP 429 Too Many Requests"})
	m := model(turn(retry, scripted.Text("Hello"), scripted.Usage(10, 2, contract.UsageDelta)))
	var seen []contract.ChatEventKind
	var res *kernel.ToolLoopResult
	for ev, err := range kernel.StreamToolLoop(t.Context(), kernel.ToolLoopOptions{Model: m, Store: memory.New(nil)}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case kernel.ToolLoopModelEvent:
			seen = append(seen, ev.Event.Kind)
		case kernel.ToolLoopFinal:
			res = ev.Result
		}
	}
	if len(seen) == 0 || seen[0] != contract.ChatRetry {
		t.Errorf("model events %v; want the retry first", seen)
	}
	if res == nil || res.StopReason != kernel.StopCompleted || res.FinalText != "Hello" {
		t.Fatalf("result %+v; want completed", res)
	}
	if want := (ledger.Usage{InputTokens: ledger.ExactAmount[int64](10), OutputTokens: ledger.ExactAmount[int64](2)}); res.Usage.InputTokens != want.InputTokens || res.Usage.OutputTokens != want.OutputTokens {
		t.Errorf("usage %+v", res.Usage)
	}
}

// retryRoute is one vendor endpoint that refuses a request transiently
// (429, 503) and then serves it.
type retryRoute struct {
	name    string
	model   func(t *testing.T, transcript string) contract.ChatModel
	system  string
	usage   [2]int64 // the accepted attempt's input and output tokens
	refusal map[string]int
}

func retryRoutes() []retryRoute {
	openaiModel := func(api openai.API, dir string) func(*testing.T, string) contract.ChatModel {
		return func(t *testing.T, name string) contract.ChatModel {
			srv := transcript.Serve(t, filepath.Join("..", "providers", "openai", "testdata", dir, name+".txtar"), transcript.ServerOptions{Complete: true})
			m, err := openai.New(openai.Options{API: api, BaseURL: srv.BaseURL(), APIKey: openaiKey, Model: "gpt-5.2"})
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	return []retryRoute{
		{"openai-chat", openaiModel(openai.APIChatCompletions, ""), "Be brief.", [2]int64{19, 2}, map[string]int{"ratelimit": 429, "unavailable": 503}},
		{"openai-responses", openaiModel(openai.APIResponses, "responses"), "Be brief.", [2]int64{19, 2}, map[string]int{"ratelimit": 429, "unavailable": 503}},
		{"anthropic", func(t *testing.T, name string) contract.ChatModel { return anthropicModel(t, name) }, "You are terse.", [2]int64{25, 4},
			map[string]int{"rate_limited": 429, "unavailable": 503}},
	}
}

// Over the vendors' endpoints the loop shows each retry, completes, and
// counts only the accepted attempt's usage.
func TestToolLoopRetriesOverVendors(t *testing.T) {
	for _, r := range retryRoutes() {
		for name, status := range r.refusal {
			t.Run(r.name+"/"+name, func(t *testing.T) {
				var retries []contract.ModelRetry
				var res *kernel.ToolLoopResult
				for ev, err := range kernel.StreamToolLoop(t.Context(), kernel.ToolLoopOptions{Model: r.model(t, name), System: r.system, User: "Say hello.", Store: memory.New(nil)}) {
					if err != nil {
						t.Fatal(err)
					}
					if ev.Kind == kernel.ToolLoopModelEvent && ev.Event.Kind == contract.ChatRetry {
						retries = append(retries, *ev.Event.Retry)
					}
					if ev.Kind == kernel.ToolLoopFinal {
						res = ev.Result
					}
				}
				if len(retries) != 1 || retries[0].Attempt != 2 || retries[0].Status != status || retries[0].Delay <= 0 {
					t.Errorf("retries %+v; want one, of attempt 2 after HTTP %d", retries, status)
				}
				if res == nil || res.StopReason != kernel.StopCompleted {
					t.Fatalf("result %+v; want completed", res)
				}
				if in, out := res.Usage.InputTokens, res.Usage.OutputTokens; !in.Known() || !out.Known() || in.Value != r.usage[0] || out.Value != r.usage[1] {
					t.Errorf("usage in %s out %s; want exactly %v, the accepted attempt's", in, out, r.usage)
				}
			})
		}
	}
}

// Through Execute and the Provider path a retry is a recorded warning,
// the run completes, and its usage is the accepted attempt's alone.
func TestExecuteRetriesOverVendors(t *testing.T) {
	tests := []struct {
		name     string
		provider func(t *testing.T) contract.Provider
		profile  string
		usage    [2]int64
	}{
		{"openai-chat", func(t *testing.T) contract.Provider {
			srv := transcript.Serve(t, filepath.Join("..", "providers", "openai", "testdata", "unavailable.txtar"), transcript.ServerOptions{Complete: true})
			p, err := openai.NewProvider(openai.ProviderOptions{Options: openai.Options{BaseURL: srv.BaseURL(), APIKey: openaiKey}, ReportsUsage: true, StripModelPrefix: "openai/"})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, `{"name":"n","harness":"cli-base","model":{"provider":"openai","default":"openai/gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`, [2]int64{19, 2}},
		{"anthropic", func(t *testing.T) contract.Provider {
			srv := transcript.Serve(t, filepath.Join("..", "providers", "anthropic", "testdata", "unavailable.txtar"), transcript.ServerOptions{
				Complete: true, Check: transcript.AnthropicHeaders(anthropicKey, anthropic.APIVersion)})
			p, err := anthropic.NewProvider(anthropic.ProviderOptions{Options: anthropic.Options{BaseURL: srv.URL, APIKey: anthropicKey, MaxTokens: 1024}})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, `{"name":"n","harness":"cli-base","model":{"provider":"anthropic","default":"anthropic/claude-sonnet-4-5-20250929"},"prompt":{"systemPrompt":"You are terse."}}`, [2]int64{25, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := memory.New(nil)
			sr := kernel.StreamRun(t.Context(), kernel.Request{Profile: mustProfile(t, tc.profile), Task: "Say hello.", Provider: tc.provider(t), Store: st, Check: nonEmpty})
			retries := 0
			for env, err := range sr.Events() {
				if err != nil {
					t.Fatal(err)
				}
				if w := env.Event.Warning; w != nil && w.Code == chatprovider.WarningModelRetry {
					retries++
				}
			}
			res, err := sr.Result()
			if err != nil {
				t.Fatal(err)
			}
			if retries != 1 {
				t.Errorf("%d retry warnings; want 1", retries)
			}
			if res.Status != store.StatusCompleted || !res.Delivered {
				t.Errorf("run %s, delivered %v", res.Status, res.Delivered)
			}
			if in, out := res.Usage.InputTokens, res.Usage.OutputTokens; !in.Known() || !out.Known() || in.Value != tc.usage[0] || out.Value != tc.usage[1] {
				t.Errorf("usage in %s out %s; want exactly %v", in, out, tc.usage)
			}
		})
	}
}
