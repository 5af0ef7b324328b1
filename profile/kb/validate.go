package kb

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentrt/agentrt/canonjson"
)

// Data is a complete knowledge-base snapshot. [Snapshot] returns a copy of
// the shipped one.
type Data struct {
	Harnesses     []Harness     `json:"harnesses"`
	Models        []Model       `json:"models"`
	Learnings     []Learning    `json:"learnings"`
	Discrepancies []Discrepancy `json:"discrepancies"`
}

// ValidationError is one broken data rule. Path locates the value, e.g.
// "models[2].claims[0].sources[0].checkedAt".
type ValidationError struct {
	Path    string
	Message string
}

// Error implements error.
func (e *ValidationError) Error() string { return "profile/kb: " + e.Path + ": " + e.Message }

// Validate checks every data rule and reports all violations, joined
// (each a *ValidationError), or nil:
//
//   - dates are well-formed calendar dates "YYYY-MM-DD";
//   - every claim has text, a known basis and audience, and ≥1 source;
//   - every source has a URL and a check date, and a known authority when
//     one is given (any authority goes with any basis, KB-07);
//   - harness ids are harnesses of the contract and appear once; models
//     have known surfaces and a ladder effort; no model name is declared
//     twice across ids and aliases, case-insensitively;
//   - a learning has an id, a scope naming a known harness or model entry,
//     text, a check, ≥2 reproductions and a link to its evaluation record
//     (KB-24, KB-31);
//   - a discrepancy has a subject, both sides, ≥1 source and a date.
//
// Text that is composed into a profile (claim and learning texts, names
// and ids) must be a single line without the guidance closing marker, so
// composition cannot fail on shipped data.
func (d Data) Validate() error {
	v := &validator{}
	harnessIDs := map[string]bool{}
	for i, h := range d.Harnesses {
		p := fmt.Sprintf("harnesses[%d]", i)
		if !h.ID.Valid() {
			v.add(p+".id", "%q is not a harness of the contract", h.ID)
		} else if harnessIDs[string(h.ID)] {
			v.add(p+".id", "harness %q is declared twice", h.ID)
		}
		harnessIDs[string(h.ID)] = true
		v.line(p+".name", h.Name)
		v.nonEmpty(p+".version", h.Version)
		v.claims(p, h.Claims)
	}
	names := map[string]string{}
	modelIDs := map[string]bool{}
	for i, m := range d.Models {
		p := fmt.Sprintf("models[%d]", i)
		for j, name := range append([]string{m.ID}, m.Aliases...) {
			np := p + ".id"
			if j > 0 {
				np = fmt.Sprintf("%s.aliases[%d]", p, j-1)
			}
			v.modelName(np, name)
			key := jsLower(name)
			if prev, dup := names[key]; dup {
				v.add(np, "model name %q is declared twice (first at %s)", name, prev)
			} else {
				names[key] = np
			}
		}
		modelIDs[m.ID] = true
		v.line(p+".name", m.Name)
		v.nonEmpty(p+".vendor", m.Vendor)
		for j, s := range m.Surfaces {
			if !s.Valid() {
				v.add(fmt.Sprintf("%s.surfaces[%d]", p, j), "%q is not api, codex, chatgpt or router", s)
			}
		}
		if m.DefaultEffort != "" && !m.DefaultEffort.Valid() {
			v.add(p+".defaultEffort", "%q is not a reasoning effort", m.DefaultEffort)
		}
		v.claims(p, m.Claims)
	}
	learningIDs := map[string]bool{}
	for i, l := range d.Learnings {
		p := fmt.Sprintf("learnings[%d]", i)
		v.line(p+".id", l.ID)
		if strings.ContainsAny(l.ID, ",\"") {
			v.add(p+".id", "must not contain a comma or a quote (ids are joined with commas into a marker attribute)")
		}
		if learningIDs[l.ID] {
			v.add(p+".id", "learning %q is declared twice", l.ID)
		}
		learningIDs[l.ID] = true
		if l.AppliesTo.Harness == "" && l.AppliesTo.Model == "" {
			v.add(p+".appliesTo", "names neither a harness nor a model, so it would never be selected")
		}
		if l.AppliesTo.Harness != "" && !harnessIDs[string(l.AppliesTo.Harness)] {
			v.add(p+".appliesTo.harness", "%q is not a harness entry", l.AppliesTo.Harness)
		}
		if l.AppliesTo.Model != "" && !modelIDs[l.AppliesTo.Model] {
			v.add(p+".appliesTo.model", "%q is not a model entry id", l.AppliesTo.Model)
		}
		v.line(p+".text", l.Text)
		v.nonEmpty(p+".evidence.check", l.Evidence.Check)
		if l.Evidence.Reproductions < 2 {
			v.add(p+".evidence.reproductions", "a learning needs at least 2 reproductions, has %d", l.Evidence.Reproductions)
		}
		if src := l.Evidence.Source; canonjson.TrimJS(src) == "" || canonjson.ContainsJSWhitespace(src) {
			v.add(p+".evidence.source", "must link the evaluation record")
		}
	}
	for i, x := range d.Discrepancies {
		p := fmt.Sprintf("discrepancies[%d]", i)
		v.nonEmpty(p+".subject", x.Subject)
		v.nonEmpty(p+".requested", x.Requested)
		v.nonEmpty(p+".observed", x.Observed)
		v.date(p+".checkedAt", x.CheckedAt)
		v.sources(p, x.Sources)
	}
	return errors.Join(v.errs...)
}

type validator struct{ errs []error }

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, &ValidationError{Path: path, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) nonEmpty(path, s string) bool {
	if canonjson.TrimJS(s) == "" {
		v.add(path, "must not be empty")
		return false
	}
	return true
}

// line checks text that is composed into a guidance block.
func (v *validator) line(path, s string) {
	if !v.nonEmpty(path, s) {
		return
	}
	if strings.ContainsAny(s, "\r\n") {
		v.add(path, "must be a single line")
	}
	if strings.Contains(s, guidanceCloser) || strings.Contains(s, guidanceOpener) {
		v.add(path, "must not contain a profile-guidance marker")
	}
}

// modelName checks a name the model lookup can reach: trimmed, lower-case
// ASCII without ':' (the lookup cuts there) or whitespace.
func (v *validator) modelName(path, s string) {
	if s == "" {
		v.add(path, "must not be empty")
		return
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7F || c == ':' || c == '"' || ('A' <= c && c <= 'Z') {
			v.add(path, "%q must be lower-case printable ASCII without spaces, quotes or ':'", s)
			return
		}
	}
}

func (v *validator) date(path, s string) {
	if !isDate(s) {
		v.add(path, "%q is not a date YYYY-MM-DD", s)
	}
}

func (v *validator) claims(path string, claims []Claim) {
	for i, c := range claims {
		p := fmt.Sprintf("%s.claims[%d]", path, i)
		v.line(p+".text", c.Text)
		if !c.Basis.Valid() {
			v.add(p+".basis", "%q is not documented, vendor-guidance, local-observation or hypothesis", c.Basis)
		}
		if !c.Audience.Valid() {
			v.add(p+".audience", "%q is not agent or operator", c.Audience)
		}
		v.sources(p, c.Sources)
	}
}

func (v *validator) sources(path string, sources []Source) {
	if len(sources) == 0 {
		v.add(path+".sources", "needs at least one source")
	}
	for i, s := range sources {
		p := fmt.Sprintf("%s.sources[%d]", path, i)
		v.nonEmpty(p+".url", s.URL)
		v.date(p+".checkedAt", s.CheckedAt)
		if s.Authority != "" && !s.Authority.Valid() {
			v.add(p+".authority", "%q is not primary, secondary or local", s.Authority)
		}
	}
}

// isDate reports whether s is a real calendar date written YYYY-MM-DD.
func isDate(s string) bool {
	if len(s) != 10 {
		return false
	}
	t, err := time.Parse(time.DateOnly, s)
	return err == nil && t.Format(time.DateOnly) == s
}
