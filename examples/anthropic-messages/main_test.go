package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/transcript"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// testKey is the key the transcripts' server expects in x-api-key;
// testModel the profile's model, which the provider sends bare.
const (
	testKey   = "sk-ant-api03-test-0123456789abcdef"
	testModel = "anthropic/claude-sonnet-4-5-20250929"
)

// endpoint starts a local server replaying providers/anthropic's
// transcript name; it checks every request body and the key.
func endpoint(t *testing.T, name string) *transcript.Server {
	t.Helper()
	return transcript.Serve(t, filepath.Join("..", "..", "providers", "anthropic", "testdata", name+".txtar"), transcript.ServerOptions{
		Complete: true, Check: transcript.AnthropicHeaders(testKey, anthropic.APIVersion)})
}

// The example's run over HTTP: completed, with the API's exact usage and
// the served model read back.
func TestGreetOverHTTP(t *testing.T) {
	srv := endpoint(t, "text")
	var out bytes.Buffer
	if err := greet(context.Background(), &out, anthropic.Options{BaseURL: srv.URL, APIKey: testKey}, testModel, memory.New(nil)); err != nil {
		t.Fatal(err)
	}
	want := `status: completed (delivered true)
answer: Hello, world.
tokens in 3273, out 6
requested anthropic/claude-sonnet-4-5-20250929, served claude-sonnet-4-5-20250929
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

// The kernel's truthfulness matrix (kernel.TestTruthfulnessMatrix), for
// the cases the Messages API can produce, through anthropic.NewProvider.
func TestTruthfulnessMatrixOverHTTP(t *testing.T) {
	tests := []struct {
		transcript    string
		status        store.Status
		reason        string
		delivered     bool
		input, output string
		served        string
	}{
		// input_tokens 25 plus 2048 cache reads and 1200 cache writes: the
		// whole prompt (spec runtime §2.1).
		{"text", store.StatusCompleted, "", true, "3273", "6", "claude-sonnet-4-5-20250929"},
		// No input_tokens: no usage event, so the run's usage is unknown,
		// never 0.
		{"usage_missing", store.StatusCompleted, "", true, "unknown", "unknown", "claude-sonnet-4-5-20250929"},
		// An in-band error fails the run; the tokens message_start reported
		// were spent and count, as a floor (ERR-04: the turn broke off).
		{"inband_error", store.StatusFailed, kernel.ReasonInBandError, false, "≥ 25", "≥ 1", "claude-sonnet-4-5-20250929"},
		// A dropped connection fails the run with no terminal event; the
		// served model message_start named was reported at once and
		// survives (RG-02), and the tokens reported before the drop count,
		// as a floor.
		{"dropped", store.StatusFailed, kernel.ReasonTransport, false, "≥ 25", "≥ 1", "claude-sonnet-4-5-20250929"},
		// The token limit ends the turn as a failure, like OpenAI's
		// finish_reason length; the model ended it itself, so its usage is
		// exact, cache included in the input.
		{"max_tokens", store.StatusFailed, kernel.ReasonInBandError, false, "3273", "6", "claude-sonnet-4-5-20250929"},
		// Another served model fails the run, and the tokens it spent
		// still count.
		{"served_other", store.StatusFailed, kernel.ReasonModelMismatch, false, "25", "7", "claude-3-5-haiku-20241022"},
	}
	for _, tc := range tests {
		t.Run(tc.transcript, func(t *testing.T) {
			srv := endpoint(t, tc.transcript)
			st := memory.New(nil)
			res, err := execute(context.Background(), anthropic.Options{BaseURL: srv.URL, APIKey: testKey}, testModel, st)
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			if res.Status != tc.status || res.Reason != tc.reason || res.Delivered != tc.delivered {
				t.Errorf("status %s reason %q delivered %v (%s); want %s %q %v", res.Status, res.Reason, res.Delivered, res.Detail, tc.status, tc.reason, tc.delivered)
			}
			if (err == nil) != (tc.status == store.StatusCompleted) {
				t.Errorf("err = %v for status %s", err, res.Status)
			}
			if got := res.Usage.InputTokens.String(); got != tc.input {
				t.Errorf("input tokens %s, want %s", got, tc.input)
			}
			if got := res.Usage.OutputTokens.String(); got != tc.output {
				t.Errorf("output tokens %s, want %s", got, tc.output)
			}
			if res.Served.Model != tc.served || res.RequestedModel != testModel {
				t.Errorf("served %+v, requested %s", res.Served, res.RequestedModel)
			}
			if tc.served != "" && res.Served.Provider != anthropic.DefaultName {
				t.Errorf("served provider %q", res.Served.Provider)
			}
			run, err := st.GetRun(context.Background(), res.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != tc.status {
				t.Errorf("recorded status %s", run.Status)
			}
			usage, _ := run.Doc.Get("usage")
			if in, _ := usage.Get("inputTokens"); tc.input == "unknown" && in.Kind() != canonjson.Null {
				t.Errorf("unknown input tokens recorded as %s", canonjson.Marshal(in))
			}
			if sm, _ := run.Doc.Get("servedModel"); tc.served != "" && sm.Str() != tc.served {
				t.Errorf("recorded served model %s", canonjson.Marshal(sm))
			}
		})
	}
}

// A profile the API cannot honour (an effort it cannot express) is
// refused before any request.
func TestRefusedBeforeRequest(t *testing.T) {
	srv := transcript.NewServer(t, &transcript.Transcript{Exchanges: []transcript.Exchange{{Method: "POST", Path: "/v1/messages", Status: 500}}}, transcript.ServerOptions{Cycle: true})
	p, err := anthropic.NewProvider(anthropic.ProviderOptions{Options: anthropic.Options{BaseURL: srv.URL, APIKey: testKey}, StripModelPrefix: "anthropic/"})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := greeterProfile(testModel)
	if err != nil {
		t.Fatal(err)
	}
	prof.Model.ReasoningEffort = "minimal" // claude models cannot express it exactly
	_, err = kernel.Execute(context.Background(), kernel.Request{Profile: prof, Task: "Say hello.", Provider: p, Store: memory.New(nil), Check: nonEmpty})
	if !errors.Is(err, kernel.ErrRefused) && !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("err %v", err)
	}
	if srv.Requests() != 0 {
		t.Errorf("%d requests", srv.Requests())
	}
}

// A call of a tool nobody offered (stop_reason tool_use) is neither run
// nor lost: the tool loop records it as ignored, in its result and in the
// run record.
func TestUnofferedToolCallIsRecorded(t *testing.T) {
	srv := endpoint(t, "tool_unoffered")
	m, err := anthropic.NewModel(anthropic.Options{BaseURL: srv.URL, APIKey: testKey, Model: "claude-sonnet-4-5-20250929", MaxTokens: 1024})
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New(nil)
	res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, System: "You are terse.", User: "Say hello.", Store: st, RunID: "unoffered"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Ignored) != 1 || res.Ignored[0].Name != "send_greeting" || res.Ignored[0].ID != "toolu_01Ghost" || len(res.ToolResults) != 0 {
		t.Errorf("ignored %+v, results %+v; want the call of send_greeting ignored and nothing run", res.Ignored, res.ToolResults)
	}
	rec, err := kernel.ReadRun(context.Background(), st, "unoffered")
	if err != nil || rec.ToolLoop == nil {
		t.Fatalf("ReadRun: %v", err)
	}
	if n := rec.ToolLoop.IgnoredCalls; n == nil || *n != 1 {
		t.Errorf("the run record counts ignoredCalls %v, want 1", n)
	}
}
