package kb

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/harness"
)

// Authority describes a source, independently of the basis of any claim
// that cites it (KB-07).
type Authority string

// The source authorities.
const (
	// AuthorityPrimary is the vendor's or project's own publication.
	AuthorityPrimary Authority = "primary"
	// AuthoritySecondary is a third party's account.
	AuthoritySecondary Authority = "secondary"
	// AuthorityLocal is something agentrt checked itself, such as the help
	// output of an installed CLI.
	AuthorityLocal Authority = "local"
)

// Valid reports whether a is one of the three authorities.
func (a Authority) Valid() bool {
	return a == AuthorityPrimary || a == AuthoritySecondary || a == AuthorityLocal
}

// Basis says how a claim is supported (KB-04).
type Basis string

// The claim bases.
const (
	// BasisDocumented is stated by the subject's own documentation.
	BasisDocumented Basis = "documented"
	// BasisVendorGuidance is advice a vendor gives for its own product,
	// read within its documented, dated scope.
	BasisVendorGuidance Basis = "vendor-guidance"
	// BasisLocalObservation is something agentrt observed itself.
	BasisLocalObservation Basis = "local-observation"
	// BasisHypothesis is a proposal still to be evaluated. A hypothesis
	// stays inspectable but never contributes prompt or operator text.
	BasisHypothesis Basis = "hypothesis"
)

// Valid reports whether b is one of the four bases.
func (b Basis) Valid() bool {
	switch b {
	case BasisDocumented, BasisVendorGuidance, BasisLocalObservation, BasisHypothesis:
		return true
	}
	return false
}

// Audience says who a claim is written for (KB-05).
type Audience string

// The claim audiences.
const (
	// AudienceAgent claims may be composed into an agent's prompt.
	AudienceAgent Audience = "agent"
	// AudienceOperator claims are notes for whoever launches the harness;
	// they never enter a profile.
	AudienceOperator Audience = "operator"
)

// Valid reports whether a is agent or operator.
func (a Audience) Valid() bool { return a == AudienceAgent || a == AudienceOperator }

// Surface is where a model is offered.
type Surface string

// The model surfaces.
const (
	SurfaceAPI     Surface = "api"
	SurfaceCodex   Surface = "codex"
	SurfaceChatGPT Surface = "chatgpt"
	SurfaceRouter  Surface = "router"
)

// Valid reports whether s is one of the four surfaces.
func (s Surface) Valid() bool {
	switch s {
	case SurfaceAPI, SurfaceCodex, SurfaceChatGPT, SurfaceRouter:
		return true
	}
	return false
}

// Source is one dated reference a claim rests on (KB-06). Sources guide
// investigation; they do not prove that a technique improves this
// platform's behavior (KB-02).
type Source struct {
	// URL locates the source. Local checks use a "cli:" pseudo-URL naming
	// the command that was run, e.g. "cli:codex exec --help".
	URL string `json:"url"`
	// CheckedAt is the day the source was read, "YYYY-MM-DD".
	CheckedAt string `json:"checkedAt"`
	// Note is optional context, such as the version that was checked.
	Note string `json:"note,omitzero"`
	// Authority optionally classifies the source.
	Authority Authority `json:"authority,omitzero"`
	// Locator optionally points at the supporting section or artifact.
	Locator string `json:"locator,omitzero"`
}

// Claim is one statement about a harness or model, with its support
// (KB-03). Applicability conditions belong in Text, so composition keeps
// them (KB-12).
type Claim struct {
	Text     string   `json:"text"`
	Basis    Basis    `json:"basis"`
	Audience Audience `json:"audience"`
	// Sources holds at least one source.
	Sources []Source `json:"sources"`
}

// Harness is the knowledge-base entry for one harness CLI.
type Harness struct {
	ID harness.Type `json:"id"`
	// Name is the display name used in the guidance header.
	Name string `json:"name"`
	// Version is the CLI version the claims were checked against.
	Version string  `json:"version"`
	Claims  []Claim `json:"claims"`
}

// Sources returns the unique union of the claims' sources (KB-08).
func (h Harness) Sources() []Source { return claimSources(h.Claims) }

// Prompt returns the agent-audience, non-hypothesis claim texts in claim
// order: the only text that may enter a profile (KB-08, KB-09, KB-10).
func (h Harness) Prompt() []string { return claimTexts(h.Claims, AudienceAgent) }

// Operator returns the operator-audience, non-hypothesis claim texts in
// claim order (KB-08, KB-09).
func (h Harness) Operator() []string { return claimTexts(h.Claims, AudienceOperator) }

// Model is the knowledge-base entry for one model.
type Model struct {
	// ID is the canonical model id, matched case-insensitively.
	ID string `json:"id"`
	// Name is the display name used in the guidance header.
	Name   string `json:"name"`
	Vendor string `json:"vendor"`
	// Surfaces lists where the cited sources show the model offered. It may
	// be empty when no source says.
	Surfaces []Surface `json:"surfaces"`
	// Aliases are further names matched case-insensitively, like ID.
	Aliases []string `json:"aliases"`
	// DefaultEffort is the default reasoning effort a cited source names,
	// if any.
	DefaultEffort harness.ReasoningEffort `json:"defaultEffort,omitzero"`
	Claims        []Claim                 `json:"claims"`
}

// Sources returns the unique union of the claims' sources (KB-08).
func (m Model) Sources() []Source { return claimSources(m.Claims) }

// Prompt returns the agent-audience, non-hypothesis claim texts in claim
// order (KB-08, KB-09, KB-10).
func (m Model) Prompt() []string { return claimTexts(m.Claims, AudienceAgent) }

// Operator returns the operator-audience, non-hypothesis claim texts in
// claim order (KB-08, KB-09).
func (m Model) Operator() []string { return claimTexts(m.Claims, AudienceOperator) }

// Scope selects where a learning applies. At least one field is set. The
// selector matches only harness and model; it validates no other condition
// of the evaluation that produced the learning (KB-34).
type Scope struct {
	Harness harness.Type `json:"harness,omitzero"`
	// Model is a model entry's ID.
	Model string `json:"model,omitzero"`
}

// Evidence links a learning to the evaluation that reproduced it (KB-24,
// KB-31).
type Evidence struct {
	// Check names the agent-eval check that reproduced the learning.
	Check string `json:"check"`
	// Reproductions counts independent reproductions; at least 2.
	Reproductions int `json:"reproductions"`
	// Source links the evaluation record that keeps the run's full scope
	// (requested and served model, harness and CLI version, profile
	// revisions, task, environment, outcome and traces).
	Source string `json:"source"`
}

// Learning is a platform learning: guidance admitted only after an
// agent-eval check reproduced it (KB-24). Learning records are the single
// admission surface for measured guidance (KB-35); narrower applicability
// limits than harness and model stay explicit in Text (KB-36).
type Learning struct {
	ID        string   `json:"id"`
	AppliesTo Scope    `json:"appliesTo"`
	Text      string   `json:"text"`
	Evidence  Evidence `json:"evidence"`
}

// Discrepancy preserves a dated naming or availability check whose
// observation differed from what was requested or assumed (KB-25).
type Discrepancy struct {
	Subject   string   `json:"subject"`
	Requested string   `json:"requested"`
	Observed  string   `json:"observed"`
	Sources   []Source `json:"sources"`
	CheckedAt string   `json:"checkedAt"`
}

// claimSources is the unique union of the claims' sources in first-seen
// order, deduplicated by each source's canonical JSON.
func claimSources(claims []Claim) []Source {
	var out []Source
	seen := map[string]bool{}
	for _, c := range claims {
		for _, s := range c.Sources {
			k := sourceKey(s)
			if !seen[k] {
				seen[k] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// sourceKey is the canonical JSON text of s.
func sourceKey(s Source) string {
	v, err := canonjson.ToValue(s)
	if err == nil {
		if b, err := canonjson.Canonical(v); err == nil {
			return string(b)
		}
	}
	// Only a string that is not well-formed can fail; compare the fields
	// themselves then.
	return "\x00" + s.URL + "\x00" + s.CheckedAt + "\x00" + s.Note + "\x00" + string(s.Authority) + "\x00" + s.Locator
}

func claimTexts(claims []Claim, audience Audience) []string {
	var out []string
	for _, c := range claims {
		if c.Audience == audience && c.Basis != BasisHypothesis {
			out = append(out, c.Text)
		}
	}
	return out
}
