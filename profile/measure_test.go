package profile_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
)

const m1 = `{"name":"m1",
 "prompt":{"systemPrompt":"a\r\nb\rc\n","appendSystemPrompt":"","instructions":["x","\n\n","é😀"]},
 "tools":{"Bash":true,"Write":false,"Read":true},
 "mcp":{"docs":{"url":"https://mcp.example.com/sse","transport":"sse"},"off":{"enabled":false}},
 "subagents":{"reviewer":{"description":"r"}},
 "resources":{"files":[{"path":"notes/a.md","resource":{"kind":"inline","name":"a","content":"one\ntwo"}}],
              "skills":[{"kind":"github","repository":"o/r","path":"skills/x/SKILL.md","ref":"main"}],
              "instructions":"Be brief.\n"}}`

func intp(i int) *int { return &i }

// spec/profile.md D01 (example M1); checklist MSR-01..MSR-11, MSR-15, MSR-16.
func TestMeasure(t *testing.T) {
	m, err := profile.Measure(mustParse(t, m1))
	if err != nil {
		t.Fatal(err)
	}
	want := &profile.Measurements{
		Version: 1, Basis: "profile-declaration",
		ProfileDigest:  "sha256:8d4aa72d582aef437dabd1c559050bb226e1b5f480117c2675eed7e8f0ccf303",
		CanonicalBytes: 526,
		Prompt: []profile.TextRow{
			{Path: "/prompt/systemPrompt", Bytes: 7, Lines: 3},
			{Path: "/prompt/appendSystemPrompt", Bytes: 0, Lines: 0},
			{Path: "/prompt/instructions/0", Bytes: 1, Lines: 1},
			{Path: "/prompt/instructions/1", Bytes: 2, Lines: 2},
			{Path: "/prompt/instructions/2", Bytes: 6, Lines: 1},
		},
		Tools:     profile.Declarations{Declared: 3, Enabled: 2, Disabled: 1},
		MCP:       profile.Declarations{Declared: 2, Enabled: 1, Disabled: 1},
		Subagents: profile.SubagentCount{Declared: 1},
		Resources: []profile.ResourceRow{
			{Path: "/resources/files/0/resource", Kind: "inline", Name: profile.Ptr("a"), Bytes: intp(7), Lines: intp(2)},
			{Path: "/resources/skills/0", Kind: "github"},
			{Path: "/resources/instructions", Kind: "inline", Bytes: intp(10), Lines: intp(1)},
		},
		Coverage: profile.Coverage{Tokens: "not-measured", Materialization: "not-assessed", Usage: "not-assessed"},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("Measure(M1) mismatch (-want +got):\n%s", diff)
	}
	// MSR-10: unknown sizes are explicit nulls in JSON, never 0 or absent.
	v, err := canonjson.ToValue(m)
	if err != nil {
		t.Fatal(err)
	}
	row, _ := canonjson.Resolve(v, "/resources/1")
	if b, ok := row.Get("bytes"); !ok || b.Kind() != canonjson.Null {
		t.Errorf("github row bytes = %s", canonjson.Marshal(row))
	}
	if _, ok := row.Get("name"); ok {
		t.Error("D03: a github row without a name got one")
	}
	// MSR-09: every row pointer resolves inside the profile.
	pv, _ := canonjson.Decode([]byte(m1))
	for _, r := range m.Resources {
		if _, ok := canonjson.Resolve(pv, r.Path); !ok {
			t.Errorf("row pointer %s does not resolve", r.Path)
		}
	}
	for _, r := range m.Prompt {
		if _, ok := canonjson.Resolve(pv, r.Path); !ok {
			t.Errorf("row pointer %s does not resolve", r.Path)
		}
	}
}

// spec/profile.md D02.
func TestLogicalLines(t *testing.T) {
	for s, want := range map[string]int{"": 0, "x": 1, "x\n": 1, "\n": 1, "\n\n": 2, "a\r\nb": 2, "a\n\rb": 3, "a\r": 1, "a\r\n": 1, "\r\r": 2} {
		if got := profile.LogicalLines(s); got != want {
			t.Errorf("LogicalLines(%q) = %d, want %d", s, got, want)
		}
	}
}

// Checklist MSR-11: the summary carries no prompt text, resource text,
// server configuration or secret reference.
func TestMeasureLeaksNothing(t *testing.T) {
	const marker = "MARKER-7f3a"
	p := mustParse(t, strings.ReplaceAll(`{"prompt":{"systemPrompt":"M","instructions":["M"]},
		"mcp":{"s":{"command":"node","args":[{"kind":"public","value":"M"}],"env":{"X":{"kind":"secret-ref","key":"M"}}},
		       "r":{"url":"https://M.example.com/","headers":{"H":{"kind":"public","value":"M"}}}},
		"permissions":{"M":"allow"},
		"resources":{"files":[{"path":"M","resource":{"kind":"inline","name":"n","content":"M"}}],"instructions":"M"}}`, "M", marker))
	m, err := profile.Measure(p)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := canonjson.ToValue(m)
	if out := string(canonjson.Marshal(v)); strings.Contains(out, marker) {
		t.Errorf("measurement leaks declared text: %s", out)
	}
}
