package harness_test

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/internal/vectors"
)

func nullable(s string, ok bool) canonjson.Value {
	if !ok {
		return canonjson.NullValue()
	}
	return canonjson.StringValue(s)
}

func stringList[T ~string](xs []T) canonjson.Value {
	if xs == nil {
		return canonjson.NullValue()
	}
	items := make([]canonjson.Value, len(xs))
	for i, x := range xs {
		items[i] = canonjson.StringValue(string(x))
	}
	return canonjson.ArrayValue(items)
}

// TestFunctionVectors checks the reference's function vectors (checklist
// PRF-21 vocabulary; issue 2 function list).
func TestFunctionVectors(t *testing.T) {
	fns := map[string]func(args []canonjson.Value) canonjson.Value{
		"harnessSupportsModel": func(a []canonjson.Value) canonjson.Value {
			return canonjson.BoolValue(harness.SupportsModel(harness.Type(a[0].Str()), a[1].Str()))
		},
		"reasoningEffortsFor": func(a []canonjson.Value) canonjson.Value {
			var m *harness.ModelReasoning
			if len(a) > 1 && a[1].Kind() == canonjson.Object {
				m = &harness.ModelReasoning{}
				if s, ok := a[1].Get("supportsReasoning"); ok {
					b := s.Bool()
					m.SupportsReasoning = &b
				}
				if e, ok := a[1].Get("maxEffort"); ok {
					m.MaxEffort = harness.ReasoningEffort(e.Str())
				}
			}
			return stringList(harness.ReasoningEffortsFor(harness.Type(a[0].Str()), m))
		},
		"nativeReasoningControl": func(a []canonjson.Value) canonjson.Value {
			return nullable(harness.NativeReasoningControl(harness.Type(a[0].Str()), harness.ReasoningEffort(a[1].Str())))
		},
		"harnessProviders": func(a []canonjson.Value) canonjson.Value {
			return stringList(harness.Providers(harness.Type(a[0].Str())))
		},
		"modelProvider": func(a []canonjson.Value) canonjson.Value {
			return nullable(harness.ModelProvider(a[0].Str()))
		},
		"preferredHarnessForModel": func(a []canonjson.Value) canonjson.Value {
			h, ok := harness.PreferredHarnessForModel(a[0].Str())
			return nullable(string(h), ok)
		},
	}
	for name, fn := range fns {
		cases, err := vectors.LoadFunction(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) == 0 {
			t.Fatalf("%s: no cases", name)
		}
		for _, c := range cases {
			want, _ := c.Expect.Get("result")
			if got := fn(c.Args); !canonjson.Equal(got, want) {
				t.Errorf("%s(%s) = %s, want %s", name, canonjson.Marshal(canonjson.ArrayValue(c.Args)),
					canonjson.Marshal(got), canonjson.Marshal(want))
			}
		}
	}
}

func TestNativeReasoningControlSpecTable(t *testing.T) {
	// spec/profile.md H01.
	tests := []struct {
		h    harness.Type
		e    harness.ReasoningEffort
		want string
		ok   bool
	}{
		{harness.ClaudeCode, harness.EffortNone, "low", true},
		{harness.ClaudeCode, harness.EffortUltracode, "max", true},
		{harness.Codex, harness.EffortUltracode, "ultra", true},
		{harness.Pi, harness.EffortUltracode, "xhigh", true},
		{harness.Prime, harness.EffortUltracode, "max", true},
		{harness.KimiCode, harness.EffortMedium, "", false},
		{harness.KimiCode, harness.EffortLow, "--no-thinking", true},
		{harness.Gemini, harness.EffortHigh, "", false},
		{harness.OpenCode, harness.EffortMinimal, "minimal", true},
		{harness.Codex, "", "", false},
	}
	for _, tc := range tests {
		got, ok := harness.NativeReasoningControl(tc.h, tc.e)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NativeReasoningControl(%s, %q) = %q, %v", tc.h, tc.e, got, ok)
		}
	}
}

func TestResolveModelProvider(t *testing.T) {
	// spec/profile.md H02.
	tests := map[string]string{
		"o3": "openai", "o3-mini": "openai", "o": "", "GLM-5.3": "zai", "default": "", "/x": "",
		"claude-opus-5-5": "anthropic", "gpt-6-sol": "openai", "kimi-k3": "moonshot",
		"gemini-3": "google", "deepseek-v4": "deepseek", "grok-5": "xai", "openai/gpt-6-sol": "openai",
		"o3x": "", "chatgpt-4o": "openai", "codex-mini": "openai", "moonshot-v1": "moonshot",
	}
	for id, want := range tests {
		got, ok := harness.ResolveModelProvider(id)
		if got != want || ok != (want != "") {
			t.Errorf("ResolveModelProvider(%q) = %q, %v; want %q", id, got, ok, want)
		}
	}
}

func TestCheckModelSupport(t *testing.T) {
	// spec/profile.md H03 and the measured pi exclusions.
	tests := []struct {
		h         harness.Type
		model     string
		effort    harness.ReasoningEffort
		supported bool
		canonical string
	}{
		{harness.ClaudeCode, "glm-5.3", "", false, "zai/glm-5.3"},
		{harness.OpenCode, "glm-5.3", "", true, "zai/glm-5.3"},
		{harness.Pi, "google/gemini-3.8-flash", "", false, "google/gemini-3.8-flash"},
		{harness.Pi, "anthropic/claude-opus-5-5", harness.EffortHigh, false, "anthropic/claude-opus-5-5"},
		{harness.Pi, "anthropic/claude-opus-5-5", harness.EffortNone, true, "anthropic/claude-opus-5-5"},
		{harness.Pi, "anthropic/claude-opus-5-5", "", true, "anthropic/claude-opus-5-5"},
		{harness.Pi, "openai/gpt-5.6-luna", harness.EffortLow, false, "openai/gpt-5.6-luna"},
		{harness.Pi, "openai/gpt-5.6-luna", "", true, "openai/gpt-5.6-luna"},
		{harness.Codex, "gpt-6-sol", harness.EffortHigh, true, "openai/gpt-6-sol"},
		{harness.ClaudeCode, "openai/gpt-6-sol", "", false, "openai/gpt-6-sol"},
		{harness.ClaudeCode, "default", "", true, "default"},
	}
	for _, tc := range tests {
		got := harness.CheckModelSupport(tc.h, tc.model, tc.effort)
		if got.Supported != tc.supported || got.CanonicalModel != tc.canonical {
			t.Errorf("CheckModelSupport(%s, %q, %q) = %+v", tc.h, tc.model, tc.effort, got)
		}
		if !got.Supported && got.Message == "" {
			t.Errorf("CheckModelSupport(%s, %q): refusal without a message", tc.h, tc.model)
		}
	}
}

func TestSnapping(t *testing.T) {
	if got := harness.SnapHarnessToModel(harness.Codex, "anthropic/claude-opus-5-5"); got != harness.ClaudeCode {
		t.Errorf("SnapHarnessToModel = %s", got)
	}
	if got := harness.SnapHarnessToModel(harness.Codex, "google/gemini-3"); got != harness.OpenCode {
		t.Errorf("SnapHarnessToModel = %s", got)
	}
	candidates := []string{"openai/gpt-9", "anthropic/claude-sonnet-5", "anthropic/claude-opus-4-5", "anthropic/claude-opus-10-1"}
	if got := harness.SnapModelToHarness(harness.ClaudeCode, "openai/gpt-9", candidates); got != "anthropic/claude-opus-10-1" {
		t.Errorf("SnapModelToHarness = %s", got)
	}
	if got := harness.SnapModelToHarness(harness.KimiCode, "openai/gpt-9", candidates); got != "openai/gpt-9" {
		t.Errorf("SnapModelToHarness without a fit = %s", got)
	}
}

func TestPromptIntents(t *testing.T) {
	for h, want := range map[harness.Type]harness.SystemPromptIntents{
		harness.ClaudeCode: {Replace: true, Append: true}, harness.Codex: {Replace: true},
		harness.OpenCode: {Append: true}, harness.CLIBase: {}, "": {}, "unknown": {},
	} {
		if got := harness.PromptIntents(h); got != want {
			t.Errorf("PromptIntents(%q) = %+v, want %+v", h, got, want)
		}
	}
}
