package kb

import (
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

func sp(s string) *string { return &s }

// canon is p's canonical JSON without schema validation, so presence ("" and
// [] against absent) shows in comparisons.
func canon(t testing.TB, p *profile.Profile) string {
	t.Helper()
	if p == nil {
		return "<nil>"
	}
	v, err := canonjson.ToValue(p)
	if err != nil {
		t.Fatalf("ToValue: %v", err)
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	return string(b)
}

func mustCompose(t testing.TB, p *profile.Profile, blocks []Block, ch Channel, opts ComposeOptions) *profile.Profile {
	t.Helper()
	out, err := ComposeGuidance(p, blocks, ch, opts)
	if err != nil {
		t.Fatalf("ComposeGuidance: %v", err)
	}
	return out
}

func mustKB(t testing.TB, p *profile.Profile, sel Selection) *profile.Profile {
	t.Helper()
	out, err := WithProfileKB(p, sel)
	if err != nil {
		t.Fatalf("WithProfileKB: %v", err)
	}
	return out
}

func render(b Block) string {
	s, err := renderBlock(0, b)
	if err != nil {
		panic(err)
	}
	return s
}

// fixtureSource is the source of every synthetic test claim.
var fixtureSource = Source{URL: "test:fixture", CheckedAt: "2026-11-29", Authority: AuthorityLocal}

func fixtureClaim(a Audience, b Basis, text string) Claim {
	return Claim{Text: text, Basis: b, Audience: a, Sources: []Source{fixtureSource}}
}

// fixtureData is a synthetic knowledge base for tests of composition order
// and name matching. Its texts are placeholders, not guidance; it is never
// shipped and is reachable only from tests.
func fixtureData() Data {
	return Data{
		Harnesses: []Harness{
			{ID: harness.ClaudeCode, Name: "Harness A", Version: "1", Claims: []Claim{
				fixtureClaim(AudienceAgent, BasisLocalObservation, "harness-agent-1"),
				fixtureClaim(AudienceOperator, BasisLocalObservation, "harness-operator-1"),
				fixtureClaim(AudienceAgent, BasisHypothesis, "harness-hypothesis-1"),
				fixtureClaim(AudienceAgent, BasisDocumented, "harness-agent-2"),
			}},
			{ID: harness.Codex, Name: "Harness B", Version: "1", Claims: []Claim{
				fixtureClaim(AudienceOperator, BasisDocumented, "codex-operator-1"),
			}},
			{ID: harness.Gemini, Name: "Harness C", Version: "1", Claims: []Claim{
				fixtureClaim(AudienceAgent, BasisVendorGuidance, "gemini-agent-1"),
			}},
		},
		Models: []Model{
			{ID: "claude-opus-5-5", Name: "Model Five Five", Vendor: "v", Surfaces: []Surface{SurfaceAPI},
				Aliases: []string{"anthropic.claude-opus-5-5"}, Claims: []Claim{
					fixtureClaim(AudienceAgent, BasisLocalObservation, "model-agent-1"),
					fixtureClaim(AudienceOperator, BasisLocalObservation, "model-operator-1"),
					fixtureClaim(AudienceOperator, BasisHypothesis, "model-hypothesis-1"),
				}},
			{ID: "gpt-6.1-sol", Name: "Model Sol", Vendor: "v", Surfaces: []Surface{SurfaceCodex}, Aliases: []string{},
				Claims: []Claim{fixtureClaim(AudienceOperator, BasisLocalObservation, "sol-operator-1")}},
		},
		Learnings: []Learning{
			{ID: "l-harness", AppliesTo: Scope{Harness: harness.ClaudeCode}, Text: "learning-harness",
				Evidence: Evidence{Check: "c", Reproductions: 2, Source: "eval:1"}},
			{ID: "l-both", AppliesTo: Scope{Harness: harness.ClaudeCode, Model: "claude-opus-5-5"}, Text: "learning-both",
				Evidence: Evidence{Check: "c", Reproductions: 3, Source: "eval:2"}},
			{ID: "l-other-model", AppliesTo: Scope{Model: "gpt-6.1-sol"}, Text: "learning-sol",
				Evidence: Evidence{Check: "c", Reproductions: 2, Source: "eval:3"}},
		},
		Discrepancies: []Discrepancy{},
	}
}

func fixtureIndex(t testing.TB) *index {
	t.Helper()
	d := fixtureData()
	if err := d.Validate(); err != nil {
		t.Fatalf("fixture data: %v", err)
	}
	return newIndex(d)
}
