package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// define_analyst's names and bounds are the reference's
// (ANALYST_DEFINITION_BOUNDS and parseAuthoredAnalystDefinition of
// tangle-network/agent-runtime; the seeds say nothing of them and §9
// lists the same values): text is measured trimmed, in UTF-16 code
// units, and refused past its bound; the investigation limits are
// limits.{maxIterations, maxLlmCalls, maxToolCalls, maxOutputChars} and
// minimumEvidenceCitations, each a positive integer clamped to its
// bound rather than refused. Each bound is tried at the limit and one
// past it.
func TestDefineAnalystBoundsMatchReference(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	emoji := func(n int) string { return strings.Repeat("\U0001F600", n) } // 2 UTF-16 units each
	type want struct {
		pointer string // "" = accepted
		check   func(l supervise.Lens) bool
	}
	accepted := want{}
	limit := func(key string, get func(*supervise.LensLimits) *int, n int) want {
		return want{check: func(l supervise.Lens) bool { return l.Limits != nil && get(l.Limits) != nil && *get(l.Limits) == n }}
	}
	iters := func(m *supervise.LensLimits) *int { return m.Iterations }
	llm := func(m *supervise.LensLimits) *int { return m.LLMCalls }
	tools := func(m *supervise.LensLimits) *int { return m.ToolCalls }
	out := func(m *supervise.LensLimits) *int { return m.OutputChars }
	cites := func(n int) want {
		return want{check: func(l supervise.Lens) bool {
			return l.MinimumEvidenceCitations != nil && *l.MinimumEvidenceCitations == n
		}}
	}
	tests := []struct {
		name string
		edit func(m map[string]any)
		want want
	}{
		{"id 64", func(m map[string]any) { m["id"] = "a" + x(63) }, accepted},
		{"id 65", func(m map[string]any) { m["id"] = "a" + x(64) }, want{pointer: "/id"}},
		{"id 2", func(m map[string]any) { m["id"] = "ab" }, accepted},
		{"id 1", func(m map[string]any) { m["id"] = "a" }, want{pointer: "/id"}},
		{"description 300", func(m map[string]any) { m["description"] = x(300) }, accepted},
		{"description 301", func(m map[string]any) { m["description"] = x(301) }, want{pointer: "/description"}},
		{"description 150 emoji", func(m map[string]any) { m["description"] = emoji(150) }, accepted},
		{"description 151 emoji", func(m map[string]any) { m["description"] = emoji(151) }, want{pointer: "/description"}},
		{"description 300 padded", func(m map[string]any) { m["description"] = "  " + x(300) + "\n" },
			want{check: func(l supervise.Lens) bool { return l.Description == x(300) }}},
		{"area 64", func(m map[string]any) { m["area"] = x(64) }, accepted},
		{"area 65", func(m map[string]any) { m["area"] = x(65) }, want{pointer: "/area"}},
		{"question 1000", func(m map[string]any) { m["question"] = x(1000) }, accepted},
		{"question 1001", func(m map[string]any) { m["question"] = x(1001) }, want{pointer: "/question"}},
		{"instructions 20000", func(m map[string]any) { m["instructions"] = x(20000) }, accepted},
		{"instructions 20001", func(m map[string]any) { m["instructions"] = x(20001) }, want{pointer: "/instructions"}},
		{"model 128", func(m map[string]any) { m["model"] = x(128) }, accepted},
		{"model 129", func(m map[string]any) { m["model"] = x(129) }, want{pointer: "/model"}},
		{"model blank", func(m map[string]any) { m["model"] = "   " }, want{pointer: "/model"}},
		{"maxIterations 24", func(m map[string]any) { m["limits"] = map[string]any{"maxIterations": 24} }, limit("maxIterations", iters, 24)},
		{"maxIterations 25 clamps", func(m map[string]any) { m["limits"] = map[string]any{"maxIterations": 25} }, limit("maxIterations", iters, 24)},
		{"maxIterations 0", func(m map[string]any) { m["limits"] = map[string]any{"maxIterations": 0} }, want{pointer: "/limits/maxIterations"}},
		{"maxLlmCalls 16", func(m map[string]any) { m["limits"] = map[string]any{"maxLlmCalls": 16} }, limit("maxLlmCalls", llm, 16)},
		{"maxLlmCalls 17 clamps", func(m map[string]any) { m["limits"] = map[string]any{"maxLlmCalls": 17} }, limit("maxLlmCalls", llm, 16)},
		{"maxLlmCalls 0", func(m map[string]any) { m["limits"] = map[string]any{"maxLlmCalls": 0} }, want{pointer: "/limits/maxLlmCalls"}},
		{"maxToolCalls 96", func(m map[string]any) { m["limits"] = map[string]any{"maxToolCalls": 96} }, limit("maxToolCalls", tools, 96)},
		{"maxToolCalls 97 clamps", func(m map[string]any) { m["limits"] = map[string]any{"maxToolCalls": 97} }, limit("maxToolCalls", tools, 96)},
		{"maxOutputChars 20000", func(m map[string]any) { m["limits"] = map[string]any{"maxOutputChars": 20000} }, limit("maxOutputChars", out, 20000)},
		{"maxOutputChars 20001 clamps", func(m map[string]any) { m["limits"] = map[string]any{"maxOutputChars": 20001} }, limit("maxOutputChars", out, 20000)},
		{"old limit name", func(m map[string]any) { m["limits"] = map[string]any{"iterations": 3} }, want{pointer: "/limits"}},
		{"citations 10", func(m map[string]any) { m["minimumEvidenceCitations"] = 10 }, cites(10)},
		{"citations 11 clamps", func(m map[string]any) { m["minimumEvidenceCitations"] = 11 }, cites(10)},
		{"citations 1", func(m map[string]any) { m["minimumEvidenceCitations"] = 1 }, cites(1)},
		{"citations 0", func(m map[string]any) { m["minimumEvidenceCitations"] = 0 }, want{pointer: "/minimumEvidenceCitations"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := referenceLens()
			tt.edit(m)
			doc, _ := json.Marshal(m)
			l, err := supervise.DecodeLens(doc)
			if tt.want.pointer != "" {
				var le *supervise.LensError
				if !errors.As(err, &le) || le.Pointer != tt.want.pointer {
					t.Fatalf("DecodeLens = %+v, %v; want a *LensError at %s", l, err, tt.want.pointer)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeLens: %v", err)
			}
			if tt.want.check != nil && !tt.want.check(l) {
				t.Errorf("accepted lens %+v (limits %+v)", l, l.Limits)
			}
		})
	}
}

// A refused definition names every reason at once (the reference's
// issues), not the first only.
func TestDefineAnalystNamesEveryIssue(t *testing.T) {
	m := referenceLens()
	m["id"], m["description"], m["toolGroup"] = "Not A Valid Id", "", "everything"
	doc, _ := json.Marshal(m)
	_, err := supervise.DecodeLens(doc)
	var le *supervise.LensError
	if !errors.As(err, &le) {
		t.Fatalf("DecodeLens: %v", err)
	}
	if got := lensIssuePointers(le); strings.Join(got, " ") != "/id /description /toolGroup" {
		t.Errorf("issues %v, want /id /description /toolGroup", le.Issues)
	}
}

// The verb's refusals carry the reference's codes: invalid-definition,
// duplicate-analyst (naming the lens already on the menu), and
// max-defined-analysts once a manager defined its eight.
func TestDefineAnalystRefusalCodesMatchReference(t *testing.T) {
	o := baseOptions(t, analystExecutor(t), nil)
	got := map[string]map[string]any{}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		bad := referenceLens()
		bad["toolGroup"] = "everything"
		got["invalid"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, bad)
		dup := referenceLens()
		dup["id"] = "failure-triage"
		got["duplicate"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, dup)
		clamp := referenceLens()
		clamp["id"], clamp["limits"] = "clamp-lens", map[string]any{"maxLlmCalls": 999}
		got["clamped"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, clamp)
		for i := range supervise.MaxDefinedLenses - 1 {
			l := referenceLens()
			l["id"] = "lens-" + string(rune('a'+i))
			got["define"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, l)
		}
		over := referenceLens()
		over["id"] = "one-too-many"
		got["full"] = tool(t, ctx, c, supervise.VerbDefineAnalyst, over)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if got["invalid"]["error"] != "invalid-definition" || !strings.Contains(got["invalid"]["reason"].(string), "toolGroup") {
		t.Errorf("invalid: %v", got["invalid"])
	}
	if got["duplicate"]["error"] != "duplicate-analyst" || !strings.Contains(got["duplicate"]["reason"].(string), "Why a worker failed") {
		t.Errorf("duplicate: %v", got["duplicate"])
	}
	if got["define"]["defined"] != true || got["full"]["error"] != "max-defined-analysts" ||
		!strings.Contains(got["full"]["reason"].(string), "run the ones you have") {
		t.Errorf("eighth define %v, ninth %v", got["define"], got["full"])
	}
	// A limit past its bound is clamped, and the reply says what was accepted.
	if lim, _ := got["clamped"]["limits"].(map[string]any); lim["maxLlmCalls"] != 16.0 {
		t.Errorf("clamped: %v", got["clamped"])
	}
}

func referenceLens() map[string]any {
	return map[string]any{"id": "handoff-loss", "description": "Did a worker lose context its parent established?", "area": "coordination",
		"question": "Where did a child re-derive a fact its parent gave it?", "instructions": "Read every span; cite one.",
		"toolGroup": "discoveryAndRead"}
}

func lensIssuePointers(le *supervise.LensError) []string {
	var out []string
	for _, is := range le.Issues {
		out = append(out, is.Pointer)
	}
	return out
}
