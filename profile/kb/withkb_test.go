package kb

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
)

func k01Input() *profile.Profile {
	return &profile.Profile{
		Name:    sp("worker"),
		Harness: harness.ClaudeCode,
		Model:   &profile.ModelHints{Default: sp("claude-opus-5-5")},
		Prompt:  &profile.Prompt{AppendSystemPrompt: sp("Cite the file you read.")},
	}
}

func shippedHarness(t *testing.T, h harness.Type) Harness {
	t.Helper()
	e, ok := shipped.harness(h)
	if !ok {
		t.Fatalf("no shipped entry for %s", h)
	}
	return e
}

// harnessBlockText is the block WithProfileKB writes for a harness entry.
func harnessBlockText(e Harness) string {
	return render(Block{Source: "harness", ID: string(e.ID), Text: "Harness guidance: " + e.Name + ".\n- " + strings.Join(e.Prompt(), "\n- ")})
}

// K01 (structure, with agentrt's own data): the harness block, then the
// profile's own text, joined with "\n\n", on the append channel; agentrt
// ships no model entry for claude-opus-5-5, so no model block. KB-13, KB-14.
func TestK01ShippedData(t *testing.T) {
	in := k01Input()
	before := canon(t, in)
	out := mustKB(t, in, Selection{})
	cc := shippedHarness(t, harness.ClaudeCode)
	if len(cc.Prompt()) == 0 {
		t.Fatal("claude-code ships no agent claim")
	}
	want := harnessBlockText(cc) + "\n\nCite the file you read."
	if diff := cmp.Diff(want, *out.Prompt.AppendSystemPrompt); diff != "" {
		t.Fatalf("appendSystemPrompt (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(want, "<profile-guidance source=\"harness\" id=\"claude-code\">\nHarness guidance: Claude Code.\n- ") {
		t.Fatalf("header format: %q", want)
	}
	if out.Prompt.Instructions != nil || out.Harness != harness.ClaudeCode || *out.Name != "worker" {
		t.Fatalf("unexpected fields: %s", canon(t, out))
	}
	if canon(t, in) != before {
		t.Fatal("input changed")
	}
	if _, err := profile.Digest(out); err != nil {
		t.Fatalf("composed profile has no digest: %v", err)
	}
}

// K01 (full order, with a synthetic fixture): harness block, model block,
// learning block, own text; headers "Harness guidance: <name>." and "Model
// guidance: <name>."; only agent, non-hypothesis claims become bullets.
// KB-09, KB-10, KB-13.
func TestK01Order(t *testing.T) {
	x := fixtureIndex(t)
	out, err := x.compose(k01Input(), Selection{})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"<profile-guidance source=\"harness\" id=\"claude-code\">\nHarness guidance: Harness A.\n- harness-agent-1\n- harness-agent-2\n</profile-guidance>",
		"<profile-guidance source=\"model\" id=\"claude-opus-5-5\">\nModel guidance: Model Five Five.\n- model-agent-1\n</profile-guidance>",
		"<profile-guidance source=\"learning\" id=\"l-harness,l-both\">\n- learning-harness\n- learning-both\n</profile-guidance>",
		"Cite the file you read.",
	}, "\n\n")
	if diff := cmp.Diff(want, *out.Prompt.AppendSystemPrompt); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// K02: WithProfileKB is idempotent, digest included. KB-15.
func TestK02Idempotent(t *testing.T) {
	once := mustKB(t, k01Input(), Selection{})
	twice := mustKB(t, once, Selection{})
	if diff := cmp.Diff(canon(t, once), canon(t, twice)); diff != "" {
		t.Fatalf("(-once +twice):\n%s", diff)
	}
	d1, err1 := profile.Digest(once)
	d2, err2 := profile.Digest(twice)
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Fatalf("digests %s (%v) and %s (%v)", d1, err1, d2, err2)
	}
}

// K03 (structure, shipped data): an executor override to a harness without
// an append control moves guidance to instructions, replaces the old
// blocks, keeps the profile's harness, and keeps an emptied array as [].
// KB-14, KB-16.
func TestK03Override(t *testing.T) {
	k01 := mustKB(t, k01Input(), Selection{})
	codex := shippedHarness(t, harness.Codex)
	out := mustKB(t, k01, Selection{Harness: harness.Codex, Model: "claude-opus-5-5"})
	want := `{"harness":"claude-code","model":{"default":"claude-opus-5-5"},"name":"worker","prompt":{"appendSystemPrompt":"Cite the file you read.","instructions":[` +
		quote(harnessBlockText(codex)) + `]}}`
	if diff := cmp.Diff(want, canon(t, out)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// Stable for the same override.
	if again := mustKB(t, out, Selection{Harness: harness.Codex, Model: "claude-opus-5-5"}); canon(t, again) != canon(t, out) {
		t.Fatal("override recomposition not stable")
	}
	// A harness with neither an entry nor an append control: the old block
	// goes and the array stays, empty.
	empty := mustKB(t, out, Selection{Harness: harness.Gemini, Model: "gpt-6.1-sol"})
	want = `{"harness":"claude-code","model":{"default":"claude-opus-5-5"},"name":"worker","prompt":{"appendSystemPrompt":"Cite the file you read.","instructions":[]}}`
	if diff := cmp.Diff(want, canon(t, empty)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// Back to the profile's own harness gives the K01 result again.
	// (the emptied instructions array stays present).
	back := mustKB(t, empty, Selection{})
	if diff := cmp.Diff(canon(t, withInstructions(k01, []string{})), canon(t, back)); diff != "" {
		t.Fatalf("back to claude-code (-want +got):\n%s", diff)
	}
}

func withInstructions(p *profile.Profile, lines []string) *profile.Profile {
	c, _ := profile.Clone(p)
	c.Prompt.Instructions = lines
	return c
}

// K03 with the fixture: the model block follows the override to the
// instructions channel, and a model override replaces the model block.
func TestK03OverrideFixture(t *testing.T) {
	x := fixtureIndex(t)
	k01, err := x.compose(k01Input(), Selection{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := x.compose(k01, Selection{Harness: harness.Codex, Model: "claude-opus-5-5"})
	if err != nil {
		t.Fatal(err)
	}
	model := render(Block{Source: "model", ID: "claude-opus-5-5", Text: "Model guidance: Model Five Five.\n- model-agent-1"})
	if diff := cmp.Diff([]string{model}, out.Prompt.Instructions); diff != "" {
		t.Fatalf("instructions (-want +got):\n%s", diff)
	}
	if *out.Prompt.AppendSystemPrompt != "Cite the file you read." || out.Harness != harness.ClaudeCode {
		t.Fatalf("got %s", canon(t, out))
	}
	sol, err := x.compose(out, Selection{Harness: harness.Codex, Model: "gpt-6.1-sol"})
	if err != nil {
		t.Fatal(err)
	}
	want := render(Block{Source: "learning", ID: "l-other-model", Text: "- learning-sol"})
	if diff := cmp.Diff([]string{want}, sol.Prompt.Instructions); diff != "" {
		t.Fatalf("instructions (-want +got):\n%s", diff)
	}
}

// K04: unknown harness and model names add nothing; the profile comes back
// deep-equal.
func TestK04UnknownNames(t *testing.T) {
	for _, in := range []*profile.Profile{
		{Harness: harness.Amp, Model: &profile.ModelHints{Default: sp("amp-model")}},
		{Name: sp("bare")},
	} {
		out := mustKB(t, in, Selection{})
		if diff := cmp.Diff(canon(t, in), canon(t, out)); diff != "" {
			t.Errorf("(-in +out):\n%s", diff)
		}
	}
}

// K05: model name matching (spec H.2 step 3), on the fixture table (which
// holds claude-opus-5-5 with an alias) and on the shipped table.
func TestK05ModelNames(t *testing.T) {
	x := fixtureIndex(t)
	tests := []struct {
		name string
		want string
	}{
		{"claude-opus-5-5", "claude-opus-5-5"},
		{"anthropic/claude-opus-5-5", "claude-opus-5-5"},
		{"anthropic.claude-opus-5-5", "claude-opus-5-5"},
		{"pi/tangle-router/anthropic/claude-opus-5-5", "claude-opus-5-5"},
		{"claude-opus-5-5:high", "claude-opus-5-5"},
		{"  Claude-Opus-5-5\t", "claude-opus-5-5"},
		{"ANTHROPIC/CLAUDE-OPUS-5-5:batch", "claude-opus-5-5"},
		{"x/anthropic.claude-opus-5-5:a:b", ""}, // only the last ':' is cut: "x/anthropic.claude-opus-5-5:a"
		{"claude-opus-5", ""},
		{"claude-opus-5-6", ""},
		{":claude-opus-5-5", ""}, // a colon at index 0 is not cut
		{"claude-opus-5-5/", ""},
		{"", ""},
		{"gpt-6.1-sol", "gpt-6.1-sol"},
	}
	for _, tc := range tests {
		m, ok := x.model(tc.name)
		if got := m.ID; ok != (tc.want != "") || got != tc.want {
			t.Errorf("fixture model(%q) = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
	shippedTests := []struct {
		name string
		want string
	}{
		{"gpt-6.1-sol", "gpt-6.1-sol"},
		{"openai/gpt-6.1-sol", "gpt-6.1-sol"},
		{"GPT-6.1-Sol:high", "gpt-6.1-sol"},
		{"pi/tangle-router/openai/gpt-5.5", "gpt-5.5"},
		{"anthropic/claude-fable-5", "claude-fable-5"},
		{"gpt-6.1", ""},
		{"gpt-5.5-pro", ""},
		{"claude-opus-5-5", ""},
		{"\u0130", ""},
	}
	for _, tc := range shippedTests {
		m, ok := shipped.model(tc.name)
		if got := m.ID; ok != (tc.want != "") || got != tc.want {
			t.Errorf("shipped model(%q) = %q, %v; want %q", tc.name, got, ok, tc.want)
		}
	}
	// The block id is the entry id, whatever spelling found it.
	out, err := x.compose(&profile.Profile{Harness: harness.Codex}, Selection{Model: "pi/tangle-router/anthropic/claude-opus-5-5:high"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Prompt.Instructions) != 1 || !strings.HasPrefix(out.Prompt.Instructions[0], "<profile-guidance source=\"model\" id=\"claude-opus-5-5\">\n") {
		t.Fatalf("instructions: %q", out.Prompt.Instructions)
	}
}

func TestJSLower(t *testing.T) {
	tests := map[string]string{
		"ABC-def":   "abc-def",
		"\u212A":    "k", // Kelvin sign lower-cases to ASCII k in JavaScript too
		"\u0130":    "i\u0307",
		"\xff\xfeA": "\xff\xfea",
	}
	for in, want := range tests {
		if got := jsLower(in); got != want {
			t.Errorf("jsLower(%q) = %q, want %q", in, got, want)
		}
	}
}

// KB-09, KB-10, KB-11: operator notes and hypotheses never reach a composed
// profile, and an entry without agent claims contributes no block.
func TestOperatorAndHypothesisNeverComposed(t *testing.T) {
	check := func(t *testing.T, x *index, d Data) {
		var forbidden []string
		for _, h := range d.Harnesses {
			for _, c := range h.Claims {
				if c.Audience == AudienceOperator || c.Basis == BasisHypothesis {
					forbidden = append(forbidden, c.Text)
				}
			}
		}
		for _, m := range d.Models {
			for _, c := range m.Claims {
				if c.Audience == AudienceOperator || c.Basis == BasisHypothesis {
					forbidden = append(forbidden, c.Text)
				}
			}
		}
		for _, h := range append(harness.All(), "") {
			for _, m := range append(modelNames(d), "", "unknown") {
				for _, in := range []*profile.Profile{{}, k01Input()} {
					out, err := x.compose(in, Selection{Harness: h, Model: m})
					if err != nil {
						t.Fatal(err)
					}
					text := canon(t, out)
					for _, f := range forbidden {
						if strings.Contains(text, quoteBody(f)) {
							t.Fatalf("%s/%s: composed profile contains %q", h, m, f)
						}
					}
				}
			}
		}
	}
	t.Run("fixture", func(t *testing.T) { check(t, fixtureIndex(t), fixtureData()) })
	t.Run("shipped", func(t *testing.T) { check(t, shipped, Snapshot()) })

	// codex in the fixture has only an operator claim: no harness block.
	x := fixtureIndex(t)
	out, err := x.compose(&profile.Profile{Harness: harness.Codex}, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Prompt != nil {
		t.Fatalf("operator-only harness composed %s", canon(t, out))
	}
	// opencode ships no agent claim: no block, and no prompt written.
	if out := mustKB(t, &profile.Profile{Harness: harness.OpenCode}, Selection{}); out.Prompt != nil {
		t.Fatalf("opencode composed %s", canon(t, out))
	}
}

func modelNames(d Data) []string {
	var out []string
	for _, m := range d.Models {
		out = append(out, m.ID)
		out = append(out, m.Aliases...)
	}
	return out
}

func quoteBody(s string) string { q := quote(s); return q[1 : len(q)-1] }

// KB-19: the kb keeps other layers' blocks; KB-21: a hand-written block
// with a kb source is replaced.
func TestKBKeepsOtherLayers(t *testing.T) {
	team := render(Block{Source: "team", ID: "t", Text: "team rule"})
	forged := render(Block{Source: "model", ID: "by-hand", Text: "hand-written"})
	in := &profile.Profile{Harness: harness.ClaudeCode, Prompt: &profile.Prompt{
		AppendSystemPrompt: sp(team + "\n\n" + forged + "\n\nown"),
		Instructions:       []string{forged, "keep"},
	}}
	out := mustKB(t, in, Selection{})
	want := harnessBlockText(shippedHarness(t, harness.ClaudeCode)) + "\n\n" + team + "\n\nown"
	if diff := cmp.Diff(want, *out.Prompt.AppendSystemPrompt); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"keep"}, out.Prompt.Instructions); diff != "" {
		t.Fatalf("instructions (-want +got):\n%s", diff)
	}
}

// KB-34: the learning selector matches harness and model only; a learning
// needs at least one scope field, and every set field must match.
func TestLearningSelector(t *testing.T) {
	x := fixtureIndex(t)
	cc, _ := x.harness(harness.ClaudeCode)
	opus, _ := x.model("claude-opus-5-5")
	sol, _ := x.model("gpt-6.1-sol")
	ids := func(ls []Learning) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.ID)
		}
		return out
	}
	tests := []struct {
		name string
		h    *Harness
		m    *Model
		want []string
	}{
		{"harness and model", &cc, &opus, []string{"l-harness", "l-both"}},
		{"harness only", &cc, nil, []string{"l-harness"}},
		{"model only", nil, &sol, []string{"l-other-model"}},
		{"harness with other model", &cc, &sol, []string{"l-harness", "l-other-model"}},
		{"nothing", nil, nil, nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, ids(x.learningsFor(tc.h, tc.m))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestWithProfileKBNil(t *testing.T) {
	if _, err := WithProfileKB(nil, Selection{}); err != ErrNilProfile {
		t.Fatalf("err = %v", err)
	}
}
