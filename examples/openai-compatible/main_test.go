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
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// testKey is the key the transcripts expect.
const testKey = "sk-test-4f9c2a7b1e"

// endpoint starts a local endpoint replaying providers/openai's
// transcript name.
func endpoint(t *testing.T, name string) *transcript.Server {
	t.Helper()
	tr, err := transcript.Load(filepath.Join("..", "..", "providers", "openai", "testdata", name+".txtar"))
	if err != nil {
		t.Fatal(err)
	}
	return transcript.NewServer(t, tr, transcript.ServerOptions{})
}

// Issue 7 "done when": a recorded tool loop over HTTP completes with the
// endpoint's exact usage (two turns summed) and the served model read
// back, over Chat Completions and over the Responses API.
func TestWeatherLoopOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		api        openai.API
		transcript string
	}{{openai.APIChatCompletions, "toolcall"}, {openai.APIResponses, "responses/toolcall"}} {
		t.Run(string(tc.api), func(t *testing.T) {
			srv := endpoint(t, tc.transcript)
			st := memory.New(nil)
			var out bytes.Buffer
			err := weatherLoop(context.Background(), &out, openai.Options{API: tc.api, BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"}, st)
			if err != nil {
				t.Fatal(err)
			}
			want := `tool get_weather({"city":"Oslo"}) → {"celsius":4,"sky":"rain"}
answer: Rain in Oslo, 4 °C.
stop: completed after 2 model turns; tokens in 165, out 26
requested gpt-5.2, served [gpt-5.2]
`
			if out.String() != want {
				t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
			}
			if !srv.Served() {
				t.Error("the transcript was not served")
			}
			runs, err := st.ListRuns(context.Background(), store.ListOptions{})
			if err != nil || len(runs) != 1 || runs[0].Status != store.StatusCompleted {
				t.Fatalf("recorded %+v, %v", runs, err)
			}
			usage, _ := runs[0].Doc.Get("usage")
			if in, _ := usage.Get("inputTokens"); string(canonjson.Marshal(in)) != "165" {
				t.Errorf("recorded usage %s", canonjson.Marshal(usage))
			}
		})
	}
}

// The tool loop's truthfulness over HTTP: missing usage stays unknown, an
// in-band error and a dropped connection fail the loop, and so does a
// served model other than the requested one.
func TestToolLoopTruthfulnessOverHTTP(t *testing.T) {
	tests := []struct {
		transcript    string
		stop          kernel.StopReason
		reason        string
		input, output string
	}{
		{"text", kernel.StopCompleted, "", "19", "3"},
		{"nousage", kernel.StopCompleted, "", "unknown", "unknown"},
		{"inband_error", kernel.StopFailed, kernel.ReasonInBandError, "unknown", "unknown"},
		{"dropped", kernel.StopFailed, kernel.ReasonTransport, "unknown", "unknown"},
		// Another served model fails the loop, and the tokens it spent
		// still count.
		{"served", kernel.StopFailed, kernel.ReasonModelMismatch, "19", "2"},
	}
	for _, tc := range tests {
		t.Run(tc.transcript, func(t *testing.T) {
			srv := endpoint(t, tc.transcript)
			m, err := openai.New(openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"})
			if err != nil {
				t.Fatal(err)
			}
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, System: "Be brief.", User: "Say hello.", Store: memory.New(nil), RequestedModel: "gpt-5.2"})
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			if res.StopReason != tc.stop {
				t.Errorf("stop %s, want %s (%v)", res.StopReason, tc.stop, err)
			}
			var re *kernel.RunError
			if tc.reason != "" && (!errors.As(err, &re) || re.Reason != tc.reason) {
				t.Errorf("err %v, want reason %s", err, tc.reason)
			}
			if got := res.Usage.InputTokens.String(); got != tc.input {
				t.Errorf("input tokens %s, want %s", got, tc.input)
			}
			if got := res.Usage.OutputTokens.String(); got != tc.output {
				t.Errorf("output tokens %s, want %s", got, tc.output)
			}
		})
	}
}

// noteWriter is the profile of the Execute cases: the transcripts' system
// prompt and model, on harness cli-base.
const noteWriter = `{"name":"note-writer","harness":"cli-base","model":{"provider":"openai","default":"openai/gpt-5.2"},"prompt":{"systemPrompt":"Be brief."}}`

func nonEmpty(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
	return kernel.Verdict{Passed: out.Text != "", Reason: "the answer is not empty"}, nil
}

// The kernel's truthfulness matrix (kernel.TestTruthfulnessMatrix), for
// the cases an HTTP endpoint can produce, through the openai provider.
func TestTruthfulnessMatrixOverHTTP(t *testing.T) {
	tests := []struct {
		transcript    string
		status        store.Status
		reason        string
		delivered     bool
		input, output string
		served        string
	}{
		{"text", store.StatusCompleted, "", true, "19", "3", "gpt-5.2"},
		{"nousage", store.StatusCompleted, "", true, "unknown", "unknown", "gpt-5.2"},
		{"inband_error", store.StatusFailed, kernel.ReasonInBandError, false, "unknown", "unknown", "gpt-5.2"},
		// The first chunk named the served model, which survives the drop
		// (RG-02); no usage chunk arrived, so usage is unknown.
		{"dropped", store.StatusFailed, kernel.ReasonTransport, false, "unknown", "unknown", "gpt-5.2"},
		{"served", store.StatusFailed, kernel.ReasonModelMismatch, false, "19", "2", "gpt-5.2-mini"},
	}
	for _, tc := range tests {
		t.Run(tc.transcript, func(t *testing.T) {
			srv := endpoint(t, tc.transcript)
			p, err := openai.NewProvider(openai.ProviderOptions{Options: openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey},
				ReportsUsage: true, StripModelPrefix: "openai/"})
			if err != nil {
				t.Fatal(err)
			}
			prof, err := profile.Parse([]byte(noteWriter))
			if err != nil {
				t.Fatal(err)
			}
			st := memory.New(nil)
			res, err := kernel.Execute(context.Background(), kernel.Request{Profile: prof, Task: "Say hello.", Provider: p, Store: st, Check: nonEmpty})
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
			if res.Served.Model != tc.served || res.RequestedModel != "openai/gpt-5.2" {
				t.Errorf("served %+v, requested %s", res.Served, res.RequestedModel)
			}
			if tc.served != "" && res.Served.Provider != openai.DefaultName {
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

// A profile the endpoint cannot honour is refused before any request.
func TestRefusedBeforeRequest(t *testing.T) {
	srv := endpoint(t, "text")
	p, err := openai.NewProvider(openai.ProviderOptions{Options: openai.Options{BaseURL: srv.BaseURL(), APIKey: testKey}})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := profile.Parse([]byte(`{"harness":"cli-base","model":{"default":"openai/gpt-5.2"},"mcp":{"docs":{"url":"https://mcp.example.com"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = kernel.Execute(context.Background(), kernel.Request{Profile: prof, Task: "Say hello.", Provider: p, Store: memory.New(nil), Check: nonEmpty})
	if !errors.Is(err, kernel.ErrRefused) && !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("err %v", err)
	}
	if srv.Requests() != 0 {
		t.Errorf("%d requests", srv.Requests())
	}
}

// A call of a tool nobody offered is neither run nor lost: over either
// API the tool loop records it as ignored, in its result and in the run
// record.
func TestUnofferedToolCallIsRecorded(t *testing.T) {
	for _, tc := range []struct {
		api        openai.API
		transcript string
	}{{openai.APIChatCompletions, "tool_unoffered"}, {openai.APIResponses, "responses/tool_unoffered"}} {
		t.Run(string(tc.api), func(t *testing.T) {
			srv := endpoint(t, tc.transcript)
			m, err := openai.New(openai.Options{API: tc.api, BaseURL: srv.BaseURL(), APIKey: testKey, Model: "gpt-5.2"})
			if err != nil {
				t.Fatal(err)
			}
			st := memory.New(nil)
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, System: "Be brief.", User: "Say hello.", Store: st, RunID: "unoffered"})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Ignored) != 1 || res.Ignored[0].Name != "send_greeting" || res.Ignored[0].ID != "call_Gh01" || len(res.ToolResults) != 0 {
				t.Errorf("ignored %+v, results %+v; want the call of send_greeting ignored and nothing run", res.Ignored, res.ToolResults)
			}
			rec, err := kernel.ReadRun(context.Background(), st, "unoffered")
			if err != nil || rec.ToolLoop == nil {
				t.Fatalf("ReadRun: %v", err)
			}
			if n := rec.ToolLoop.IgnoredCalls; n == nil || *n != 1 {
				t.Errorf("the run record counts ignoredCalls %v, want 1", n)
			}
		})
	}
}
