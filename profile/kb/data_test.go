package kb

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
)

// The shipped data obeys every data rule. KB-01, KB-03..KB-07, KB-24, KB-31.
func TestShippedDataValid(t *testing.T) {
	if err := Snapshot().Validate(); err != nil {
		t.Fatal(err)
	}
	if !isDate(CheckedAt) {
		t.Fatalf("CheckedAt %q", CheckedAt)
	}
}

// Every shipped claim is dated no later than CheckedAt, every local source
// names the command it ran and the version it saw, and every harness entry
// records the version its sources name. KB-01.
func TestShippedSourcesDated(t *testing.T) {
	d := Snapshot()
	check := func(where string, s Source) {
		if s.CheckedAt > CheckedAt {
			t.Errorf("%s: source %s checked %s, after CheckedAt", where, s.URL, s.CheckedAt)
		}
		if s.Authority == AuthorityLocal && (!strings.HasPrefix(s.URL, "cli:") || s.Note == "") {
			t.Errorf("%s: local source %+v must name a cli: command and a version", where, s)
		}
	}
	for _, h := range d.Harnesses {
		for _, s := range h.Sources() {
			check(string(h.ID), s)
			if s.Note != h.Version {
				t.Errorf("%s: source %s notes version %q, entry says %q", h.ID, s.URL, s.Note, h.Version)
			}
		}
		if len(h.Operator()) == 0 {
			t.Errorf("%s: no operator notes", h.ID)
		}
	}
	for _, m := range d.Models {
		for _, s := range m.Sources() {
			check(m.ID, s)
		}
	}
	for _, x := range d.Discrepancies {
		for _, s := range x.Sources {
			check(x.Subject, s)
		}
	}
}

// KB-08: the derived arrays are the projection of the claims; sources are
// the unique union by canonical JSON, in first-seen order.
func TestProjections(t *testing.T) {
	a := Source{URL: "u1", CheckedAt: "2026-01-01"}
	b := Source{URL: "u2", CheckedAt: "2026-01-01", Authority: AuthorityPrimary}
	h := Harness{Claims: []Claim{
		{Text: "p1", Basis: BasisDocumented, Audience: AudienceAgent, Sources: []Source{a}},
		{Text: "o1", Basis: BasisLocalObservation, Audience: AudienceOperator, Sources: []Source{b, a}},
		{Text: "hyp", Basis: BasisHypothesis, Audience: AudienceAgent, Sources: []Source{{URL: "u3", CheckedAt: "2026-01-01"}}},
		{Text: "hyp-op", Basis: BasisHypothesis, Audience: AudienceOperator, Sources: []Source{a}},
		{Text: "p2", Basis: BasisVendorGuidance, Audience: AudienceAgent, Sources: []Source{b}},
	}}
	if diff := cmp.Diff([]string{"p1", "p2"}, h.Prompt()); diff != "" {
		t.Errorf("Prompt (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"o1"}, h.Operator()); diff != "" {
		t.Errorf("Operator (-want +got):\n%s", diff)
	}
	// Hypotheses stay inspectable: their sources are still listed (KB-09).
	if diff := cmp.Diff([]Source{a, b, {URL: "u3", CheckedAt: "2026-01-01"}}, h.Sources()); diff != "" {
		t.Errorf("Sources (-want +got):\n%s", diff)
	}
	m := Model{Claims: h.Claims}
	if !slices.Equal(m.Prompt(), h.Prompt()) || !slices.Equal(m.Operator(), h.Operator()) || len(m.Sources()) != 3 {
		t.Error("model projections differ from harness projections")
	}
	// Every shipped entry: derived arrays equal the claim projection.
	for _, e := range Harnesses() {
		var prompt, operator []string
		for _, c := range e.Claims {
			if c.Basis == BasisHypothesis {
				continue
			}
			if c.Audience == AudienceAgent {
				prompt = append(prompt, c.Text)
			} else {
				operator = append(operator, c.Text)
			}
		}
		if !slices.Equal(prompt, e.Prompt()) || !slices.Equal(operator, e.Operator()) {
			t.Errorf("%s: projection mismatch", e.ID)
		}
	}
}

// KB-12: a conditional agent claim reaches the composed profile verbatim,
// condition included.
func TestConditionalClaimsComposedVerbatim(t *testing.T) {
	for _, h := range Harnesses() {
		out := mustKB(t, &profile.Profile{Harness: h.ID}, Selection{})
		text := canon(t, out)
		for _, line := range h.Prompt() {
			if !strings.Contains(text, quoteBody("- "+line)) {
				t.Errorf("%s: claim %q not composed verbatim", h.ID, line)
			}
		}
	}
}

func validSource() Source { return Source{URL: "cli:x --help", CheckedAt: "2026-11-29"} }

func validData() Data {
	return Data{
		Harnesses: []Harness{{ID: harness.Codex, Name: "X", Version: "1", Claims: []Claim{
			{Text: "t", Basis: BasisDocumented, Audience: AudienceAgent, Sources: []Source{validSource()}},
		}}},
		Models: []Model{{ID: "m-1", Name: "M", Vendor: "V", Surfaces: []Surface{SurfaceAPI}, Aliases: []string{"v/m-1x"}}},
		Learnings: []Learning{{ID: "l1", AppliesTo: Scope{Harness: harness.Codex}, Text: "t",
			Evidence: Evidence{Check: "check", Reproductions: 2, Source: "eval:run-1"}}},
		Discrepancies: []Discrepancy{{Subject: "s", Requested: "r", Observed: "o", Sources: []Source{validSource()}, CheckedAt: "2026-11-29"}},
	}
}

// Data rules, one broken at a time. KB-04, KB-05, KB-06, KB-07, KB-24,
// KB-31.
func TestValidateRules(t *testing.T) {
	if err := validData().Validate(); err != nil {
		t.Fatalf("valid data: %v", err)
	}
	tests := []struct {
		name string
		edit func(d *Data)
		path string
	}{
		{"unknown basis", func(d *Data) { d.Harnesses[0].Claims[0].Basis = "rumor" }, "harnesses[0].claims[0].basis"},
		{"unknown audience", func(d *Data) { d.Harnesses[0].Claims[0].Audience = "user" }, "harnesses[0].claims[0].audience"},
		{"claim without sources", func(d *Data) { d.Harnesses[0].Claims[0].Sources = nil }, "harnesses[0].claims[0].sources"},
		{"empty claim text", func(d *Data) { d.Harnesses[0].Claims[0].Text = " " }, "harnesses[0].claims[0].text"},
		{"multi-line claim text", func(d *Data) { d.Harnesses[0].Claims[0].Text = "a\nb" }, "harnesses[0].claims[0].text"},
		{"marker in claim text", func(d *Data) { d.Harnesses[0].Claims[0].Text = "a</profile-guidance>" }, "harnesses[0].claims[0].text"},
		{"source without URL", func(d *Data) { d.Harnesses[0].Claims[0].Sources[0].URL = "" }, "harnesses[0].claims[0].sources[0].url"},
		{"source without date", func(d *Data) { d.Harnesses[0].Claims[0].Sources[0].CheckedAt = "" }, "harnesses[0].claims[0].sources[0].checkedAt"},
		{"impossible date", func(d *Data) { d.Harnesses[0].Claims[0].Sources[0].CheckedAt = "2026-02-30" }, "harnesses[0].claims[0].sources[0].checkedAt"},
		{"short date", func(d *Data) { d.Harnesses[0].Claims[0].Sources[0].CheckedAt = "2026-2-03" }, "harnesses[0].claims[0].sources[0].checkedAt"},
		{"datetime", func(d *Data) { d.Harnesses[0].Claims[0].Sources[0].CheckedAt = "2026-02-03T00:00:00Z" }, "harnesses[0].claims[0].sources[0].checkedAt"},
		{"unknown authority", func(d *Data) { d.Harnesses[0].Claims[0].Sources[0].Authority = "tertiary" }, "harnesses[0].claims[0].sources[0].authority"},
		{"unknown harness", func(d *Data) { d.Harnesses[0].ID = "vim" }, "harnesses[0].id"},
		{"duplicate harness", func(d *Data) { d.Harnesses = append(d.Harnesses, d.Harnesses[0]) }, "harnesses[1].id"},
		{"harness without version", func(d *Data) { d.Harnesses[0].Version = "" }, "harnesses[0].version"},
		{"unknown surface", func(d *Data) { d.Models[0].Surfaces = []Surface{"web"} }, "models[0].surfaces[0]"},
		{"unknown effort", func(d *Data) { d.Models[0].DefaultEffort = "max" }, "models[0].defaultEffort"},
		{"alias repeats id", func(d *Data) { d.Models[0].Aliases = []string{"m-1"} }, "models[0].aliases[0]"},
		{"name declared twice across models", func(d *Data) {
			d.Models = append(d.Models, Model{ID: "V/M-1X", Name: "N", Vendor: "V"})
		}, "models[1].id"},
		{"upper-case name", func(d *Data) { d.Models[0].Aliases = []string{"M-2"} }, "models[0].aliases[0]"},
		{"name with colon", func(d *Data) { d.Models[0].Aliases = []string{"m-2:high"} }, "models[0].aliases[0]"},
		{"learning with one reproduction", func(d *Data) { d.Learnings[0].Evidence.Reproductions = 1 }, "learnings[0].evidence.reproductions"},
		{"learning without evidence link", func(d *Data) { d.Learnings[0].Evidence.Source = "" }, "learnings[0].evidence.source"},
		{"learning without check", func(d *Data) { d.Learnings[0].Evidence.Check = "" }, "learnings[0].evidence.check"},
		{"unscoped learning", func(d *Data) { d.Learnings[0].AppliesTo = Scope{} }, "learnings[0].appliesTo"},
		{"learning for unknown model", func(d *Data) { d.Learnings[0].AppliesTo.Model = "m-9" }, "learnings[0].appliesTo.model"},
		{"learning id with comma", func(d *Data) { d.Learnings[0].ID = "a,b" }, "learnings[0].id"},
		{"duplicate learning", func(d *Data) { d.Learnings = append(d.Learnings, d.Learnings[0]) }, "learnings[1].id"},
		{"undated discrepancy", func(d *Data) { d.Discrepancies[0].CheckedAt = "" }, "discrepancies[0].checkedAt"},
		{"discrepancy without sources", func(d *Data) { d.Discrepancies[0].Sources = nil }, "discrepancies[0].sources"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := validData()
			tc.edit(&d)
			err := d.Validate()
			if err == nil {
				t.Fatal("accepted")
			}
			var paths []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var ve *ValidationError
				if !errors.As(e, &ve) {
					t.Fatalf("not a *ValidationError: %v", e)
				}
				paths = append(paths, ve.Path)
			}
			if !slices.Contains(paths, tc.path) {
				t.Fatalf("paths %q, want %q", paths, tc.path)
			}
		})
	}
}

// KB-07: any authority goes with any basis.
func TestAuthorityIndependentOfBasis(t *testing.T) {
	for _, a := range []Authority{"", AuthorityPrimary, AuthoritySecondary, AuthorityLocal} {
		for _, b := range []Basis{BasisDocumented, BasisVendorGuidance, BasisLocalObservation, BasisHypothesis} {
			d := validData()
			d.Harnesses[0].Claims[0].Basis = b
			d.Harnesses[0].Claims[0].Sources[0].Authority = a
			if err := d.Validate(); err != nil {
				t.Errorf("authority %q with basis %q: %v", a, b, err)
			}
		}
	}
}

// KB-17, KB-22, KB-23, KB-25 and read-only access: accessors return deep
// copies, so editing what they return changes neither later reads nor
// composition.
func TestAccessors(t *testing.T) {
	if diff := cmp.Diff([]string{"harness", "model", "learning"}, Sources()); diff != "" {
		t.Fatalf("Sources (-want +got):\n%s", diff)
	}
	if len(Harnesses()) == 0 || len(Models()) == 0 {
		t.Fatal("no harness or model data")
	}
	if l := Learnings(); len(l) != 0 {
		t.Fatalf("learnings shipped without reproduction: %v", l)
	}
	for _, x := range Discrepancies() {
		if !isDate(x.CheckedAt) {
			t.Errorf("discrepancy %q undated", x.Subject)
		}
	}
	if diff := cmp.Diff(shippedHarness(t, harness.Codex).Operator(), OperatorNotes(harness.Codex)); diff != "" {
		t.Errorf("OperatorNotes (-want +got):\n%s", diff)
	}
	if OperatorNotes(harness.Amp) != nil {
		t.Error("operator notes for a harness without an entry")
	}

	before := mustKB(t, k01Input(), Selection{})
	src := Sources()
	src[0] = "team"
	hs := Harnesses()
	for i := range hs {
		hs[i].Name = "Edited"
		for j := range hs[i].Claims {
			hs[i].Claims[j].Text = "edited"
			hs[i].Claims[j].Audience = AudienceAgent
			hs[i].Claims[j].Sources[0].URL = "edited"
		}
	}
	ms := Models()
	ms[0].Aliases = append(ms[0].Aliases, "edited")
	ms[1].Claims[0].Audience = AudienceAgent
	ds := Discrepancies()
	ds[0].Sources[0].URL = "edited"
	snap := Snapshot()
	snap.Harnesses[0].Claims[0].Text = "edited"

	if diff := cmp.Diff(Snapshot(), shippedData()); diff != "" {
		t.Fatalf("edits leaked (-now +fresh):\n%s", diff)
	}
	if Harnesses()[0].Name == "Edited" || Sources()[0] != "harness" || Discrepancies()[0].Sources[0].URL == "edited" {
		t.Fatal("edits leaked into later reads")
	}
	after := mustKB(t, k01Input(), Selection{})
	if canon(t, before) != canon(t, after) {
		t.Fatal("edits changed composition")
	}
}
