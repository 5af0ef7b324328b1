package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentrt/agentrt/canonjson"
)

// VerifyOptions are the optional inputs of [Verify]; each one given adds
// its check.
type VerifyOptions struct {
	// Archive, when non-nil, must hash to package.sha256 and hold
	// package.name@package.version.
	Archive []byte
	// CohortReport, when non-nil, must equal the manifest's cohort in
	// canonical JSON.
	CohortReport []byte
	// SourceRoot, when set, is where every evidence file's current bytes
	// must hash to the recorded sha256.
	SourceRoot string
	// Require lists capabilities that must be supported.
	Require []string
}

// Report is the outcome of [Verify].
type Report struct {
	// Digest is the manifest's recorded digest.
	Digest string
	// Counts is how many capabilities have each status.
	Counts map[Status]int
	// Problems lists every failed check; empty means verified.
	Problems []Problem
}

// OK reports whether verification found no problem.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Verify recomputes every check of §8 on a manifest and reports every
// problem. It trusts nothing recorded: digests are recomputed from the
// document as given, statuses from the recorded cases, and the optional
// archive, cohort report and evidence files from their bytes. It reads no
// source other than what VerifyOptions names.
func Verify(manifest []byte, o VerifyOptions) *Report {
	r := &Report{Counts: map[Status]int{}}
	add := func(check, pointer, format string, args ...any) {
		r.Problems = append(r.Problems, Problem{Check: check, Pointer: pointer, Message: fmt.Sprintf(format, args...)})
	}
	m, raw, err := ParseManifest(manifest)
	if err != nil {
		add("schema", "", "%v", err)
		return r
	}
	r.Digest = m.Digest
	r.Counts = m.Counts()

	// 1. schema version.
	if m.SchemaVersion != ManifestSchema {
		add("schema", ptr("schemaVersion"), "is %q, want %q", m.SchemaVersion, ManifestSchema)
	}
	// Shape assertions (the emitter's, re-checked).
	p := m.Package
	if p.Name == "" || p.Version == "" {
		add("schema", ptr("package"), "name and version must be non-empty strings")
	}
	if !isHex(p.SHA256, 64) {
		add("schema", ptr("package", "sha256"), "must be 64 lowercase hex digits")
	}
	if !isHex(p.SourceCommit, 40) {
		add("schema", ptr("package", "sourceCommit"), "must be a full 40-hex commit")
	}
	if !isHex(p.BuildIdentity.CapabilityMap, 64) {
		add("schema", ptr("package", "buildIdentity", "capabilityMap"), "must be 64 lowercase hex digits")
	}
	if _, err := cohortModules(m.Cohort); err != nil {
		add("schema", ptr("cohort"), "%v", err)
	}

	// 2. body digest.
	if got, err := ContentHash(raw.Without("digest")); err != nil {
		add("digest", ptr("digest"), "cannot hash the body: %v", err)
	} else if got != m.Digest {
		add("digest", ptr("digest"), "recorded %s, body hashes to %s", m.Digest, got)
	}

	// 3. per capability.
	capsRaw, _ := raw.Get("capabilities")
	keys := make([]string, 0, len(m.Capabilities))
	for k := range m.Capabilities {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := m.Capabilities[k]
		at := func(more ...string) string { return ptr(append([]string{"capabilities", k}, more...)...) }
		entry, _ := capsRaw.Get(k)
		evRaw, _ := entry.Get("evidence")
		if got, err := ContentHash(evRaw); err != nil {
			add("capability", at("evidence"), "cannot hash the evidence: %v", err)
		} else if got != c.ResultDigest {
			add("capability", at("resultDigest"), "recorded %s, evidence hashes to %s", c.ResultDigest, got)
		}
		if !validStatus(c.Status) {
			add("capability", at("status"), "%q is not supported, unsupported or unproven", c.Status)
		}
		cases := caseStatuses(c.Evidence)
		for i, e := range c.Evidence {
			if !isHex(e.SHA256, 64) {
				add("capability", at("evidence", fmt.Sprint(i), "sha256"), "must be 64 lowercase hex digits")
			}
			for j, cs := range e.Cases {
				if !validCaseStatus(cs.Status) {
					add("capability", at("evidence", fmt.Sprint(i), "cases", fmt.Sprint(j), "status"), "%q is not a case status", cs.Status)
				}
			}
		}
		want := Resolve(cases)
		switch {
		case c.Status == Supported && want != Supported:
			add("capability", at("status"), "supported without every case passing (its cases resolve to %s)", want)
		case c.Status != Unproven && len(cases) == 0:
			add("capability", at("status"), "%s with no cases", c.Status)
		case validStatus(c.Status) && c.Status != want:
			add("capability", at("status"), "recorded %s, its cases resolve to %s", c.Status, want)
		}
	}

	// 4. archive.
	if o.Archive != nil {
		if got := BytesHash(o.Archive); got != p.SHA256 {
			add("archive", ptr("package", "sha256"), "recorded %s, archive hashes to %s", p.SHA256, got)
		}
		if name, version, err := ArchiveIdentity(o.Archive); err != nil {
			add("archive", ptr("package"), "%v", err)
		} else if name != p.Name || version != p.Version {
			add("archive", ptr("package"), "archive holds %s@%s, manifest names %s@%s", name, version, p.Name, p.Version)
		}
	}

	// 5. cohort report.
	if o.CohortReport != nil {
		report, err := canonjson.Decode(o.CohortReport)
		if err != nil {
			add("cohort", ptr("cohort"), "cohort report: %v", err)
		} else if a, b := canon(report), canon(m.Cohort); a == nil || !bytes.Equal(a, b) {
			add("cohort", ptr("cohort"), "the cohort report differs from the recorded cohort")
		}
	}

	// 6. evidence files.
	if o.SourceRoot != "" {
		for _, k := range keys {
			for i, e := range m.Capabilities[k].Evidence {
				at := ptr("capabilities", k, "evidence", fmt.Sprint(i), "sha256")
				if msg := checkEvidenceFile(e.File); msg != "" {
					add("source", at, "evidence file %q: %s", e.File, msg)
					continue
				}
				b, err := os.ReadFile(filepath.Join(o.SourceRoot, filepath.FromSlash(e.File)))
				if err != nil {
					add("source", at, "evidence file %s unreadable: %v", e.File, err)
				} else if got := BytesHash(b); got != e.SHA256 {
					add("source", at, "evidence file %s: recorded %s, its bytes hash to %s", e.File, e.SHA256, got)
				}
			}
		}
	}

	// 7. required capabilities.
	for _, k := range o.Require {
		c, ok := m.Capabilities[k]
		switch {
		case !ok:
			add("require", ptr("capabilities", k), "required capability %s is absent", k)
		case c.Status != Supported:
			add("require", ptr("capabilities", k, "status"), "required capability %s is %s", k, c.Status)
		}
	}
	return r
}

// canon returns the canonical JSON of v, or nil when it has none.
func canon(v canonjson.Value) []byte {
	b, err := canonjson.Canonical(v)
	if err != nil {
		return nil
	}
	return b
}
