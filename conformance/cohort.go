package conformance

import (
	"strconv"
	"strings"

	"golang.org/x/mod/module"

	"github.com/agentrt/agentrt/canonjson"
)

// CohortPinsSchema is the exact schemaVersion of release/cohort.json.
const CohortPinsSchema = "agentrt/release-cohort/v1"

// CohortPins is release/cohort.json: the single source of the exact
// module versions, each with its full source commit, that the release is
// verified with (CM-06, CM-07).
type CohortPins struct {
	SchemaVersion string      `json:"schemaVersion"`
	Note          string      `json:"note,omitzero"`
	Modules       []ModulePin `json:"modules"`
}

// ModulePin pins one module version to the full commit it was built from.
type ModulePin struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	// Commit is the full 40-hex git commit of Version.
	Commit string `json:"commit"`
}

// ParseCohortPins strictly decodes and validates release/cohort.json:
// every entry has a valid module path, a canonical semantic version and a
// full 40-hex lowercase commit updated together (a pseudo-version's
// revision must be a prefix of its commit), and no path is pinned twice.
func ParseCohortPins(data []byte) (*CohortPins, error) {
	var p CohortPins
	if _, err := decodeInto("cohort pins", data, &p); err != nil {
		return nil, err
	}
	bad := func(pointer, reason string) error {
		return &ValidationError{Document: "cohort pins", Pointer: pointer, Reason: reason}
	}
	if p.SchemaVersion != CohortPinsSchema {
		return nil, bad(ptr("schemaVersion"), "want "+CohortPinsSchema)
	}
	seen := map[string]bool{}
	for i, m := range p.Modules {
		at := func(f string) string { return ptr("modules", strconv.Itoa(i), f) }
		if err := module.CheckPath(m.Path); err != nil {
			return nil, bad(at("path"), err.Error())
		}
		if seen[m.Path] {
			return nil, bad(at("path"), "pinned twice")
		}
		seen[m.Path] = true
		if err := module.Check(m.Path, m.Version); err != nil {
			return nil, bad(at("version"), err.Error())
		}
		if module.CanonicalVersion(m.Version) != m.Version {
			return nil, bad(at("version"), "version "+m.Version+" is not canonical")
		}
		if !isHex(m.Commit, 40) {
			return nil, bad(at("commit"), "must be a full 40-hex lowercase commit")
		}
		if rev, ok := pseudoRev(m.Version); ok && !strings.HasPrefix(m.Commit, rev) {
			return nil, bad(at("commit"), "pseudo-version "+m.Version+" names revision "+rev+", not this commit")
		}
	}
	return &p, nil
}

func pseudoRev(v string) (string, bool) {
	if !module.IsPseudoVersion(v) {
		return "", false
	}
	rev, err := module.PseudoVersionRev(v)
	return rev, err == nil
}

// CohortModule is one module of a cohort report.
type CohortModule struct {
	Path    string
	Version string
	Sum     string
	// Commit is the full source commit when the report recorded one.
	Commit string
}

// ParseCohortReport strictly decodes a cohort report, what an external
// consumer's module resolution produced. The report is kept verbatim in
// the manifest, so members other than those checked here are allowed; it
// must be an object with a non-empty "modules" array whose entries carry
// non-empty string "path", "version" and "sum" (and, optionally, a 40-hex
// "commit").
func ParseCohortReport(data []byte) (canonjson.Value, []CohortModule, error) {
	v, err := decodeInto("cohort report", data, nil)
	if err != nil {
		return v, nil, err
	}
	mods, err := cohortModules(v)
	return v, mods, err
}

// cohortModules checks the shape of a cohort report value.
func cohortModules(v canonjson.Value) ([]CohortModule, error) {
	bad := func(pointer, reason string) error {
		return &ValidationError{Document: "cohort report", Pointer: pointer, Reason: reason}
	}
	if v.Kind() != canonjson.Object {
		return nil, bad("", "must be an object")
	}
	list, ok := v.Get("modules")
	if !ok || list.Kind() != canonjson.Array || list.Len() == 0 {
		return nil, bad(ptr("modules"), "must be a non-empty array")
	}
	var out []CohortModule
	for i, item := range list.Items() {
		at := func(f ...string) string { return ptr(append([]string{"modules", strconv.Itoa(i)}, f...)...) }
		if item.Kind() != canonjson.Object {
			return nil, bad(at(), "must be an object")
		}
		var m CohortModule
		for _, f := range []struct {
			name     string
			dst      *string
			optional bool
		}{{"path", &m.Path, false}, {"version", &m.Version, false}, {"sum", &m.Sum, false}, {"commit", &m.Commit, true}} {
			s, ok := item.Get(f.name)
			if !ok && f.optional {
				continue
			}
			if !ok || s.Kind() != canonjson.String || s.Str() == "" {
				return nil, bad(at(f.name), "must be a non-empty string")
			}
			*f.dst = s.Str()
		}
		if m.Commit != "" && !isHex(m.Commit, 40) {
			return nil, bad(at("commit"), "must be a full 40-hex lowercase commit")
		}
		out = append(out, m)
	}
	return out, nil
}

// CheckCohort compares a cohort report with the pins (CM-08). Every pinned
// module must be in the report at exactly the pinned version; where the
// report records a commit, or the version is a pseudo-version naming a
// revision, that must be the pinned commit. It returns every mismatch as a
// *CohortMismatchError.
func CheckCohort(pins *CohortPins, report []CohortModule) []error {
	var errs []error
	byPath := map[string]CohortModule{}
	for _, m := range report {
		byPath[m.Path] = m
	}
	for _, p := range pins.Modules {
		m, ok := byPath[p.Path]
		switch {
		case !ok:
			errs = append(errs, &CohortMismatchError{Module: p.Path, Reason: "pinned but absent from the report"})
		case m.Version != p.Version:
			errs = append(errs, &CohortMismatchError{Module: p.Path, Reason: "report has version " + m.Version + ", pinned " + p.Version})
		case m.Commit != "" && m.Commit != p.Commit:
			errs = append(errs, &CohortMismatchError{Module: p.Path, Reason: "report has commit " + m.Commit + ", pinned " + p.Commit})
		}
	}
	return errs
}
