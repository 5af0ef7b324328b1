package anthropic

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
)

func TestNewModelRefusesInvalidOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"no model":          {},
		"relative base URL": {Model: "m", BaseURL: "api.anthropic.com"},
		"ftp base URL":      {Model: "m", BaseURL: "ftp://x"},
		"negative tokens":   {Model: "m", MaxTokens: -1},
		"negative wait":     {Model: "m", MaxRetryWait: -time.Second},
	} {
		if _, err := NewModel(o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err = %v, want ErrInvalidOptions", name, err)
		}
	}
}

func TestEffortMapping(t *testing.T) {
	no, yes := false, true
	for _, c := range []struct {
		effort    harness.ReasoningEffort
		reasoning *harness.ModelReasoning
		maxTokens int64
		budget    int64  // 0: no thinking parameter
		refused   string // non-empty: an *EffortError is expected
	}{
		{effort: "", budget: 0},
		{effort: "none", budget: 0},
		{effort: "none", reasoning: &harness.ModelReasoning{SupportsReasoning: &no}, budget: 0},
		{effort: "low", budget: 1024},
		{effort: "medium", maxTokens: 8192, budget: 4096},
		{effort: "high", maxTokens: 32000, budget: 16384},
		{effort: "xhigh", maxTokens: 64000, budget: 32768},
		{effort: "ultracode", maxTokens: 64000, budget: 63999},
		{effort: "ultracode", reasoning: &harness.ModelReasoning{SupportsReasoning: &yes}, maxTokens: 64000, budget: 63999},
		{effort: "minimal", refused: "cannot express"},
		{effort: "max", refused: "not on the reasoning ladder"},
		{effort: "high", refused: "needs max_tokens above 4096"},
		{effort: "low", reasoning: &harness.ModelReasoning{SupportsReasoning: &no}, refused: "does not reason"},
		{effort: "high", reasoning: &harness.ModelReasoning{MaxEffort: "medium"}, maxTokens: 32000, refused: "cannot express"},
	} {
		m, err := NewModel(Options{Model: "claude-x", Effort: c.effort, Reasoning: c.reasoning, MaxTokens: c.maxTokens})
		if c.refused != "" {
			var ee *EffortError
			if !errors.As(err, &ee) || ee.Effort != c.effort || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("effort %q: err = %v, want an EffortError saying %q", c.effort, err, c.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("effort %q: %v", c.effort, err)
			continue
		}
		if m.budget != c.budget {
			t.Errorf("effort %q: budget %d, want %d", c.effort, m.budget, c.budget)
		}
		p := m.params(nil, nil)
		if on := p.Thinking.OfEnabled != nil; on != (c.budget > 0) {
			t.Errorf("effort %q: thinking parameter sent = %v", c.effort, on)
		}
	}
}

func TestRequestShape(t *testing.T) {
	m, err := NewModel(Options{Model: "claude-x"})
	if err != nil {
		t.Fatal(err)
	}
	s := func(x string) *string { return &x }
	args, _ := canonjson.Decode([]byte(`{"q":"a"}`))
	msgs := []contract.ChatMessage{
		{Role: contract.ChatSystem, Content: s("First.")},
		{Role: contract.ChatSystem, Content: s("")},
		{Role: contract.ChatUser, Content: s("one")},
		{Role: contract.ChatUser, Content: s("two")},
		{Role: contract.ChatAssistant, ToolCalls: []contract.ToolCall{
			{ID: "t1", Name: "a", Args: args},
			{ID: "t2", Name: "b"},                                     // absent arguments
			{ID: "t3", Name: "c", Args: canonjson.StringValue("x")}}}, // not an object
		{Role: contract.ChatTool, ToolCallID: "t1", Content: s("r1")},
		{Role: contract.ChatTool, ToolCallID: "t2", Content: s("")},
		{Role: contract.ChatSystem, Content: s("Second.")},
		{Role: contract.ChatUser, Content: s("three")},
		{Role: contract.ChatAssistant, Content: s("  ")}, // nothing left: dropped
	}
	got, err := json.Marshal(m.params(msgs, []contract.Tool{{Name: "a"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"max_tokens":4096,"messages":[` +
		`{"content":[{"text":"one","type":"text"},{"text":"two","type":"text"}],"role":"user"},` +
		`{"content":[{"id":"t1","input":{"q":"a"},"name":"a","type":"tool_use"},{"id":"t2","input":{},"name":"b","type":"tool_use"},{"id":"t3","input":{},"name":"c","type":"tool_use"}],"role":"assistant"},` +
		`{"content":[{"tool_use_id":"t1","content":[{"text":"r1","type":"text"}],"type":"tool_result"},{"tool_use_id":"t2","type":"tool_result"},{"text":"three","type":"text"}],"role":"user"}],` +
		`"model":"claude-x","system":[{"text":"First.","type":"text"},{"text":"Second.","type":"text"}],` +
		`"tools":[{"input_schema":{"type":"object"},"name":"a"}]}`
	if string(got) != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"1e300"}}, 0},
	} {
		if got := retryAfter(c.h, now); got != c.want {
			t.Errorf("%v: %v, want %v", c.h, got, c.want)
		}
	}
}
