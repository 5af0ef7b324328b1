package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/tools"
)

type cityIn struct {
	City string `json:"city"`
}

func weatherTool(runs *atomic.Int64) contract.Tool {
	return tools.Must(tools.NewTool("weather", "The weather in a city.", func(ctx context.Context, in cityIn) (string, error) {
		runs.Add(1)
		return "rain in " + in.City, nil
	}))
}

// A profile's tools map and the Go tools given must match exactly, and a
// profile declaring what the loop cannot honour is refused: each before
// the model is called or anything is recorded, naming what.
func TestProfileToolLoopRefusals(t *testing.T) {
	var runs atomic.Int64
	weather, stock := weatherTool(&runs), echoTool("stock", &runs)
	tests := []struct {
		name    string
		profile string
		tools   []contract.Tool
		opts    func(*kernel.ToolLoopOptions)
		field   string
		problem string
	}{
		{"a declared tool without a Go tool", `{"tools":{"weather":true,"read_file":true}}`, []contract.Tool{weather},
			nil, "Tools", "declares tool read_file, and no tool of that name was given"},
		{"a Go tool the profile does not declare", `{"tools":{"weather":true}}`, []contract.Tool{weather, stock},
			nil, "Tools[1]", "does not declare tool stock"},
		{"a Go tool the profile turns off", `{"tools":{"weather":true,"stock":false}}`, []contract.Tool{weather, stock},
			nil, "Tools[1]", "turns tool stock off"},
		{"Go tools and no tools map", `{"name":"bare"}`, []contract.Tool{weather},
			nil, "Tools[0]", "does not declare tool weather"},
		{"MCP servers", `{"tools":{"weather":true},"mcp":{"docs":{"url":"https://mcp.example.com"}}}`, []contract.Tool{weather},
			nil, "Profile", "/mcp"},
		{"another harness", `{"harness":"claude-code","tools":{"weather":true}}`, []contract.Tool{weather},
			nil, "Profile", "harness claude-code"},
		{"permissions", `{"tools":{"weather":true},"permissions":{"bash":"deny"}}`, []contract.Tool{weather},
			nil, "Profile", "/permissions"},
		{"a reasoning effort", `{"tools":{"weather":true},"model":{"default":"openai/gpt-5.2","reasoningEffort":"high"}}`, []contract.Tool{weather},
			nil, "Profile", "/model/reasoningEffort"},
		{"System beside a profile", `{"tools":{"weather":true}}`, []contract.Tool{weather},
			func(o *kernel.ToolLoopOptions) { o.System = "Be brief." }, "System", "the profile gives the system prompt"},
		{"RequestedModel beside a profile", `{"tools":{"weather":true}}`, []contract.Tool{weather},
			func(o *kernel.ToolLoopOptions) { o.RequestedModel = "gpt-5.2" }, "RequestedModel", "the profile names the model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := model(answer("never"))
			st := memory.New(nil)
			o := kernel.ToolLoopOptions{Model: m, User: "go", Profile: mustProfile(t, tc.profile), Tools: tc.tools, Store: st}
			if tc.opts != nil {
				tc.opts(&o)
			}
			res, err := kernel.RunToolLoop(context.Background(), o)
			if res != nil || !errors.Is(err, kernel.ErrInvalidOptions) {
				t.Fatalf("result %v, err %v; want ErrInvalidOptions and no result", res, err)
			}
			if !hasOptionsError(err, tc.field, tc.problem) {
				t.Errorf("err %v; want an *OptionsError on %s saying %q", err, tc.field, tc.problem)
			}
			if m.Calls() != 0 || runs.Load() != 0 {
				t.Errorf("the model was called %d times, tools ran %d times", m.Calls(), runs.Load())
			}
			if rs, err := st.ListRuns(context.Background(), store.ListOptions{}); err != nil || len(rs) != 0 {
				t.Errorf("recorded %d runs (%v)", len(rs), err)
			}
		})
	}
}

// An invalid profile built in Go is refused as such.
func TestProfileToolLoopRefusesInvalidProfile(t *testing.T) {
	m := model(answer("never"))
	_, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{Model: m, Profile: &profile.Profile{Harness: "no-such-harness"}})
	if !hasOptionsError(err, "Profile", "invalid") || m.Calls() != 0 {
		t.Errorf("err %v, %d model calls", err, m.Calls())
	}
}

func hasOptionsError(err error, field, problem string) bool {
	var all []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	} else {
		all = []error{err}
	}
	for _, e := range all {
		if oe, ok := errors.AsType[*kernel.OptionsError](e); ok && oe.Field == field && strings.Contains(oe.Problem, problem) {
			return true
		}
	}
	return false
}

// A profile runs through the tool loop: its system message and model are
// the loop's, its declared tools are offered and run, and the run's
// record names the profile; a turn served by another model than the
// profile's fails the loop.
func TestProfileToolLoopRuns(t *testing.T) {
	const doc = `{"name":"forecaster","harness":"cli-base",
		"prompt":{"systemPrompt":"You forecast.","appendSystemPrompt":"Be brief."},
		"model":{"provider":"openai","default":"openai/gpt-5.2"},
		"tools":{"weather":true,"read_file":false}}`
	for _, tc := range []struct {
		served string
		stop   kernel.StopReason
		status store.Status
	}{{"gpt-5.2", kernel.StopCompleted, store.StatusCompleted}, {"gpt-4o", kernel.StopFailed, store.StatusFailed}} {
		t.Run("served "+tc.served, func(t *testing.T) {
			var runs atomic.Int64
			p := mustProfile(t, doc)
			expect := func(msgs []contract.ChatMessage, offered []contract.Tool) error {
				if msgs[0].Role != contract.ChatSystem || *msgs[0].Content != "You forecast.\n\nBe brief." {
					return fmt.Errorf("system message %+v", msgs[0])
				}
				if len(offered) != 1 || offered[0].Name != "weather" {
					return fmt.Errorf("offered %d tools", len(offered))
				}
				return nil
			}
			m := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				{Expect: expect, Events: []contract.ChatEvent{scripted.Served(tc.served), scripted.Call("c1", "weather", `{"city":"Oslo"}`)}},
				{Expect: expect, Events: []contract.ChatEvent{scripted.Served(tc.served), scripted.Text("Rain.")}},
			}})
			st := memory.New(nil)
			res, err := kernel.RunToolLoop(context.Background(), kernel.ToolLoopOptions{
				Model: m, Profile: p, User: "Oslo?", Tools: []contract.Tool{weatherTool(&runs)}, Store: st, RunID: "forecast"})
			if res == nil {
				t.Fatalf("no result: %v", err)
			}
			if res.StopReason != tc.stop || (err == nil) != (tc.status == store.StatusCompleted) {
				t.Errorf("stop %s, err %v; want %s", res.StopReason, err, tc.stop)
			}
			if want := int64(map[bool]int{true: 1}[tc.status == store.StatusCompleted]); runs.Load() != want {
				t.Errorf("the tool ran %d times, want %d", runs.Load(), want)
			}
			rec, err := kernel.ReadRun(context.Background(), st, "forecast")
			if err != nil || rec.ToolLoop == nil {
				t.Fatalf("ReadRun: %v", err)
			}
			digest, _ := profile.Digest(p)
			if rec.Status != tc.status || rec.ToolLoop.ProfileDigest != digest || rec.ToolLoop.RequestedModel != "openai/gpt-5.2" ||
				rec.ToolLoop.System != "You forecast.\n\nBe brief." {
				t.Errorf("recorded %s, profile %q, model %q, system %q", rec.Status, rec.ToolLoop.ProfileDigest, rec.ToolLoop.RequestedModel, rec.ToolLoop.System)
			}
		})
	}
}
